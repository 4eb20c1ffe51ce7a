"""The official MCP conformance suite's server checks (``@modelcontextprotocol/conformance``
0.1.16) against its reference server: directly, through ``limbo proxy`` with no fault injected,
and through ``limbo guard``. Whatever the reference passes directly must pass through either:
resources, prompts, completion, logging, progress, sampling and elicitation are relayed, and the
upstream's capabilities declared."""

from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from realkit import HANG_S, real_server

REFERENCE = Path(__file__).parent / "conformance" / "everything-server.ts"
CHECK = re.compile(r"^[✓✗] (?P<scenario>\S+): (?P<passed>\d+) passed, (?P<failed>\d+) failed",
                   re.MULTILINE)


def _node_path(bin_dir: Path) -> dict[str, str]:
    """The environment with the cache's Node 22 first on PATH (the machine's may be older)."""
    return {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}"}


def _announced(process: subprocess.Popen[str], pattern: str) -> str:
    """The first match of ``pattern`` in the lines ``process`` writes: it listens by then."""
    assert process.stdout is not None
    for line in process.stdout:
        found = re.search(pattern, line)
        if found:
            return found.group(1)
    raise AssertionError(f"exited with {process.wait()} before announcing its address")


@contextmanager
def _running(argv: list[str], env: dict[str, str], pattern: str, cwd: Path | None = None
             ) -> Iterator[str]:
    process = subprocess.Popen(argv, env=env, cwd=cwd, stdin=subprocess.DEVNULL,
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        yield _announced(process, pattern)
    finally:
        process.terminate()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.fixture(scope="module")
def suite(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, str]]:
    """The suite's executable and the URL of its reference server, running for the module."""
    conformance = Path(real_server("conformance"))
    bin_dir = conformance.parent
    home = tmp_path_factory.mktemp("reference")
    shutil.copy(REFERENCE, home / REFERENCE.name)  # resolves its imports in the cache's modules
    (home / "node_modules").symlink_to(bin_dir.parent)
    env = {**_node_path(bin_dir), "PORT": str(_free_port())}
    with _running([str(bin_dir / "tsx"), REFERENCE.name], env, r"(http://localhost:\d+)",
                  cwd=home) as base:
        yield conformance, f"{base}/mcp"


def _checks(conformance: Path, url: str, out: Path) -> dict[str, tuple[int, int]]:
    done = subprocess.run([str(conformance), "server", "--url", url, "-o", str(out)],
                          env=_node_path(conformance.parent), capture_output=True, text=True,
                          timeout=HANG_S, stdin=subprocess.DEVNULL)
    found = {m["scenario"]: (int(m["passed"]), int(m["failed"]))
             for m in CHECK.finditer(done.stdout)}
    assert found, done.stdout + done.stderr
    return found


def _passed(found: dict[str, tuple[int, int]]) -> set[str]:
    return {scenario for scenario, (_, failed) in found.items() if failed == 0}


@contextmanager
def _limbo_in_front(command: list[str], url: str) -> Iterator[str]:
    argv = [sys.executable, "-m", "limbo_plugin.cli", *command, "--transport",
            "streamable-http", "--no-token", "--port", "0", "--url", url]
    with _running(argv, dict(os.environ), r"serving streamable HTTP at (\S+)") as front:
        yield front


@pytest.mark.slow
def test_proxy_and_guard_pass_every_check_the_reference_passes(suite, tmp_path) -> None:
    conformance, url = suite
    direct = _checks(conformance, url, tmp_path / "direct")
    assert len(_passed(direct)) >= 30  # the reference passes (nearly) everything
    through = {}
    for name, command in (("proxy", ["proxy", "--inject", "timeout_post", "--rate", "0",
                                     "--log", str(tmp_path / "proxy.jsonl")]),
                          ("guard", ["guard"])):
        with _limbo_in_front(command, url) as front:
            through[name] = _checks(conformance, front, tmp_path / name)
    for name, found in through.items():
        lost = sorted(_passed(direct) - _passed(found))
        assert not lost, f"{name} fails checks the reference passes: {lost}"
        assert sum(p for p, _ in found.values()) == sum(p for p, _ in direct.values())
