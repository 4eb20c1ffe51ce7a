"""``limbo audit``, ``proxy`` and ``guard`` on a ``--url`` that refuses them: one line naming
the URL, the HTTP status and what would fix it (never the token), exit 2, no traceback.

The endpoints are a stub on loopback that answers every request with one status; the same
refusal from Limbo's own token-protected server is checked end to end in ``test_audit``."""

from __future__ import annotations

import subprocess

import pytest
from realkit import http_refusing, limbo, nothing_listening

pytest.importorskip("mcp")

TOKEN = "s3cret-token-for-the-test"


def _one_line(done: subprocess.CompletedProcess[str]) -> str:
    """The error line of a command that failed as a usage or connection error must."""
    assert done.returncode == 2, (done.returncode, done.stderr)
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr, done.stderr
    return done.stderr


def test_a_url_that_wants_a_token_says_so_and_how_to_give_it() -> None:
    with http_refusing(401) as url:
        line = _one_line(limbo("audit", "--url", url))
    assert line.startswith(f"limbo audit: cannot audit {url}: answered HTTP 401 Unauthorized")
    assert "--header 'Authorization: Bearer …'" in line


def test_a_refused_token_is_named_but_never_printed() -> None:
    with http_refusing(401) as url:
        line = _one_line(limbo("audit", "--url", url, "--header",
                               f"authorization: Bearer {TOKEN}"))
    assert url in line and "401" in line and "refused the Authorization header" in line
    assert TOKEN not in line


def test_a_wrong_path_names_404() -> None:
    with http_refusing(401) as url:
        wrong = url.removesuffix("/mcp") + "/not-mcp"
        line = _one_line(limbo("audit", "--url", wrong))
    assert f"{wrong}: answered HTTP 404 Not Found: no MCP endpoint at that path" in line


@pytest.mark.parametrize("status, advice", [
    (403, "if it wants a token, pass it with --header"),
    (500, "Internal Server Error"),
])
def test_other_statuses_are_named(status: int, advice: str) -> None:
    with http_refusing(status) as url:
        line = _one_line(limbo("audit", "--url", url))
    assert f"{url}: answered HTTP {status} " in line and advice in line


def test_a_refused_connection_names_the_url() -> None:
    with nothing_listening() as url:
        line = _one_line(limbo("audit", "--url", url))
    assert f"cannot audit {url}: could not connect (ConnectError" in line
    assert "check the host and port" in line


@pytest.mark.parametrize("command", [["proxy", "--inject", "timeout_post"], ["guard"]],
                         ids=["proxy", "guard"])
def test_proxy_and_guard_say_the_same_of_their_upstream(command: list[str], tmp_path) -> None:
    extra = ["--log", str(tmp_path / "proxy.jsonl")] if command[0] == "proxy" else []
    with http_refusing(401) as url:
        line = _one_line(limbo(*command, *extra, "--url", url))
    assert f"limbo {command[0]}: cannot {command[0]} {url}: answered HTTP 401" in line
    assert "--header 'Authorization: Bearer …'" in line
