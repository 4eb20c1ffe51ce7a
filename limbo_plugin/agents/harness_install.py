"""Finding harness adapters, and installing the pinned harness CLIs into a cache.

Each built-in adapter pins its CLI (``install:`` in its YAML). ``limbo harness install`` puts it
in ``<cache>/<name>/<version>/`` — an npm prefix for Codex and Copilot, a virtual environment for
Hermes, whose ``mcp`` pin clashes with Limbo's — and marks the directory complete only when the
installer succeeded, so an interrupted install is redone rather than used. The cache is
``$LIMBO_HARNESS_CACHE``, else ``~/.cache/limbo/harnesses``; installing what is already there is
a no-op, which is what lets CI call it before every run.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

from limbo_plugin.agents.harness_spec import (
    PLACEHOLDERS,
    HarnessSpec,
    load_harness,
    render,
    render_command,
)
from limbo_plugin.errors import LimboError, UsageError
from limbo_plugin.server.wire import SERVER_NAME

try:  # POSIX; elsewhere concurrent installs are not guarded
    import fcntl
except ImportError:  # pragma: no cover - platform dependent
    fcntl = None  # type: ignore[assignment]

CACHE_ENV = "LIMBO_HARNESS_CACHE"
MARKER = ".limbo-installed"
BUILT_IN = ("codex", "copilot", "hermes")


def cache_root() -> Path:
    configured = os.environ.get(CACHE_ENV)
    return Path(configured).expanduser() if configured else \
        Path.home() / ".cache" / "limbo" / "harnesses"


# -- finding adapters ------------------------------------------------------------------------------
def harness_dirs() -> list[Path]:
    """Where adapters are looked up by name: the project's ``specs/harnesses`` first, then the
    specs Limbo ships."""
    from limbo_plugin.spec.registry import default_specs_dir, packaged_specs_dir

    shipped = packaged_specs_dir() / "harnesses"
    dirs = [Path.cwd() / "specs" / "harnesses", default_specs_dir() / "harnesses", shipped]
    unique: list[Path] = []
    for directory in dirs:
        if directory.resolve() not in [d.resolve() for d in unique]:
            unique.append(directory)
    return unique


def available_harnesses() -> list[str]:
    names = {p.stem for d in harness_dirs() if d.is_dir() for p in d.glob("*.yaml")}
    return sorted(names)


def harness_path(name_or_path: str) -> Path:
    """The adapter file for a name (``codex``) or a path (``./my-agent.yaml``)."""
    if name_or_path.endswith((".yaml", ".yml")) or os.sep in name_or_path:
        path = Path(name_or_path).expanduser()
        if path.is_dir():
            raise UsageError(f"harness file {name_or_path} is a directory; give the adapter's "
                             "YAML file")
        if not path.is_file():
            raise UsageError(f"harness file {name_or_path} does not exist")
        return path
    for directory in harness_dirs():
        path = directory / f"{name_or_path}.yaml"
        if path.is_file():
            return path
    raise UsageError(f"unknown harness {name_or_path!r}; known: "
                     f"{', '.join(available_harnesses()) or 'none'} (or give a path to a YAML "
                     "file)")


def find_harness(name_or_path: str) -> HarnessSpec:
    return load_harness(harness_path(name_or_path))


# -- installing ------------------------------------------------------------------------------------
def install_dir(spec: HarnessSpec) -> Path:
    """``<cache>/<name>/<version>``, and a digest of the requirements file when there is one
    (so an edited file is a new install, not a stale one)."""
    assert spec.install is not None
    requirements = requirements_file(spec)
    if requirements is None:
        return cache_root() / spec.name / spec.install.version
    digest = hashlib.sha256(requirements.read_bytes()).hexdigest()[:12]
    return cache_root() / spec.name / f"{spec.install.version}-{digest}"


def requirements_file(spec: HarnessSpec) -> Path | None:
    """The adapter's pip requirements file (``install.requirements``), if it has one."""
    if spec.install is None or spec.install.requirements is None:
        return None
    return Path(spec.file).resolve().parent / spec.install.requirements


def installed_executable(spec: HarnessSpec) -> Path | None:
    """The pinned CLI in the cache, if a completed install is there."""
    if spec.install is None:
        return None
    root = install_dir(spec)
    if not (root / MARKER).is_file():
        return None
    sub = ("node_modules", ".bin") if spec.install.npm else ("bin",)
    executable = root.joinpath(*sub, spec.install.executable)
    return executable if executable.exists() else None


def resolve_executable(spec: HarnessSpec) -> str:
    """The CLI to run: the pinned install, else the same program on ``PATH``."""
    pinned = installed_executable(spec)
    if pinned is not None:
        return str(pinned)
    program = spec.install.executable if spec.install else spec.command[0]
    if "{spec_dir}" in program and spec.file:  # known before any episode: fill it, then look
        program = program.replace("{spec_dir}", str(Path(spec.file).resolve().parent))
    if "{" not in program:
        found = shutil.which(program)
        if found:
            return found
    if spec.install is not None:
        raise UsageError(f"harness {spec.name} is not installed: run `limbo harness install "
                         f"{spec.name}` (installs {spec.install.package} into {cache_root()})")
    raise UsageError(f"harness {spec.name}: program {program!r} is not on PATH")


def install(spec: HarnessSpec, log: Callable[[str], None] = print) -> Path:
    """Install the pinned CLI unless a completed install is already cached; return it."""
    if spec.install is None:
        raise UsageError(f"harness {spec.name} declares no install step")
    with _install_lock(spec):  # two CI jobs sharing the cache install one at a time
        return _install(spec, log)


@contextlib.contextmanager
def _install_lock(spec: HarnessSpec) -> Iterator[None]:
    lock_dir = cache_root() / spec.name
    lock_dir.mkdir(parents=True, exist_ok=True)
    with open(lock_dir / ".install.lock", "a+b") as handle:
        if fcntl is not None:
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
        yield


def _install(spec: HarnessSpec, log: Callable[[str], None]) -> Path:
    assert spec.install is not None
    done = installed_executable(spec)
    if done is not None:
        log(f"{spec.name} {spec.install.version}: already installed ({done})")
        return done
    root = install_dir(spec)
    if root.exists():
        shutil.rmtree(root)  # an interrupted install: start over
    root.mkdir(parents=True)
    log(f"{spec.name}: installing {spec.install.package} into {root} …")
    if spec.install.npm is not None:
        npm = shutil.which("npm")
        if npm is None:
            raise LimboError(f"cannot install {spec.name}: npm is not on PATH (Node.js is needed)")
        _run([npm, "install", "--no-audit", "--no-fund", "--loglevel=error", "--prefix",
              str(root), spec.install.package], spec)
    else:
        python = spec.install.python or sys.executable
        _run([python, "-m", "venv", str(root)], spec)
        requirements = requirements_file(spec)
        extra = ["-r", str(requirements)] if requirements is not None else []
        _run([str(root / "bin" / "python"), "-m", "pip", "install", "--quiet",
              spec.install.package, *extra], spec)
    (root / MARKER).write_text(spec.install.package + "\n")
    executable = installed_executable(spec)
    if executable is None:
        raise LimboError(f"installed {spec.install.package} but found no "
                         f"{spec.install.executable!r} executable under {root}")
    version = version_of(spec, str(executable))  # also the first run, which fills {cache}
    if version is None and spec.version_command:
        raise LimboError(f"installed {spec.install.package}, but `{spec.install.executable} "
                         f"{' '.join(spec.version_command[1:])}` does not run")
    log(f"{spec.name}: installed {executable} ({version or 'no version command'})")
    return executable


def run_install_step(argv: list[str], name: str,
                     error: type[LimboError] = LimboError) -> None:
    """Run one step of installing `name` (npm, venv, pip); a failure is one line with the
    step and the last lines it printed. Shared by the harness CLIs and the real MCP servers."""
    result = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, text=True)
    if result.returncode != 0:
        tail = (result.stderr or result.stdout).strip().splitlines()[-3:]
        raise error(f"cannot install {name}: `{' '.join(argv[:4])} …` exited with "
                    f"{result.returncode}: {' / '.join(tail)}")


def _run(argv: list[str], spec: HarnessSpec) -> None:
    run_install_step(argv, spec.name)


PASSED_ENV = ("PATH", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "USER", "LOGNAME", "TMPDIR",
              "SSL_CERT_FILE", "SSL_CERT_DIR", "REQUESTS_CA_BUNDLE", "NODE_EXTRA_CA_CERTS",
              "HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "http_proxy", "https_proxy", "no_proxy")
"""Taken from Limbo's environment; everything else a CLI sees is set by the runner or by its
adapter (so no credentials of the machine's user leak into a harness)."""


def shared_cache(spec: HarnessSpec) -> Path:
    """``{cache}``: the one directory a harness's episodes share (e.g. Copilot unpacks its
    ~235 MB runtime there on first use)."""
    path = cache_root() / spec.name / "shared"
    if spec.uses("cache"):
        path.mkdir(parents=True, exist_ok=True)
    return path


def harness_environment(spec: HarnessSpec, values: Mapping[str, Any]) -> dict[str, str]:
    """The CLI's whole environment: the passed-through variables, ``HOME``, then the adapter's
    own (rendered with ``values``)."""
    env = {name: os.environ[name] for name in (*PASSED_ENV, *spec.passenv)
           if name in os.environ}
    env["HOME"] = str(values["home"])
    env.update({k: str(render(v, values)) for k, v in spec.env.items()})
    return env


_VERSIONS: dict[tuple[str, str], str | None] = {}


def version_of(spec: HarnessSpec, executable: str) -> str | None:
    """The CLI's own version line, run as an episode would run it (throwaway home, the shared
    cache): so it also warms that cache. Once per process per CLI."""
    key = (spec.name, executable)
    if key not in _VERSIONS:
        _VERSIONS[key] = _version(spec, executable)
    return _VERSIONS[key]


def _version(spec: HarnessSpec, executable: str) -> str | None:
    if not spec.version_command:
        return None
    with tempfile.TemporaryDirectory(prefix=f"limbo-{spec.name}-version-") as home:
        values = {name: "" for name in PLACEHOLDERS}
        values.update(executable=executable, home=home, workdir=home,
                      cache=str(shared_cache(spec)), server=SERVER_NAME)
        argv = render_command(spec.version_command, values)
        env = {**harness_environment(spec, values), "NO_COLOR": "1"}
        try:
            result = subprocess.run(argv, cwd=home, env=env, stdin=subprocess.DEVNULL,
                                    capture_output=True, text=True, timeout=300)
        except (OSError, subprocess.TimeoutExpired):
            return None
    lines = (result.stdout or result.stderr).strip().splitlines()
    return lines[0].strip() if lines else None
