"""How records flow through a run: once from worker to controller, not kept by items or
reports, synced and summarised when the run is stopped with SIGTERM."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest

WATCH = """
import json
from pathlib import Path

import pytest

carried = {}


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_logreport(report):
    # Every report that carries a record, in any field, as it reaches the controller.
    if '"episode_id"' in repr(report.__dict__):
        carried[report.nodeid] = carried.get(report.nodeid, 0) + 1
    return (yield)


def pytest_sessionfinish(session):
    if hasattr(session.config, "workerinput"):
        return
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    kept_by_reports = sum('"episode_id"' in repr(r.__dict__)
                          for reports in reporter.stats.values() for r in reports)
    empty_phases = sum(r.when != "call" for r in reporter.stats.get("", []))
    kept_by_items = sum(getattr(i, "record", None) is not None
                        or getattr(i, "record_line", None) is not None for i in session.items)
    Path("flow.json").write_text(json.dumps({
        "carried": carried, "kept_by_reports": kept_by_reports,
        "kept_by_items": kept_by_items, "items": len(session.items),
        "empty_phases": empty_phases}))
"""


def flow(project: pytest.Pytester) -> dict:
    return json.loads((project.path / "flow.json").read_text())


def test_items_and_reports_let_go_of_records_once_written(project: pytest.Pytester) -> None:
    project.makeconftest(WATCH)
    result = project.runpytest("--experiment", "small")
    seen = flow(project)
    assert seen["items"] == 8
    assert seen["kept_by_items"] == 0, "an item keeps its record only until it is reported"
    assert seen["kept_by_reports"] == 0, "pytest keeps every report to the end of the run"
    # Passed setup and teardown reports print nothing; pytest's failure summary scans every
    # kept one per failure, so they are not kept.
    assert seen["empty_phases"] == 0
    result.stdout.fnmatch_lines(["*= FAILURES =*", "*episode incident_open-i0-ticket-timeout_late*",
                                 "duplicated ticket: committed 2×*"])
    lines = (project.path / "reports" / "episodes.jsonl").read_text().splitlines()
    assert len(lines) == 8


@pytest.mark.slow
def test_a_record_travels_from_a_worker_once(project: pytest.Pytester) -> None:
    project.makeconftest(WATCH)
    project.runpytest_subprocess("--experiment", "small", "-n", "2")
    carried = flow(project)["carried"]
    assert len(carried) == 8 and set(carried.values()) == {1}, carried
    assert len((project.path / "reports" / "episodes.jsonl").read_text().splitlines()) == 8


SLOW_AND_LOGGED = """
import os
import time
from pathlib import Path

_fsync = os.fsync


def logged_fsync(fd):
    _fsync(fd)
    path = Path("reports/episodes.jsonl")
    if not path.exists():  # another file's sync (the fingerprint written before the records)
        return
    with open("fsync.log", "a") as log:
        log.write(f"{path.read_text().count(chr(10))}\\n")


os.fsync = logged_fsync


started = 0


def pytest_runtest_setup(item):
    # Before the eleventh episode the run waits to be stopped: the signal lands mid-run however
    # fast or slow the machine is.
    global started
    started += 1
    if started == 11:
        time.sleep(3600)
"""


@pytest.mark.slow
def test_sigterm_syncs_the_records_and_stops_like_ctrl_c(project: pytest.Pytester) -> None:
    project.makeconftest(SLOW_AND_LOGGED)
    path = project.path / "reports" / "episodes.jsonl"
    process = subprocess.Popen([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q"],
                               cwd=project.path, stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, text=True)
    deadline = time.monotonic() + 300  # a hang guard, not a speed check
    while not path.exists() or path.read_text().count("\n") < 10:
        assert process.poll() is None, "the run ended before it was stopped"
        assert time.monotonic() < deadline, "the run never wrote ten records"
        time.sleep(0.01)
    os.kill(process.pid, signal.SIGTERM)
    output, _ = process.communicate(timeout=60)
    assert process.returncode == pytest.ExitCode.INTERRUPTED, output
    lines = path.read_text().splitlines()
    assert all(json.loads(line)["episode_id"] for line in lines), "no torn line"
    synced = [int(n) for n in (project.path / "fsync.log").read_text().split()]
    assert synced[-1] == len(lines), "every record written was synced before the run ended"
    assert "Limbo summary" in output, "stopped as Ctrl-C stops it: the summary is written"
    assert (project.path / "reports" / "episodes.summary.json").exists()


SIGTERM_WHILE_SYNCING = """
import os
import signal
import threading
import time
from pathlib import Path

_fsync = os.fsync
sent = False


def fsync_then_sigterm(fd):
    # The record file's sync in the main thread sends SIGTERM to its own process: the handler
    # runs at the next instruction, here, while the writer still holds its lock.
    global sent
    _fsync(fd)
    records = Path("reports/episodes.jsonl")  # not another file's sync (the fingerprint's)
    if (not sent and threading.current_thread() is threading.main_thread()
            and records.exists() and records.read_text().count(chr(10)) >= 3):
        sent = True  # once: a second SIGTERM ends the process, by design
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(5)  # the handler interrupts this


os.fsync = fsync_then_sigterm


def pytest_runtest_setup(item):
    # Each episode starts over a second after the last sync: its record is synced as it is
    # written, in the main thread, not by the writer's timer.
    time.sleep(1.1)
"""


def test_sigterm_while_a_record_is_being_synced_stops_the_run(project: pytest.Pytester
                                                               ) -> None:
    """SIGTERM that lands while the main thread is syncing a record (a CI job cancelled at
    the wrong moment): the handler's own sync must not wait for the lock its thread holds."""
    project.makeconftest(SIGTERM_WHILE_SYNCING)
    process = subprocess.Popen([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q",
                                "--experiment", "small"], cwd=project.path,
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        output, _ = process.communicate(timeout=60)  # a hang guard, not a speed check
    except subprocess.TimeoutExpired:
        process.kill()
        process.communicate()
        pytest.fail("the run hung after SIGTERM: its handler waited for the record file's lock")
    assert process.returncode == pytest.ExitCode.INTERRUPTED, output
    assert "Limbo summary" in output, output
    lines = (project.path / "reports" / "episodes.jsonl").read_text().splitlines()
    assert lines and all(json.loads(line)["episode_id"] for line in lines)


ARMED = """\
name: armed
templates: [incident_open]
instances: [0]
focal_writes: [ticket]
modes: [timeout_post]
conditions: [vanilla]
arms:
  - name: plain
  - name: guarded
    conditions: [vanilla, guard]
"""


def test_every_record_names_its_experiment_and_arm(project: pytest.Pytester) -> None:
    """Reports compare configurations within an experiment and pair only declared repeats:
    each record says which experiment and which arm it comes from (the first arm holding it)."""
    (project.path / "specs" / "experiments" / "armed.yaml").write_text(ARMED)
    project.runpytest("--experiment", "armed", "-q")
    lines = (project.path / "reports" / "episodes.jsonl").read_text().splitlines()
    got = sorted((r["experiment"], r["arm"], r["condition"], r["repeat"])
                 for r in map(json.loads, lines))
    assert got == [("armed", "guarded", "guard", 0), ("armed", "plain", "vanilla", 0)]
