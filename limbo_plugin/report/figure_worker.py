"""The report's figures drawn in a second process while this one fits the models.

A report's cost is two halves of about the same size: the tables (importing scipy and
statsmodels, then the model fits) and the figures (importing matplotlib, then drawing each
figure and writing it three times). The tables the figures are drawn from are cheap, so the
figures need not wait for the fits: :func:`start` launches a worker that imports matplotlib
while the records load, is handed the figures' tables as soon as they exist, and draws while
this process fits. On two cores the report takes about the longer half instead of both.

The worker is a fresh interpreter (``sys.executable``, this process's ``sys.path``) fed the
tables as JSON on stdin and answering in JSON on stdout (the few table and figure types, named;
never pickle): the figures, or the error drawing them raised, which is raised again here as the
same ``OSError`` or ``LimboError``, so it reads as it would in one process. It draws with
the same code and settings, so the files are byte-identical either way. It dies with this
process: it runs in its own session, so the terminal's Ctrl-C reaches the report alone (a worker
still starting up would print Python's own fatal error on the shared stderr), and the
interrupted or failed report kills it; a worker whose parent is gone (its stdin closes) exits
at once. A worker
that cannot start or ends without an answer is not an error: the figures are then drawn here.

Figures are drawn here, in one process, when ``LIMBO_REPORT_PROCESSES=1``, when one CPU is
available, or when matplotlib is already imported in this process (a program calling
:func:`~limbo_plugin.report.build.make_report` repeatedly: the import a worker would overlap is
already paid, and a fresh worker would pay it again per report).
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import json
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO, Protocol

from limbo_plugin.errors import UsageError

if TYPE_CHECKING:
    from limbo_plugin.report.figures import FigureResult
    from limbo_plugin.report.tables.base import Result

PROCESSES_ENV = "LIMBO_REPORT_PROCESSES"
"""``1``: draw the figures in the report's own process; ``2``: in a worker process whatever
the CPUs; unset: a worker when it can pay (two CPUs or more, matplotlib not yet imported)."""

_BOOT = ("try:\n"
         "    import signal, sys, json\n"
         "    signal.signal(signal.SIGINT, signal.SIG_DFL)\n"
         "    sys.path[:] = json.loads(sys.argv[1])\n"
         "    from limbo_plugin.report.figure_worker import serve\n"
         "except BaseException:\n"
         "    raise SystemExit(3) from None\n"
         "serve()\n")
"""The worker's program: Ctrl-C ends it quietly (as it ends the report), this process's import
path, then :func:`serve`. A worker that cannot import Limbo exits 3 without a word, and the
figures are drawn in the report's process."""


class FigureJob(Protocol):
    """Where the figures are drawn: :meth:`draw` hands over their tables as soon as they
    exist, :meth:`result` waits for the figures, :meth:`close` ends whatever is left."""

    def draw(self, tables: Sequence[Result], directory: Path) -> None: ...

    def result(self) -> list[FigureResult]: ...

    def close(self) -> None: ...


class InProcess:
    """Draws the figures in this process when they are asked for, after the tables (as a
    report always did)."""

    def __init__(self) -> None:
        self._work: tuple[list[Result], Path] | None = None

    def draw(self, tables: Sequence[Result], directory: Path) -> None:
        self._work = (list(tables), directory)

    def result(self) -> list[FigureResult]:
        from limbo_plugin.report.figures import build_figures

        assert self._work is not None, "draw() comes before result()"
        return build_figures(*self._work)

    def close(self) -> None:
        self._work = None


class Worker:
    """A worker process drawing the figures; falls back to :class:`InProcess` when the worker
    gives no answer."""

    def __init__(self) -> None:
        self._work: tuple[list[Result], Path] | None = None
        self._process: subprocess.Popen[bytes] | None = subprocess.Popen(
            [sys.executable, "-c", _BOOT, json.dumps(sys.path)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, start_new_session=True)

    def draw(self, tables: Sequence[Result], directory: Path) -> None:
        self._work = (list(tables), directory)
        process = self._process
        assert process is not None and process.stdin is not None
        try:
            data = json.dumps(_encode(self._work)).encode()
        except (TypeError, ValueError):  # a value JSON cannot carry: result() draws here
            self._stop()
            return
        try:  # the worker reads its stdin from its first instant: this does not block long
            process.stdin.write(len(data).to_bytes(8, "big") + data)
            process.stdin.flush()
        except OSError:  # the worker is gone: result() draws here
            self._stop()

    def result(self) -> list[FigureResult]:
        process = self._process
        if process is not None and process.stdout is not None:
            answer = process.stdout.read()
            self._stop()
            if answer:
                reply = json.loads(answer, object_hook=_decode)
                if "error" in reply:
                    raise _error(reply["error"])
                figures: list[FigureResult] = reply["figures"]
                return figures
        fallback = InProcess()  # no worker, or one that ended without an answer
        assert self._work is not None, "draw() comes before result()"
        fallback.draw(*self._work)
        return fallback.result()

    def close(self) -> None:
        self._stop()

    def _stop(self) -> None:
        """End the worker (closing its stdin tells it to exit; a worker still drawing is
        killed) and reap it."""
        process, self._process = self._process, None
        if process is None:
            return
        for stream in (process.stdin, process.stdout):
            with contextlib.suppress(OSError):
                if stream is not None:
                    stream.close()
        if process.poll() is None:
            process.kill()
        process.wait()


def processes_wanted() -> int:
    """How many processes the report may use: ``LIMBO_REPORT_PROCESSES``, else 2 when the
    worker can pay (see the module's docstring), else 1."""
    value = os.environ.get(PROCESSES_ENV, "").strip()
    if value:
        if value not in ("1", "2"):
            raise UsageError(f"{PROCESSES_ENV}={value!r}: give 1 (figures drawn in the "
                             "report's process) or 2 (in a second process)")
        return int(value)
    if "matplotlib.pyplot" in sys.modules:
        return 1
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return 2 if (cpus or 1) >= 2 else 1


def start(processes: int) -> FigureJob:
    """A worker drawing the figures, when the report may use two ``processes`` and one
    starts; else the figures are drawn in this process."""
    if processes == 2:
        with contextlib.suppress(OSError):
            return Worker()
    return InProcess()


def serve() -> None:
    """The worker: import matplotlib while the tables are made, then draw them and answer.

    It reads its stdin from the start, in a thread, so the report never waits to hand the
    tables over; when stdin closes before the figures are written (the report failed,
    was interrupted or died), it exits at once."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)  # Ctrl-C: end quietly, as the report does
    stdin = sys.stdin.buffer
    stdout = os.fdopen(os.dup(sys.stdout.fileno()), "wb")  # the answer's own channel:
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())     # whatever else prints goes to stderr
    sys.stdout = sys.stderr
    received = threading.Event()
    work: list[bytes] = []
    threading.Thread(target=_read, args=(stdin, work, received), daemon=True).start()
    from limbo_plugin.report import figures

    figures.warm_up()
    received.wait()
    if not work:
        os._exit(0)
    answer: dict[str, Any]
    try:
        tables, directory = json.loads(work[0], object_hook=_decode)
        answer = {"figures": _encode(figures.build_figures(tables, directory))}
    except Exception as exc:  # raised again in the report's process
        answer = {"error": _described(exc)}
    with contextlib.suppress(OSError):
        stdout.write(json.dumps(answer).encode())
        stdout.flush()
    os._exit(0)


def _read(stdin: BinaryIO, work: list[bytes], received: threading.Event) -> None:
    """The tables (8 bytes of length, then their JSON), then wait for stdin to close: when it
    does before the answer is written, the report is gone, and so is the worker."""
    try:
        head = stdin.read(8)
        data = stdin.read(int.from_bytes(head, "big")) if len(head) == 8 else b""
        if data:
            work.append(data)
    finally:
        received.set()
    stdin.read()  # blocks until the report closes stdin
    os._exit(0)


@functools.cache
def _types() -> dict[str, type]:
    """What crosses between the two processes, by name: the tables and the figures (built
    once, not for every value encoded or decoded)."""
    from limbo_plugin.report.figures import Figure
    from limbo_plugin.report.tables.base import Column, RateCell, Skipped, Table

    return {t.__name__: t for t in (Column, Figure, RateCell, Skipped, Table)}


def _encode(value: Any) -> Any:
    """``value`` as JSON values: a table or figure type as its fields and its name, a path
    and a tuple marked as such. Floats keep every digit (``repr``), NaN included."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        name = type(value).__name__
        if _types().get(name) is not type(value):
            raise TypeError(f"{name} is not one of the types a figure worker exchanges")
        return {"__type__": name, **{f.name: _encode(getattr(value, f.name))
                                     for f in dataclasses.fields(value)}}
    if isinstance(value, Path):
        return {"__path__": str(value)}
    if isinstance(value, tuple):
        return {"__tuple__": [_encode(v) for v in value]}
    if isinstance(value, list):
        return [_encode(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _encode(v) for k, v in value.items()}
    return value


def _decode(value: dict[str, Any]) -> Any:
    if "__type__" in value:
        fields = dict(value)
        return _types()[fields.pop("__type__")](**fields)
    if "__path__" in value:
        return Path(value["__path__"])
    if "__tuple__" in value:
        return tuple(value["__tuple__"])
    return value


def _described(exc: Exception) -> dict[str, Any]:
    from limbo_plugin.errors import LimboError

    if isinstance(exc, OSError):
        return {"os": [exc.errno, exc.strerror, exc.filename], "text": str(exc)}
    if isinstance(exc, LimboError):
        return {"limbo": str(exc)}
    return {"text": f"{type(exc).__name__}: {exc}"}


def _error(described: dict[str, Any]) -> Exception:
    """The worker's error as this process raises it: an ``OSError`` of the same class, errno
    and file (``OSError(errno, ...)`` picks the subclass), a ``LimboError`` with its message,
    else a ``RuntimeError`` naming what it was."""
    from limbo_plugin.errors import LimboError

    if "os" in described:
        errno, strerror, filename = described["os"]
        if errno is None:
            return OSError(described["text"])
        return OSError(errno, strerror, filename) if filename is not None \
            else OSError(errno, strerror)
    if "limbo" in described:
        return LimboError(described["limbo"])
    return RuntimeError(f"drawing the figures failed: {described['text']}")
