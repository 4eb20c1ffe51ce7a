"""One ``limbo mcp`` start-up per worker instead of one per episode: an MCP fork server.

Starting ``limbo mcp`` costs about half a second, almost all of it importing the MCP SDK, and
``mcp:<policy>`` starts one per episode. The fork server pays that import once per process that
runs episodes: it is a child process that imports the SDK, listens on a Unix socket in a private
temporary directory, and forks a fresh copy of itself for each episode. A client starts the tiny
:mod:`~limbo_plugin.server.mcp_attach` command instead of ``limbo mcp``; that command hands its
stdin, stdout and stderr to the fork server, and the forked child serves the episode's MCP
session on them with the episode's own URL and bearer token — the same server code
(:func:`~limbo_plugin.server.mcp_server.serve_stdio`) over the same real stdio pipes, so nothing
the agent sees changes.

Each episode still gets its own process, and so its own MCP session and token: a child ends
when its client closes stdin, like ``limbo mcp``, and nothing of one episode survives into the
next. The socket's directory is readable by this user only; the token travels over the socket,
never on a command line.
"""

from __future__ import annotations

import argparse
import atexit
import contextlib
import os
import selectors
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import IO, Any

from limbo_plugin.server.client import SandboxClient
from limbo_plugin.server.launch import PACKAGE_ROOT, McpLaunch
from limbo_plugin.server.mcp_attach import SOCKET_ENV
from limbo_plugin.server.wire import TOKEN_ENV, URL_ENV

ATTACH_SCRIPT = str(Path(__file__).with_name("mcp_attach.py"))
READY = "limbo mcp fork server: ready"
START_TIMEOUT_S = 120.0
"""How long the fork server may take to import the SDK: generous, a loaded machine is slow."""
MAX_REQUEST_BYTES = 64 * 1024
STOP_GRACE_S = 5.0


class McpForkServer:
    """The fork server process of this worker and the launch of an episode through it."""

    def __init__(self, *, start_timeout_s: float = START_TIMEOUT_S) -> None:
        self.directory = Path(tempfile.mkdtemp(prefix="limbo-mcp-"))  # mode 0700
        self.socket_path = str(self.directory / "fork.sock")
        inherited = os.environ.get("PYTHONPATH")
        python_path = PACKAGE_ROOT if not inherited else f"{PACKAGE_ROOT}{os.pathsep}{inherited}"
        self._stderr: IO[str] = tempfile.TemporaryFile("w+")  # noqa: SIM115 (closed in close)
        self.process = subprocess.Popen(
            [sys.executable, "-m", "limbo_plugin.server.mcp_fork", "--socket", self.socket_path],
            env={**os.environ, "PYTHONPATH": python_path}, stdin=subprocess.PIPE,
            stdout=subprocess.PIPE, stderr=self._stderr, text=True, start_new_session=True)
        self._wait_ready(start_timeout_s)

    def _wait_ready(self, timeout_s: float) -> None:
        stdout = self.process.stdout
        assert stdout is not None
        lines: list[str] = []
        reader = threading.Thread(target=lambda: lines.append(stdout.readline()), daemon=True)
        reader.start()
        reader.join(timeout_s)
        if not lines or lines[0].strip() != READY:
            self.close()
            self._stderr.seek(0)
            tail = " ".join(self._stderr.read().strip().splitlines()[-3:])
            raise RuntimeError(f"the MCP fork server did not start: {tail or 'no output'}")

    @property
    def alive(self) -> bool:
        return self.process.poll() is None

    def launch(self, url: str, token: str) -> McpLaunch:
        """The command that serves the episode at ``url`` with bearer ``token`` over stdio."""
        return McpLaunch(command=sys.executable, args=("-S", "-E", ATTACH_SCRIPT),
                         env={SOCKET_ENV: self.socket_path, URL_ENV: url, TOKEN_ENV: token})

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        for stream in (self.process.stdin, self.process.stdout):
            if stream is not None:
                stream.close()
        self._stderr.close()
        shutil.rmtree(self.directory, ignore_errors=True)


_SHARED: McpForkServer | None = None
_SHARED_LOCK = threading.Lock()


def shared_fork_server() -> McpForkServer:
    """This process's fork server (one per pytest worker), started on first use and again if
    it died."""
    global _SHARED
    with _SHARED_LOCK:
        if _SHARED is None or not _SHARED.alive:
            if _SHARED is not None:
                _SHARED.close()
            else:
                atexit.register(_close_shared)
            _SHARED = McpForkServer()
        return _SHARED


def _close_shared() -> None:
    if _SHARED is not None:
        _SHARED.close()


# -- the fork server process ----------------------------------------------------------------------
def serve(socket_path: str) -> None:
    """Import what an episode's server needs, then fork one child per connection."""
    # Imported here, once, for every child: the SDK, the server it builds and the event loop
    # backend that anyio would otherwise load on each child's first run.
    import anyio._backends._asyncio
    import anyio.to_thread  # noqa: F401
    import mcp_types  # noqa: F401
    from mcp.server.lowlevel import Server  # noqa: F401
    from mcp.server.stdio import stdio_server  # noqa: F401

    import limbo_plugin.server.deep_lines  # noqa: F401

    _warm_up()
    signal.signal(signal.SIGCHLD, _reap)
    signal.signal(signal.SIGTERM, _stop)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(socket_path)
    os.chmod(socket_path, 0o600)
    listener.listen(64)
    # The worker holds the other end of stdin and never writes: end of file means it is gone
    # (even killed), and so is every reason to go on.
    waiting = selectors.DefaultSelector()
    waiting.register(listener, selectors.EVENT_READ)
    waiting.register(sys.stdin.fileno(), selectors.EVENT_READ)
    print(READY, flush=True)
    while True:
        ready = {key.fd for key, _ in waiting.select()}
        if sys.stdin.fileno() in ready:
            _stop(0, None)
        if listener.fileno() not in ready:
            continue
        connection, _ = listener.accept()
        try:
            request, fds = _receive(connection)
        except (OSError, ValueError):
            connection.close()
            continue
        if os.fork() == 0:  # the child: serve this episode, then end
            waiting.close()
            listener.close()
            signal.signal(signal.SIGCHLD, signal.SIG_DFL)
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
            status = _serve_episode(request, fds, SandboxClient)
            with contextlib.suppress(OSError):
                connection.sendall(bytes([status]))
            os._exit(status)
        connection.close()
        for fd in fds:
            os.close(fd)


class _StandInSandbox(SandboxClient):
    """A sandbox client that answers without a network: what the warm-up session talks to."""

    def __init__(self) -> None:
        super().__init__("http://127.0.0.1:9", "warm-up")  # never connected

    def list_tools(self) -> list[dict[str, Any]]:
        return [{"name": "wait", "description": "warm-up", "inputSchema": {"type": "object"},
                 "annotations": {"readOnlyHint": True}}]

    def call(self, name: str, arguments: Any) -> tuple[str, bool]:
        return "{}", False



def _warm_up() -> None:
    """One in-memory MCP session (initialize, list, call) against a stand-in sandbox, before the
    first fork: the SDK builds its validators on first use, and a child that inherits them
    built does not build them again for every episode. The session's worker threads are
    joined, so the fork server is single-threaded when it forks."""
    import anyio
    from mcp import Client

    from limbo_plugin.server.mcp_server import build_server

    async def session() -> None:
        async with Client(build_server(_StandInSandbox())) as client:
            await client.list_tools()
            await client.call_tool("wait", {})

    anyio.run(session)
    for thread in threading.enumerate():
        if thread is not threading.main_thread():
            thread.join(timeout=STOP_GRACE_S)


def _reap(signum: int = 0, frame: Any = None) -> None:
    """Wait for every child that has ended (so none lingers as a zombie, and their CPU time
    counts toward this process's, as ``limbo mcp``'s counts toward its client's)."""
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def _stop(signum: int, frame: Any) -> None:
    """SIGTERM (the worker is done): no new episodes; wait a little for the ones still ending
    (a child ends when its client closes stdin), then exit."""
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    deadline = time.monotonic() + STOP_GRACE_S
    while time.monotonic() < deadline:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            break
        if pid == 0:
            time.sleep(0.01)
    os._exit(0)


def _receive(connection: socket.socket) -> tuple[dict[str, str], list[int]]:
    """The launcher's request (:func:`~limbo_plugin.server.mcp_attach.request_text`) and the
    three descriptors it passed; ``ValueError`` for anything else (its descriptors closed)."""
    data, fds, _, _ = socket.recv_fds(connection, MAX_REQUEST_BYTES, 3)
    try:
        chunks = [data]
        while chunk := connection.recv(MAX_REQUEST_BYTES):
            chunks.append(chunk)
            if sum(map(len, chunks)) > MAX_REQUEST_BYTES:
                raise ValueError("request too large")
        if len(fds) != 3:
            raise ValueError("expected stdin, stdout and stderr")
        lines = b"".join(chunks).decode().split("\n")
        if len(lines) != 2 or not all(lines):
            raise ValueError("expected the URL and the token, one line each")
    except (ValueError, OSError):
        for fd in fds:
            os.close(fd)
        raise
    return {"url": lines[0], "token": lines[1]}, fds


def _serve_episode(request: dict[str, str], fds: list[int], client_type: type) -> int:
    """In the forked child: become ``limbo mcp`` on the client's stdin, stdout and stderr."""
    import anyio

    from limbo_plugin.server.client import SandboxError
    from limbo_plugin.server.mcp_server import serve_stdio

    for target, fd in enumerate(fds):
        os.dup2(fd, target)
        os.close(fd)
    try:
        client = client_type(request["url"], request["token"])
    except SandboxError as exc:
        print(f"limbo mcp: {exc}", file=sys.stderr, flush=True)
        return 2
    try:
        anyio.run(serve_stdio, client)
    except BaseException as exc:  # the child must end, and say why
        print(f"limbo mcp: {type(exc).__name__}: {exc}", file=sys.stderr, flush=True)
        return 1
    finally:
        client.close()
        sys.stdout.flush()
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m limbo_plugin.server.mcp_fork",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--socket", required=True, help="the Unix socket to listen on")
    args = parser.parse_args(argv)
    with contextlib.suppress(KeyboardInterrupt):
        serve(args.socket)
    return 0


if __name__ == "__main__":
    sys.exit(main())
