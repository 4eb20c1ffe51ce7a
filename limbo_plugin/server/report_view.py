"""``limbo view``: build the HTML report if needed and serve it on 127.0.0.1 (like
``inspect view``); ``limbo allure`` serves its report the same way.

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
import sys
import threading
import webbrowser
from collections.abc import Callable, Sequence
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

HOST = "127.0.0.1"


class QuietHandler(SimpleHTTPRequestHandler):
    """Serves the directory without a log line per request (the terminal keeps the URL)."""

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def end_headers(self) -> None:
        self.send_header("Cache-Control", "no-store")  # a rebuilt report shows at once
        super().end_headers()


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
          ready: Callable[[ThreadingHTTPServer], None] | None = None) -> int:
    """Serve ``directory`` on 127.0.0.1 until Ctrl-C; returns 0."""
    from limbo_plugin.errors import UsageError

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


def add_arguments(parser: Any) -> None:
    from limbo_plugin.server.serving import port_number

    parser.add_argument("--port", type=port_number, default=0,
                        help="port on 127.0.0.1 (default: a free one)")
    parser.add_argument("--no-browser", action="store_true",
                        help="print the URL only; do not open a browser")


def add_parser(sub: Any, default_records: str, default_out: str) -> Any:
    """``limbo view``'s arguments (registered by :mod:`limbo_plugin.cli`)."""
    parser = sub.add_parser(
        "view", help="build the HTML report if needed and serve it on 127.0.0.1",
        description="Build the HTML report of RECORDS (if there is none, or it is older than "
        "the records) and serve it on 127.0.0.1, printing the URL and opening a browser where "
        "one exists. Ctrl-C stops it.")
    parser.add_argument("records", nargs="*", default=[default_records],
                        help=f"JSONL record files (default {default_records})")
    parser.add_argument("--out", default=default_out,
                        help=f"the report's directory (default {default_out})")
    parser.add_argument("--rebuild", action="store_true", help="build the report even if it "
                        "is up to date")
    add_arguments(parser)
    return parser


def run_view(args: Any, build: Callable[[Sequence[str], str], list[str]]) -> int:
    """``limbo view``: ``build(records, out)`` makes the report (and returns its lines)."""
    from limbo_plugin.errors import UsageError
    from limbo_plugin.records import GIVE_RECORDS

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
