"""``limbo audit``, ``proxy``, ``guard`` and ``realmcp.drive`` on a ``--url`` that refuses
them: one line naming the URL, the HTTP status and what would fix it (never the token), exit 2,
no traceback, whether the handshake is refused or a request after it.

The endpoints are stubs on loopback: one answers every request with one status, the other
speaks enough MCP to connect and refuses chosen methods; the same refusal from Limbo's own
token-protected server is checked end to end in ``test_audit``."""

from __future__ import annotations

import subprocess
import sys
from typing import TYPE_CHECKING

import pytest
from realkit import drive_cli, http_refusing, limbo, mcp_stub, nothing_listening

from limbo_plugin.realmcp.upstream import HttpAnswers

if TYPE_CHECKING:
    import httpx2

pytest.importorskip("mcp")

TOKEN = "s3cret-token-for-the-test"
BEARER = f"Authorization: Bearer {TOKEN}"


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


# -- a refusal after the handshake ----------------------------------------------------------------
@pytest.mark.parametrize("command", [["audit"], ["proxy", "--inject", "timeout_post"], ["guard"]],
                         ids=["audit", "proxy", "guard"])
def test_a_listing_refused_after_the_handshake_names_its_status(command: list[str],
                                                                tmp_path) -> None:
    extra = ["--log", str(tmp_path / "proxy.jsonl")] if command[0] == "proxy" else []
    with mcp_stub(refuse={"tools/list": 401}) as url:
        line = _one_line(limbo(*command, *extra, "--url", url))
    assert line.startswith(f"limbo {command[0]}: cannot {command[0]} {url}: cannot list its "
                           f"tools: answered HTTP 401 Unauthorized: it wants a token"), line
    assert "--header 'Authorization: Bearer …'" in line


def test_a_token_refused_mid_session_is_named_but_never_printed() -> None:
    with mcp_stub(refuse={"tools/list": 403}, token=TOKEN) as url:
        line = _one_line(limbo("audit", "--url", url, "--header", BEARER))
    assert f"{url}: cannot list its tools: answered HTTP 403 Forbidden: the token given" in line
    assert TOKEN not in line


def test_an_earlier_refusal_is_not_blamed_for_a_later_failure() -> None:
    # the SDK's probe for a newer protocol is refused and it falls back to the handshake,
    # which succeeds; the listing then fails for a reason of its own
    with mcp_stub(refuse={"server/discover": 401},
                  errors={"tools/list": "tool registry offline"}) as url:
        line = _one_line(limbo("audit", "--url", url))
    assert line == (f"limbo audit: cannot audit {url}: cannot list its tools: "
                    f"MCPError: tool registry offline\n")


def test_a_status_is_read_only_from_the_requests_since_the_mark() -> None:
    import anyio

    answers = HttpAnswers()
    assert answers.first_since(0) is None
    for status in (401, 404):
        anyio.run(answers.record, _response("POST", status))
    anyio.run(answers.record, _response("GET", 405))  # the optional event stream
    mark = answers.refused
    assert (answers.first_since(0), answers.first_since(1), answers.first_since(mark)) == (
        401, 404, None)
    anyio.run(answers.record, _response("POST", 403))
    assert answers.first_since(mark) == 403


def _response(method: str, status: int) -> httpx2.Response:
    """A response as the SDK's HTTP client hands it to the hook."""
    import httpx2

    return httpx2.Response(status, request=httpx2.Request(method, "http://127.0.0.1/mcp"))


# -- realmcp.drive -------------------------------------------------------------------------------
def test_drive_passes_a_header_to_a_url() -> None:
    with mcp_stub(token=TOKEN) as url:
        done = drive_cli("--policy", "blind_retry", "--call", "echo", '{"text": "hi"}',
                         "--url", url, "--header", BEARER)
    assert done.returncode == 0, done.stderr
    assert 'echo {"text": "hi"} -> {"text":"hi"}' in done.stdout


def test_drive_without_the_token_says_how_to_give_it() -> None:
    with mcp_stub(token=TOKEN) as url:
        line = _one_line(drive_cli("--policy", "blind_retry", "--call", "echo", "{}",
                                   "--url", url))
    assert line.startswith(f"drive: cannot drive {url}: answered HTTP 401 Unauthorized"), line
    assert "--header 'Authorization: Bearer …'" in line


def test_drive_names_a_call_refused_mid_session() -> None:
    with mcp_stub(token=TOKEN, refuse={"tools/call": 401}) as url:
        line = _one_line(drive_cli("--policy", "blind_retry", "--call", "echo", "{}",
                                   "--url", url, "--header", BEARER))
    assert line.startswith(f"drive: cannot drive {url}: calling echo: answered HTTP 401 "
                           f"Unauthorized: it refused the Authorization header given"), line
    assert TOKEN not in line


@pytest.mark.parametrize(("call", "problem"), [
    ("notjson", "--call number 1 (echo): its arguments are not JSON (Expecting value"),
    ("[1]", "--call number 1 (echo): its arguments must be a JSON object, not list"),
])
def test_drive_names_a_call_whose_arguments_are_no_object(call: str, problem: str) -> None:
    line = _one_line(drive_cli("--policy", "no_retry", "--call", "echo", call, "--url",
                               "http://127.0.0.1:9/mcp"))
    assert line.startswith(f"drive: {problem}"), line


def test_a_drive_usage_error_is_one_line() -> None:
    line = _one_line(drive_cli("--policy", "nope", "--call", "echo", "{}"))
    assert "argument --policy: invalid choice: 'nope'" in line and "--help" in line


@pytest.mark.parametrize("run", [limbo, drive_cli], ids=["audit", "drive"])
def test_a_malformed_header_is_not_printed(run) -> None:
    args = ["--policy", "blind_retry", "--call", "echo", "{}"] if run is drive_cli else ["audit"]
    line = _one_line(run(*args, "--url", "http://127.0.0.1:9/mcp", "--header",
                         f"Bearer {TOKEN}"))
    assert "--header number 1 is not 'Name: value'" in line and TOKEN not in line


def test_the_callers_own_error_is_not_blamed_on_the_server(tmp_path) -> None:
    """A guard config naming a tool the server does not list is the config's fault: its line
    names the file, not ``cannot guard URL: ConfigError``."""
    config = tmp_path / "guard.yaml"
    config.write_text("tools:\n  - tool: nope\n    writes: true\n")
    with mcp_stub() as url:
        line = _one_line(limbo("guard", "--url", url, "--config", str(config)))
    assert line.startswith(f"limbo guard: {config}: names tools the server does not list: "
                           "nope"), line
    assert "cannot guard" not in line


def test_a_call_the_guard_forwards_names_the_status_it_was_refused_with() -> None:
    """``limbo guard`` answers a forwarded call the server refused with a tool error; that
    error names the HTTP status, as a refused listing does (the guard sends one call at a
    time, so the status is that call's). The agent behind the guard is not told the server's
    address."""
    with mcp_stub(token=TOKEN, refuse={"tools/call": 401}) as url:
        done = drive_cli("--policy", "no_retry", "--call", "echo", "{}", "--",
                         sys.executable, "-m", "limbo_plugin.cli", "guard", "--url", url,
                         "--header", BEARER)
    assert done.returncode == 0, done.stderr
    assert ("the call could not be forwarded: calling echo: answered HTTP 401 Unauthorized: "
            "it refused the Authorization header given") in done.stdout, done.stdout
    assert TOKEN not in done.stdout + done.stderr
    assert url not in done.stdout  # the agent is not told where the server is
