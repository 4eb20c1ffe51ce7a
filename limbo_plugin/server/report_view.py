"""``limbo view``: the home of results, served on 127.0.0.1 (like ``inspect view``); ``limbo
allure`` serves its report the same way.

Without a records file it lists every run under ``reports/`` (:mod:`.run_list`): agent,
experiment, date, episodes, headline duplicate rate and a gate's verdict, re-read every few
seconds so a run being written grows in place; each run's report and explorer open from the
list, built on first opening (and again when the run's file changed) into ``reports/.view/``.
With records files it builds their report if needed and serves it, as before.

An Allure 3 report opened from ``file://`` spins forever (its scripts fetch their data, which
browsers refuse on ``file://``), and a user should not have to find out which of the two reports
opens from disk. Both are served by the standard library's HTTP server, bound to the loopback
interface only (the records hold whole traces), on a free port unless one is given. The URL is
printed before anything else, and a browser opened where a graphical one exists; on a headless
machine webbrowser would start a text browser (lynx, w3m) in the terminal, so none is opened.
"""

from __future__ import annotations

import functools
import json
import os
import shutil
import sys
import threading
import webbrowser
from collections.abc import Callable, Sequence
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Protocol
from urllib.parse import parse_qs, quote, urlsplit


class RunEntryLike(Protocol):
    def to_json(self) -> dict[str, Any]: ...


class RunList(Protocol):
    """What the server reads of the run list (:class:`limbo_plugin.report.run_list.RunList`,
    which the command passes in: the list is the reports' business, the serving this
    module's)."""

    root: Path

    def entries(self) -> Sequence[RunEntryLike]: ...

    def records_path(self, relative: str) -> Path | None: ...

HOST = "127.0.0.1"
TEMPLATES = Path(__file__).resolve().parents[1] / "report" / "templates"
"""The report's templates, the run list's page among them (package data of ``report``)."""
VIEW_DIR = ".view"
"""Where the run list builds each run's report, inside the listed folder (hidden: it holds no
records of its own)."""

Build = Callable[[Sequence[str], str], list[str]]


class QuietHandler(SimpleHTTPRequestHandler):
    """Serves the directory without a log line per request (the terminal keeps the URL)."""

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def end_headers(self) -> None:
        self.send_header("Cache-Control", "no-store")  # a rebuilt report shows at once
        super().end_headers()


class RunHome:
    """The run list's server side: the list as JSON, and each run's report, built into
    ``<root>/.view/<run>/`` when first opened or when its records changed since."""

    def __init__(self, runs: RunList, build: Build, rho: str = "configuration",
                 gate_name: str | None = None) -> None:
        self.runs = runs
        self.root = runs.root
        self.cache = runs.root / VIEW_DIR
        self.build = build
        self.rho = rho
        self.gate_name = gate_name
        self._lock = threading.Lock()

    def listing(self) -> dict[str, Any]:
        return {"root": str(self.root), "gate": self.gate_name,
                "runs": [entry.to_json() for entry in self.runs.entries()]}

    @staticmethod
    def slug(relative: str) -> str:
        return relative.removesuffix(".jsonl").replace("/", "__")

    def report_for(self, relative: str) -> str | None:
        """The URL of the listed run ``relative``'s report (built if it is missing or older
        than the run's file), or ``None`` if no listed run has that name."""
        records = self.runs.records_path(relative)
        if records is None:
            return None
        slug = self.slug(relative)
        out = self.cache / slug
        with self._lock:  # one build at a time, and never the same one twice
            if report_is_stale([records], out, self.rho) is not None:
                fresh, old = self.cache / f".{slug}.building", self.cache / f".{slug}.old"
                for leftover in (fresh, old):
                    shutil.rmtree(leftover, ignore_errors=True)
                self.cache.mkdir(parents=True, exist_ok=True)
                self.build([str(records)], str(fresh))
                if out.exists():
                    os.replace(out, old)
                os.replace(fresh, out)
                shutil.rmtree(old, ignore_errors=True)
        return f"/view/{quote(slug)}/index.html"


class HomeHandler(QuietHandler):
    """``/`` the run list, ``/dom.js`` its script helpers, ``/runs.json`` its data,
    ``/open?records=…[&to=explorer]`` a run's report (built on demand), ``/view/<run>/…`` the
    built reports' files."""

    home: RunHome

    def do_GET(self) -> None:
        from limbo_plugin.errors import LimboError

        url = urlsplit(self.path)
        if url.path in ("/", "/index.html"):
            self._send(200, (TEMPLATES / "runs.html").read_bytes(), "text/html; charset=utf-8")
        elif url.path == "/dom.js":  # what the run list shares with the report's explorer
            self._send(200, (TEMPLATES / "dom.js").read_bytes(),
                       "text/javascript; charset=utf-8")
        elif url.path == "/runs.json":
            self._send(200, json.dumps(self.home.listing()).encode(), "application/json")
        elif url.path == "/open":
            query = parse_qs(url.query)
            relative = (query.get("records") or [""])[0]
            try:
                target = self.home.report_for(relative)
            except LimboError as exc:
                self._send(500, f"{exc}\n".encode(), "text/plain; charset=utf-8")
                return
            if target is None:
                self._send(404, f"No run {relative!r} under {self.home.root}; the run list "
                           "at / names every run.\n".encode(), "text/plain; charset=utf-8")
                return
            if (query.get("to") or [""])[0] == "explorer":
                target += "#explorer"
            self.send_response(303)
            self.send_header("Location", target)
            self.end_headers()
        else:
            super().do_GET()

    def do_HEAD(self) -> None:
        self.send_error(405)

    def translate_path(self, path: str) -> str:
        """Files under ``/view/`` only, from the built reports; nothing else is a file."""
        if not path.startswith("/view/"):
            return str(self.home.cache / ".none")
        return super().translate_path(path.removeprefix("/view"))

    def _send(self, status: int, body: bytes, kind: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


def report_is_stale(records: Sequence[str | Path], out: Path, rho: str = "configuration"
                    ) -> str | None:
    """Why the report in ``out`` must be (re)built from ``records`` with ρ over ``rho``'s cells,
    or ``None`` if it is up to date: there is none, it was built from other files or with
    another ρ, or a file changed since."""
    index, manifest = out / "index.html", out / "report.json"
    if not index.is_file() or not manifest.is_file():
        return f"no report in {out} yet"
    try:
        meta = json.loads(manifest.read_text(encoding="utf-8"))
        sources = meta.get("sources", [])
    except (OSError, ValueError, AttributeError):
        return f"{manifest} is unreadable"
    if [str(Path(p).resolve()) for p in sources] != [str(Path(p).resolve()) for p in records]:
        return f"the report in {out} was built from other records"
    if meta.get("rho", "configuration") != rho:
        return f"the report in {out} was built with --rho {meta.get('rho')}"
    built = index.stat().st_mtime
    changed = [str(p) for p in records if Path(p).is_file() and Path(p).stat().st_mtime > built]
    return f"{', '.join(changed)} changed since the report was built" if changed else None


def can_open_browser() -> bool:
    """Whether a graphical browser can be expected: always on macOS and Windows, with a
    display elsewhere."""
    if sys.platform in ("darwin", "win32"):
        return True
    return bool(os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"))


def serve(directory: Path, *, port: int = 0, open_browser: bool = True,
          page: str = "index.html", say: Callable[[str], None] = print,
          ready: Callable[[ThreadingHTTPServer], None] | None = None,
          home: RunHome | None = None) -> int:
    """Serve ``directory`` (or, with ``home``, the run list of its folder) on 127.0.0.1
    until Ctrl-C; returns 0."""
    from limbo_plugin.errors import UsageError

    if home is not None:
        handler: Any = type("Home", (HomeHandler,), {"home": home})
        handler = functools.partial(handler, directory=str(home.cache))
    else:
        handler = functools.partial(QuietHandler, directory=str(directory))
    try:
        server = ThreadingHTTPServer((HOST, port), handler)
    except OSError as exc:  # the port is taken, or one this user may not bind
        raise UsageError(f"--port {port}: cannot serve on {HOST}:{port} "
                         f"({exc.strerror or exc}); give another port, or 0 for a free "
                         "one") from None
    with server:
        url = f"http://{HOST}:{server.server_address[1]}/{page}"
        say(f"Serving {directory} at {url} (Ctrl-C to stop)")
        sys.stdout.flush()
        if open_browser and can_open_browser():
            threading.Thread(target=webbrowser.open, args=(url,), daemon=True).start()
        if ready is not None:
            ready(server)
        try:
            server.serve_forever()
        except KeyboardInterrupt:
            say("Stopped.")
    return 0


def run_view(args: Any, build: Build,
             run_list: Callable[[Path, str | None], tuple[RunList, str | None]] | None = None
             ) -> int:
    """``limbo view``: ``build(records, out)`` makes a report (and returns its lines);
    ``run_list(folder, gate)`` the run list of a folder and its gate's name."""
    from limbo_plugin.errors import UsageError
    from limbo_plugin.records import GIVE_RECORDS

    if not args.records and run_list is not None:
        root = Path(args.reports)
        if not root.is_dir():
            raise UsageError(f"--reports {root}: no such folder; run pytest on an experiment "
                             "first (it writes its records there) or give the folder that "
                             "holds them")
        runs, gate_name = run_list(root, args.gate)
        home = RunHome(runs, build, getattr(args, "rho", "configuration"), gate_name)
        return serve(root, port=args.port, open_browser=not args.no_browser, page="",
                     home=home)
    if not args.records:
        from limbo_plugin.records import DEFAULT_RECORDS

        args.records = [DEFAULT_RECORDS]
    out = Path(args.out)
    for path in args.records:
        if not Path(path).is_file():
            raise UsageError(f"{path} does not exist; {GIVE_RECORDS}")
    reason = "--rebuild" if args.rebuild else report_is_stale(
        args.records, out, getattr(args, "rho", "configuration"))
    if reason is not None:
        print(f"Building the report ({reason}) …", flush=True)
        build(args.records, str(out))
    return serve(out, port=args.port, open_browser=not args.no_browser)
