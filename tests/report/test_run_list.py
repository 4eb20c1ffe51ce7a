"""``limbo view`` as the home of results: every run under ``reports/`` (agent, experiment, date,
episodes, headline duplicate rate, gate verdict), a run still being written read as far as its
lines are whole and re-read as it grows, each run's report and explorer opened from the list.
The page is driven in a real chromium at 1280×800 and 390×844."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from reportkit import BuiltReport

from limbo_plugin.records import EpisodeRecord
from limbo_plugin.report.gate import load_gate
from limbo_plugin.report.html import TEMPLATES
from limbo_plugin.report.run_list import RunList, find_runs, is_being_written
from limbo_plugin.spec.registry import SpecRegistry
from limbo_plugin.store.custody import RecordsLock, lock_path
from limbo_plugin.store.files import RecordWriter

SPECS = Path(__file__).resolve().parents[2] / "specs"
GATE = SPECS / "gates" / "release.yaml"
SERVING = re.compile(r"^Serving (.+) at (http://127\.0\.0\.1:\d+/) \(Ctrl-C to stop\)$")


def lines(records: list[EpisodeRecord]) -> str:
    return "".join(r.model_dump_json() + "\n" for r in records)


def reports_folder(root: Path, records: list[EpisodeRecord]) -> Path:
    """A ``reports/`` as runs leave it: the latest run, an earlier one in ``history/``, a
    report folder, Allure's results and a JSONL file that is not records."""
    reports = root / "reports"
    (reports / "history").mkdir(parents=True)
    (reports / "episodes.jsonl").write_text(lines(records))
    earlier = [r for r in records if r.agent == "scripted:blind_retry"]
    (reports / "history" / "episodes.20260101T000000Z.jsonl").write_text(lines(earlier))
    (reports / "report").mkdir()
    (reports / "report" / "report.json").write_text("{}")
    (reports / "report" / "copy.jsonl").write_text(lines(records[:1]))
    (reports / "allure-results").mkdir()
    (reports / "allure-results" / "x.jsonl").write_text(lines(records[:1]))
    (reports / "notes.jsonl").write_text('{"note": "not a record"}\n')
    os.utime(reports / "history" / "episodes.20260101T000000Z.jsonl", (1e9, 1e9))
    return reports


def duplicate_counts(records: list[EpisodeRecord], agent: str) -> tuple[int, int]:
    """Duplicated and all fired faulted episodes of ``agent``, counted from the records."""
    faulted = [r for r in records if r.agent == agent and r.family != "none" and r.fired
               and r.error is None]
    return sum(1 for r in faulted if r.duplicates > 0), len(faulted)


def gate_verdict(records: Path) -> str:
    """What ``limbo gate`` says of the file (its exit status)."""
    done = subprocess.run([sys.executable, "-m", "limbo_plugin.cli", "--specs", str(SPECS),
                           "gate", str(GATE), "--records", str(records)],
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode in (0, 1), done.stderr
    return "passed" if done.returncode == 0 else "failed"


def test_every_run_under_reports_is_listed(real_report: BuiltReport, tmp_path: Path) -> None:
    reports = reports_folder(tmp_path, real_report.records)
    registry = SpecRegistry.load(SPECS)
    runs = RunList(reports, registry.family_order,
                   load_gate(GATE, families=registry.family_order))
    assert [p.relative_to(reports).as_posix() for p in find_runs(reports)] == [
        "episodes.jsonl", "history/episodes.20260101T000000Z.jsonl"]
    latest, earlier = runs.entries()
    assert latest.path == "episodes.jsonl" and latest.episodes == len(real_report.records)
    assert latest.agents == ["scripted:blind_retry", "scripted:verify_first"]
    assert latest.experiments == ["—"] and latest.problem is None and not latest.writing
    for headline in latest.headline:
        assert (headline.k, headline.n) == duplicate_counts(real_report.records, headline.label)
        assert headline.low <= headline.k / headline.n <= headline.high
    assert [h.label for h in earlier.headline] == ["scripted:blind_retry"]
    assert latest.gate == gate_verdict(reports / "episodes.jsonl")
    assert earlier.gate == gate_verdict(reports / "history" / "episodes.20260101T000000Z.jsonl")
    assert latest.gate_detail.startswith("Limbo gate 'release': ")
    # Nothing outside the list is ever served as a run.
    assert runs.records_path("../reports/episodes.jsonl") is None
    assert runs.records_path("notes.jsonl") is None


def test_a_run_being_written_is_read_as_far_as_it_is_whole(real_report: BuiltReport,
                                                          tmp_path: Path) -> None:
    reports = tmp_path / "reports"
    records = reports / "episodes.jsonl"
    registry = SpecRegistry.load(SPECS)
    runs = RunList(reports, registry.family_order)
    with RecordsLock(records):
        writer = RecordWriter(records)
        for record in real_report.records[:3]:
            writer.write(record.model_dump_json())
        half = real_report.records[3].model_dump_json()
        with records.open("a") as handle:
            handle.write(half[:len(half) // 2])  # a line the run is in the middle of writing
        (entry,) = runs.entries()
        assert entry.writing and entry.episodes == 3 and entry.torn_tail
        assert entry.problem is None
        with records.open("a") as handle:
            handle.write(half[len(half) // 2:] + "\n")
        (entry,) = runs.entries()
        assert entry.episodes == 4 and not entry.torn_tail and entry.writing
        writer.close()
    (entry,) = runs.entries()
    assert not entry.writing, "the run ended: its lock is released"
    # A run killed while writing leaves its lock file naming a process that is gone.
    lock_path(records).write_text("999999999")
    assert not is_being_written(records)


def test_view_of_a_missing_reports_folder_is_one_line(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, "-m", "limbo_plugin.cli", "view", "--reports",
                           str(tmp_path / "nope"), "--no-browser"],
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert done.stderr.strip().count("\n") == 0
    assert f"--reports {tmp_path / 'nope'}: no such folder" in done.stderr


def test_a_gate_that_is_not_there_is_one_line(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, "-m", "limbo_plugin.cli", "view", "--reports",
                           str(tmp_path), "--gate", str(tmp_path / "g.yaml"), "--no-browser"],
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 2 and done.stderr.strip().count("\n") == 0
    assert f"--gate {tmp_path / 'g.yaml'}: no such file" in done.stderr


class Home:
    """``limbo view --reports DIR`` in a process of its own, until stopped."""

    def __init__(self, reports: Path) -> None:
        env = {**os.environ, "DISPLAY": "", "WAYLAND_DISPLAY": ""}
        self.process = subprocess.Popen(
            [sys.executable, "-m", "limbo_plugin.cli", "--specs", str(SPECS), "view",
             "--reports", str(reports), "--no-browser"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
        assert self.process.stdout is not None
        line = self.process.stdout.readline().rstrip("\n")  # the ready line
        found = SERVING.match(line)
        assert found, (line, self.process.stderr.read() if self.process.stderr else "")
        self.url = found.group(2)

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(timeout=60)


@pytest.fixture
def home(real_report: BuiltReport, tmp_path: Path) -> Iterator[tuple[Home, Path]]:
    reports = reports_folder(tmp_path, real_report.records)
    server = Home(reports)
    yield server, reports
    server.stop()


def test_the_server_lists_and_refuses(home: tuple[Home, Path]) -> None:
    server, _ = home
    with urllib.request.urlopen(server.url + "runs.json", timeout=60) as answer:
        listing = json.loads(answer.read())
    assert listing["gate"] == "release"
    assert [r["path"] for r in listing["runs"]] == ["episodes.jsonl",
                                                   "history/episodes.20260101T000000Z.jsonl"]
    with urllib.request.urlopen(server.url + "dom.js", timeout=60) as answer:
        assert answer.headers.get_content_type() == "text/javascript"
        assert answer.read() == (TEMPLATES / "dom.js").read_bytes()
    for bad in ("open?records=../../etc/passwd", "open?records=notes.jsonl", "episodes.jsonl",
                "view/../episodes.jsonl"):
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(server.url + bad, timeout=60)
        assert refused.value.code == 404, bad


@pytest.mark.slow
@pytest.mark.parametrize("viewport", [(1280, 800), (390, 844)], ids=["1280x800", "390x844"])
def test_the_run_list_in_a_browser(home: tuple[Home, Path], playwright_chromium: Any,
                                   real_report: BuiltReport, tmp_path: Path,
                                   viewport: tuple[int, int]) -> None:
    server, reports = home
    width, height = viewport
    live = reports / "live" / "episodes.jsonl"
    context = playwright_chromium.new_context(viewport={"width": width, "height": height})
    page = context.new_page()
    with RecordsLock(live):
        writer = RecordWriter(live)
        for record in real_report.records[:5]:
            writer.write(record.model_dump_json())
        page.goto(server.url)
        row = "tr[data-run='live/episodes.jsonl']"
        page.wait_for_selector(f"{row}[data-writing='true'] td.episodes")
        assert page.inner_text(f"{row} td.episodes") == "5"
        assert page.inner_text(f"{row} .badge.writing") == "writing"
        assert page.evaluate("document.documentElement.scrollWidth") <= width
        assert page.evaluate("document.querySelector('.scroll').scrollWidth") <= width, \
            "every column of the list in view"
        shot = tmp_path / f"runs-{width}.png"
        page.screenshot(path=str(shot))
        keep(shot)
        # The run goes on: the page shows its new episodes without being reloaded.
        page.evaluate("window.notReloaded = true")
        for record in real_report.records[5:12]:
            writer.write(record.model_dump_json())
        page.wait_for_function(f"document.querySelector(\"{row} td.episodes\")"
                               ".innerText === '12'")
        assert page.evaluate("window.notReloaded") is True
        writer.close()
    page.wait_for_selector(f"{row}[data-writing='false']")
    # Every run opens its report and its explorer.
    latest = "tr[data-run='episodes.jsonl']"
    cells = page.evaluate(f"""() => Array.from(document.querySelectorAll("{latest} td"))
        .map(td => td.innerText)""")
    assert "scripted:blind_retry" in cells[1] and cells[4] == str(len(real_report.records))
    assert re.search(r"\d+\.\d% \[\d+\.\d%–\d+\.\d%\] \d+/\d+", cells[5]), cells[5]
    assert cells[6].split("\n")[0] in ("passed", "failed") and "checks passed" in cells[6]
    page.click(f"{latest} a.report")
    page.wait_for_selector("#table3_agents")
    assert "/view/episodes/index.html" in page.url
    title = page.evaluate("document.querySelector('#table3_agents h3').getBoundingClientRect()"
                          ".top")
    assert 0 <= title < height, "the report opens on its results"
    assert page.is_visible("#all-runs")
    page.click("#all-runs")
    page.wait_for_selector(f"{latest} a.explorer")
    page.click(f"{latest} a.explorer")
    page.wait_for_function("document.getElementById('count').textContent !== ''")
    assert page.url.endswith("#explorer")
    top = page.evaluate("document.getElementById('explorer').getBoundingClientRect().top")
    assert 0 <= top < height / 2, "the explorer link lands on the explorer"
    context.close()


def keep(shot: Path) -> None:
    folder = os.environ.get("LIMBO_SCREENSHOTS")
    if folder:
        Path(folder).mkdir(parents=True, exist_ok=True)
        shutil.copy(shot, Path(folder) / shot.name)
