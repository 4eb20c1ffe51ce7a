"""``limbo view`` builds the report when needed and serves it on 127.0.0.1; ``limbo allure``
serves its report the same way (a file:// Allure report never loads)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from reportkit import BuiltReport

from limbo_plugin.server.report_view import report_is_stale

URL = re.compile(r"^Serving (.+) at (http://127\.0\.0\.1:\d+/index\.html) \(Ctrl-C to stop\)$")


class Served:
    def __init__(self, command: list[str], cwd: Path) -> None:
        env = {**os.environ, "DISPLAY": "", "WAYLAND_DISPLAY": ""}  # no browser in a test
        self.process = subprocess.Popen(command, cwd=cwd, stdout=subprocess.PIPE,
                                        stderr=subprocess.PIPE, text=True, env=env)
        self.lines: list[str] = []
        assert self.process.stdout is not None
        for line in self.process.stdout:  # wait for the ready line, however long a build takes
            self.lines.append(line.rstrip("\n"))
            if URL.match(self.lines[-1]):
                break
        else:
            assert self.process.stderr is not None
            raise AssertionError(f"no URL line: {self.lines} {self.process.stderr.read()}")
        self.url = URL.match(self.lines[-1]).group(2)  # type: ignore[union-attr]

    def get(self, path: str) -> tuple[int, bytes]:
        with urllib.request.urlopen(self.url.rsplit("/", 1)[0] + "/" + path, timeout=60) as r:
            return r.status, r.read()

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(timeout=60)


@pytest.fixture
def served() -> Iterator[list[Served]]:
    started: list[Served] = []
    yield started
    for server in started:
        server.stop()


def limbo(*args: str) -> list[str]:
    return [sys.executable, "-m", "limbo_plugin.cli", *args]


def test_view_builds_then_serves_on_loopback(real_report: BuiltReport, tmp_path: Path,
                                             served: list[Served]) -> None:
    records = tmp_path / "episodes.jsonl"
    records.write_text("".join(r.model_dump_json() + "\n" for r in real_report.records))
    out = tmp_path / "report"
    server = Served(limbo("view", str(records), "--out", str(out), "--no-browser"), tmp_path)
    served.append(server)
    assert server.lines[0].startswith("Building the report (no report in ")
    status, body = server.get("index.html")
    assert status == 200 and b"Limbo" in body
    assert server.get("data/index.js")[1].startswith(b"window.LIMBO_INDEX = ")
    assert server.url.startswith("http://127.0.0.1:")
    server.stop()
    served.clear()
    # Up to date: served as it is, not rebuilt.
    built = (out / "index.html").stat().st_mtime_ns
    again = Served(limbo("view", str(records), "--out", str(out), "--no-browser"), tmp_path)
    served.append(again)
    assert len(again.lines) == 1 and (out / "index.html").stat().st_mtime_ns == built


def test_stale_reports_are_rebuilt(real_report: BuiltReport, tmp_path: Path) -> None:
    records = tmp_path / "episodes.jsonl"
    records.write_text("".join(r.model_dump_json() + "\n" for r in real_report.records))
    shutil.copytree(real_report.out, tmp_path / "report")
    out = tmp_path / "report"
    assert "built from other records" in str(report_is_stale([records], out))
    assert report_is_stale([], tmp_path / "none") == f"no report in {tmp_path / 'none'} yet"


def test_a_report_built_with_another_rho_is_rebuilt(tmp_path: Path) -> None:
    out = tmp_path / "report"
    out.mkdir()
    records = tmp_path / "episodes.jsonl"
    records.write_text("")
    (out / "index.html").write_text("<html></html>")
    (out / "report.json").write_text(json.dumps({"sources": [str(records)],
                                                 "rho": "configuration"}))
    assert report_is_stale([records], out) is None
    assert report_is_stale([records], out, "experiment") == (
        f"the report in {out} was built with --rho configuration")


def test_view_of_a_missing_file_is_one_line(tmp_path: Path) -> None:
    done = subprocess.run(limbo("view", str(tmp_path / "nope.jsonl"), "--no-browser"),
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 2
    assert done.stderr.strip().count("\n") == 0 and "nope.jsonl does not exist" in done.stderr


@pytest.mark.parametrize("port", ["99999", "-1", "http"])
def test_a_port_out_of_range_is_one_line(port: str, tmp_path: Path) -> None:
    """It was the socket's ``OverflowError`` traceback, after the report was built."""
    done = subprocess.run(limbo("view", str(tmp_path / "nope.jsonl"), "--port", port),
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert done.stderr.strip().count("\n") == 0
    assert (f"argument --port: a port number from 0 to 65535 (0: a free one), got {port!r}"
            in done.stderr), done.stderr


def test_a_port_in_use_is_one_line_naming_it(tmp_path: Path) -> None:
    import socket

    from limbo_plugin.errors import UsageError
    from limbo_plugin.server.report_view import serve

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(UsageError) as refused:
            serve(tmp_path, port=port, open_browser=False)
    assert str(refused.value) == (f"--port {port}: cannot serve on 127.0.0.1:{port} (Address "
                                  "already in use); give another port, or 0 for a free one")


@pytest.mark.early
@pytest.mark.slow
@pytest.mark.skipif(shutil.which("npx") is None, reason="no npx (Node.js) on this machine")
def test_allure_is_served_not_left_on_file(project: pytest.Pytester, served: list[Served],
                                           ) -> None:
    project.runpytest("--experiment", "tiny", "-k", "incident_open", "--alluredir",
                      "allure-results")
    server = Served(limbo("allure", "allure-results", "--out", "allure-report",
                          "--no-browser"), project.path)
    served.append(server)
    status, body = server.get("index.html")
    assert status == 200 and b"<html" in body.lower()
