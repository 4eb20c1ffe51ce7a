"""Under pytest-xdist, a worker that stops giving signs of life is ended and replaced.

An episode's own time limit (:mod:`limbo_plugin.agents.deadline`) ends an agent that will not
stop, from a watchdog thread inside the worker. A worker that is not running at all — stopped
(``SIGSTOP``, a debugger, a frozen container) or wedged in native code that holds the
interpreter — runs no watchdog either, and pytest-xdist would wait for it forever.

So each worker keeps a heartbeat file beside the records (``.<records>.workers/<id>.json``:
its pid, its controller's pid, the episode it is running), rewritten every
:data:`HEARTBEAT_S` by a thread of its own. The controller looks at them from a thread of its
own: a worker whose file is older than :func:`silence_limit_s` — longer than any episode may
run, time limit and grace included, or a minute, whichever is less, plus a margin for a loaded
machine — is ended with ``SIGKILL``. pytest-xdist then reports its episode as crashed and
starts a replacement, the run goes on, and one line says which worker and which episode.
Finished episodes are in the records already; the lost one has no record and is run again by
``--limbo-resume``.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from limbo_plugin.agents.deadline import DEFAULT_EPISODE_TIMEOUT_S, grace_s

HEARTBEAT_S = 1.0
"""How often a worker says it is alive."""
MARGIN_S = 15.0
"""Room for a heartbeat delayed by a loaded machine."""
LONGEST_SILENCE_S = 60.0
"""However long episodes may run: a live worker's heartbeat thread is never this late (it needs
the interpreter only for a moment, and an episode's code gives it up every few milliseconds)."""


def silence_limit_s(episode_timeout_s: float | None) -> float:
    """How long a worker may stay silent before it is taken for stopped."""
    limit = episode_timeout_s or DEFAULT_EPISODE_TIMEOUT_S
    return min(LONGEST_SILENCE_S, limit + grace_s(limit)) + MARGIN_S


def heartbeat_dir(records: str | Path) -> Path:
    records = Path(records)
    return records.with_name(f".{records.name}.workers")


def watch_workers(config: pytest.Config, records: str | Path,
                  episode_timeout_s: float | None) -> None:
    """Register the heartbeat in a worker, the watch in an xdist controller; else nothing."""
    workerinput = getattr(config, "workerinput", None)
    if workerinput is not None:
        config.pluginmanager.register(
            Heartbeat(heartbeat_dir(records), str(workerinput["workerid"])),
            "limbo-heartbeat")
    elif getattr(config.option, "dist", "no") != "no":
        config.pluginmanager.register(
            WorkerWatch(config, heartbeat_dir(records), silence_limit_s(episode_timeout_s)),
            "limbo-worker-watch")


class Heartbeat:
    """Worker side: the heartbeat file, rewritten in place by a daemon thread every
    :data:`HEARTBEAT_S`, and when an episode starts (a few microseconds: one ``pwrite``)."""

    def __init__(self, directory: Path, worker: str) -> None:
        self.path = directory / f"{worker}.json"
        self.worker = worker
        self._lock = threading.Lock()
        self._fd: int | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._beat, name="limbo-heartbeat", daemon=True)
        self._thread.start()

    def pytest_runtest_logstart(self, nodeid: str) -> None:
        self._episode, self._data = nodeid, None
        self.beat()

    def pytest_runtest_logfinish(self, nodeid: str) -> None:
        self._episode, self._data = None, None  # said by the next beat

    def pytest_unconfigure(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)
        with self._lock, contextlib.suppress(OSError):
            if self._fd is not None:
                os.close(self._fd)
                self._fd = None
            self.path.unlink()

    def _beat(self) -> None:
        while not self._stop.is_set():
            self.beat()
            self._stop.wait(HEARTBEAT_S)

    def beat(self) -> None:
        """Rewrite the file: its time is the heartbeat, its content the episode running."""
        with self._lock, contextlib.suppress(OSError):
            if self._fd is None:
                if self._stop.is_set():
                    return
                self.path.parent.mkdir(parents=True, exist_ok=True)
                self._fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
            data = self._data
            if data is None:
                data = self._data = json.dumps({
                    "worker": self.worker, "pid": os.getpid(), "controller": os.getppid(),
                    "episode": self._episode}).encode()
            os.pwrite(self._fd, data, 0)
            os.ftruncate(self._fd, len(data))

    _episode: str | None = None
    _data: bytes | None = None


class WorkerWatch:
    """Controller side: ends a worker whose heartbeat is older than ``limit_s``."""

    def __init__(self, config: pytest.Config, directory: Path, limit_s: float) -> None:
        self.config = config
        self.directory = directory
        self.limit_s = limit_s
        self.ended: dict[str, str] = {}
        """Worker id → what to say when pytest-xdist reports it down."""
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, name="limbo-worker-watch",
                                        daemon=True)

    def pytest_sessionstart(self) -> None:
        self._thread.start()

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node: Any, error: object) -> None:
        said = self.ended.pop(str(node.gateway.id), None)
        reporter = self.config.pluginmanager.get_plugin("terminalreporter")
        if said is not None and reporter is not None:
            reporter.write_line(said, red=True)

    def pytest_sessionfinish(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=5)

    def pytest_unconfigure(self) -> None:
        shutil.rmtree(self.directory, ignore_errors=True)

    def _watch(self) -> None:
        while not self._stop.wait(HEARTBEAT_S):
            with contextlib.suppress(OSError):
                self.check()

    def check(self) -> None:
        """End every worker of this controller whose heartbeat is too old."""
        if not self.directory.is_dir():
            return
        now = time.time()
        for path in self.directory.glob("*.json"):
            try:
                silent_s = now - path.stat().st_mtime
                if silent_s <= self.limit_s:
                    continue
                beat = json.loads(path.read_text(encoding="utf-8"))
            except (OSError, ValueError):
                continue
            path.unlink(missing_ok=True)  # dealt with, whatever follows
            pid = int(beat.get("pid") or 0)
            if beat.get("controller") != os.getpid() or not _is_child(pid):
                continue  # another run's, or gone already (xdist sees that itself)
            worker = str(beat.get("worker"))
            episode = beat.get("episode")
            self.ended[worker] = (
                f"limbo: worker {worker} (pid {pid}) gave no sign of life for {silent_s:.0f} s"
                + (f" while running {episode}" if episode else "")
                + " (stopped, or stuck outside Python); it was ended and is replaced"
                + ("; that episode has no record and runs again on --limbo-resume"
                   if episode else ""))
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)  # a stopped process too


def _is_child(pid: int) -> bool:
    """Whether ``pid`` is a live child of this process (never signal a reused pid)."""
    if pid <= 0:
        return False
    if not Path("/proc/self/stat").exists():  # no /proc: the heartbeat's word, if it lives
        try:
            os.kill(pid, 0)
        except OSError:
            return False
        return True
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    fields = stat.rsplit(")", 1)[-1].split()
    return len(fields) > 1 and fields[0] != "Z" and int(fields[1]) == os.getpid()
