"""Third-party MCP servers the real-server tools are tested and shown on, pinned and cached.

Nobody here wrote them, which is the point: ``limbo audit``, ``limbo proxy`` and ``limbo guard``
are checked on servers as they ship. Each is installed like the harness CLIs
(:mod:`~limbo_plugin.agents.harness_install`): into ``<cache>/mcp-servers/<name>/<version>/``
(an npm prefix, or a virtual environment for a Python server, whose ``mcp`` pin is older than
Limbo's), marked complete only when the installer succeeded, a no-op when already there.

    python -m limbo_plugin.realmcp.servers install     # what .ci/run does
"""

from __future__ import annotations

import shutil
import sys
from dataclasses import dataclass
from pathlib import Path

from limbo_plugin.agents.harness_install import cache_root, run_install_step
from limbo_plugin.errors import LimboError

MARKER = ".limbo-installed"


@dataclass(frozen=True)
class RealServer:
    name: str
    packages: tuple[str, ...]
    executable: str
    npm: bool
    version: str

    @property
    def directory(self) -> Path:
        return cache_root().parent / "mcp-servers" / self.name / self.version

    def installed(self) -> Path | None:
        if not (self.directory / MARKER).is_file():
            return None
        sub = ("node_modules", ".bin") if self.npm else ("bin",)
        path = self.directory.joinpath(*sub, self.executable)
        return path if path.exists() else None


SERVERS = {s.name: s for s in (
    RealServer("memory", ("@modelcontextprotocol/server-memory@2026.8.31",),
               "mcp-server-memory", npm=True, version="2026.8.31"),
    RealServer("filesystem", ("@modelcontextprotocol/server-filesystem@2026.8.31",),
               "mcp-server-filesystem", npm=True, version="2026.8.31"),
    # 2025.4.25 is written against mcp 1.x (its Server has list_resources()); mcp 2 breaks it.
    RealServer("sqlite", ("mcp-server-sqlite==2025.4.25", "mcp==1.30.0"),
               "mcp-server-sqlite", npm=False, version="2025.4.25"),
    # The official conformance suite (server checks) and what its reference server needs: the
    # suite wants Node >= 22 (an npm-packaged one, put first on PATH from node_modules/.bin),
    # the server is TypeScript run by tsx on the TypeScript SDK.
    RealServer("conformance", ("@modelcontextprotocol/conformance@0.1.16", "node@22.23.3",
                               "tsx@4.20.6", "@modelcontextprotocol/sdk@1.32.2",
                               "express@5.3.0", "zod@4.6.7", "cors@2.8.5"),
               "conformance", npm=True, version="0.1.16"),
)}


class InstallError(LimboError):
    """A pinned server could not be installed (one line)."""


def install(server: RealServer) -> Path:
    done = server.installed()
    if done is not None:
        return done
    root = server.directory
    if root.exists():
        shutil.rmtree(root)  # an interrupted install: start over
    root.mkdir(parents=True)
    if server.npm:
        npm = shutil.which("npm")
        if npm is None:
            raise InstallError(f"cannot install {server.name}: npm is not on PATH")
        _run([npm, "install", "--no-audit", "--no-fund", "--loglevel=error", "--prefix",
              str(root), *server.packages], server)
    else:
        _run([sys.executable, "-m", "venv", str(root)], server)
        _run([str(root / "bin" / "python"), "-m", "pip", "install", "--quiet",
              *server.packages], server)
    (root / MARKER).write_text(" ".join(server.packages) + "\n")
    path = server.installed()
    if path is None:
        raise InstallError(f"installed {server.name} but found no {server.executable!r}")
    return path


def _run(argv: list[str], server: RealServer) -> None:
    run_install_step(argv, server.name, InstallError)


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if args[:1] != ["install"]:
        print("usage: python -m limbo_plugin.realmcp.servers install [NAME…]", file=sys.stderr)
        return 2
    failed = 0
    for name in args[1:] or list(SERVERS):
        server = SERVERS.get(name)
        if server is None:
            print(f"unknown server {name!r}; known: {', '.join(SERVERS)}", file=sys.stderr)
            failed += 1
            continue
        try:
            print(f"{name} {server.version}: {install(server)}", flush=True)
        except InstallError as exc:
            print(str(exc), file=sys.stderr)
            failed += 1
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
