"""``limbo guard`` and ``limbo proxy`` over streamable HTTP: the shared serve loop binds loopback,
announces its URL once it listens, and serves the upstream's tools to a client that connects the
moment it reads that line; with ``--bearer-env`` only to a client that sends that token."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from realkit import REGISTRY, catalogue_server

from limbo_plugin.server.launch import serving_http

pytest.importorskip("mcp")


def _listed_over_http(argv: list[str], env: dict[str, str], token: str | None = None
                      ) -> tuple[str, list[str]]:
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client

    with serving_http(argv, env, label=f"limbo {argv[3]}") as url:

        async def main() -> Any:
            headers = {"Authorization": f"Bearer {token}"} if token else None
            transport = streamable_http_client(url, http_client=create_mcp_http_client(headers))
            async with Client(transport, read_timeout_seconds=120) as client:
                return [t.name for t in (await client.list_tools()).tools]

        return url, anyio.run(main)


@pytest.mark.parametrize("command", [["guard"], ["proxy", "--inject", "timeout_post"]])
def test_guard_and_proxy_serve_the_upstreams_tools_on_loopback(command: list[str],
                                                              tmp_path: Path) -> None:
    extra = ["--log", str(tmp_path / "proxy.jsonl")] if command[0] == "proxy" else []
    with catalogue_server("native") as (server, env):
        url, names = _listed_over_http(
            [sys.executable, "-m", "limbo_plugin.cli", *command, *extra,
             "--transport", "streamable-http", "--no-token", "--", *server], env)
    assert url.startswith("http://127.0.0.1:") and url.endswith("/mcp")
    assert sorted(names) == sorted(REGISTRY.catalog("native").tools)


def test_bearer_env_makes_the_guard_refuse_a_client_without_the_token() -> None:
    from mcp.shared.exceptions import MCPError

    with catalogue_server("native") as (server, env):
        argv = [sys.executable, "-m", "limbo_plugin.cli", "guard", "--bearer-env", "GUARD_TOKEN",
                "--transport", "streamable-http", "--", *server]
        env = {**env, "GUARD_TOKEN": "t0ken-for-the-guard"}
        _, names = _listed_over_http(argv, env, token="t0ken-for-the-guard")
        assert sorted(names) == sorted(REGISTRY.catalog("native").tools)
        for guess in ("a-guess", None):
            with pytest.raises(BaseException) as refused:
                _listed_over_http(argv, env, token=guess)
            assert isinstance(_innermost(refused.value), MCPError), refused.value


def _innermost(exc: BaseException) -> BaseException:
    while isinstance(exc, BaseExceptionGroup):
        exc = exc.exceptions[0]
    return exc


def test_bearer_env_naming_an_unset_variable_is_one_line() -> None:
    done = subprocess.run([sys.executable, "-m", "limbo_plugin.cli", "guard", "--bearer-env",
                           "LIMBO_NO_SUCH_VARIABLE", "--transport", "streamable-http", "--",
                           sys.executable, "-c", "pass"],
                          capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
    assert done.returncode == 2
    assert done.stderr.strip() == ("limbo guard: --bearer-env LIMBO_NO_SUCH_VARIABLE: that "
                                   "environment variable is not set or empty; set it to the "
                                   "token clients must send")


@pytest.mark.parametrize("command", [["guard"], ["proxy", "--inject", "timeout_post"]])
def test_over_http_a_token_is_required_unless_refused_on_loopback(command: list[str]) -> None:
    """Without --bearer-env any local process could call the upstream's tools: one line saying
    what to give; --no-token is for loopback only."""
    base = [sys.executable, "-m", "limbo_plugin.cli", *command, "--transport",
            "streamable-http"]
    server = ["--", sys.executable, "-c", "pass"]
    done = subprocess.run([*base, *server], capture_output=True, text=True, timeout=120,
                          stdin=subprocess.DEVNULL)
    assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
    assert "needs --bearer-env NAME" in done.stderr and "--no-token" in done.stderr
    done = subprocess.run([*base, "--no-token", "--host", "0.0.0.0", "--allow-remote",
                           *server], capture_output=True, text=True, timeout=120,
                          stdin=subprocess.DEVNULL)
    assert done.returncode == 2 and "loopback addresses only" in done.stderr, done.stderr
