"""Crash safety of a parallel run: killed at several points, nothing finished is lost.

A ``-n 2`` run is killed once a given number of records are on disk — SIGKILL of a worker,
SIGINT (Ctrl-C) of the controller, SIGKILL of the controller. After each kill: every episode
pytest reported as finished is in the records exactly once, every line reads as a record (a torn
last line is repaired by the resume, with a warning), and ``--limbo-resume`` completes the run
with records identical to an uninterrupted run's, but for the run id.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

SELECT = ["-k", "incident_open or invoice_batch or hotfix_long"]
FINISHED = re.compile(r"(PASSED|FAILED|XFAIL|XPASS) (specs/\S+::(\S+))")
CRASHED = re.compile(r"worker '\w+' crashed while running '\S+::(\S+)'")
"""xdist reports the episode a killed worker was running as failed: it never finished."""
KILLS = [("worker", signal.SIGKILL, 6), ("controller", signal.SIGINT, 12),
         ("controller", signal.SIGKILL, 20)]
"""(whom, signal, records on disk when it is sent): three kill points per run of the test."""


def pytest_argv(records: Path, *extra: str) -> list[str]:
    return [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:benchmark",
            "-n", "2", "-v", *SELECT, "--limbo-records", str(records), *extra]


def lines_of(path: Path) -> list[bytes]:
    return path.read_bytes().splitlines() if path.exists() else []


def comparable(path: Path) -> list[str]:
    """The records, strictly read (a torn or garbage line fails), without their run id."""
    out = []
    for number, line in enumerate(lines_of(path), start=1):
        record = json.loads(line)  # raises on a torn line: never read as a record
        assert isinstance(record, dict) and "episode_id" in record, f"line {number}"
        out.append(json.dumps({k: v for k, v in record.items() if k != "run_id"},
                              sort_keys=True))
    return sorted(out)


def worker_pids(controller: int) -> list[int]:
    children = Path(f"/proc/{controller}/task/{controller}/children")
    return [int(pid) for pid in children.read_text().split()] if children.exists() else []


def kill_at(project: Path, records: Path, whom: str, signum: int, after: int) -> str:
    """Run, send ``signum`` to ``whom`` once ``after`` records are on disk; the run's output."""
    log = project / f"run-{whom}-{signum}.log"
    with log.open("wb") as out:
        process = subprocess.Popen(pytest_argv(records), cwd=project, stdout=out,
                                   stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 120
        while len(lines_of(records)) < after and process.poll() is None:
            assert time.monotonic() < deadline, "the run never got that far"
            time.sleep(0.01)
        assert process.poll() is None, "the run ended before the kill point"
        if whom == "worker":
            pids = worker_pids(process.pid)
            assert pids, "no worker process found"
            os.kill(pids[0], signum)
        else:
            os.kill(process.pid, signum)
        try:
            process.wait(timeout=120)
        except subprocess.TimeoutExpired:
            process.kill()
            raise
    return log.read_text(errors="replace")


@pytest.mark.early
@pytest.mark.slow
def test_killed_parallel_runs_lose_nothing_and_resume_to_the_same_records(
        project: pytest.Pytester) -> None:
    reference = project.path / "reference" / "episodes.jsonl"
    subprocess.run(pytest_argv(reference), cwd=project.path, capture_output=True, timeout=300)
    expected = comparable(reference)
    total = len(expected)
    assert total > max(after for _, _, after in KILLS) + 5, "kill points fall mid-run"
    tried = lost = 0
    for whom, signum, after in KILLS:
        records = project.path / f"{whom}-{signum}" / "episodes.jsonl"
        output = kill_at(project.path, records, whom, signum, after)
        tried += 1
        written = lines_of(records)
        if written and not records.read_bytes().endswith(b"\n"):
            written = written[:-1]  # a torn last line: the resume below repairs it
        ids = [json.loads(line)["episode_id"] for line in written]
        assert len(ids) == len(set(ids)), f"{whom} {signum}: an episode recorded twice"
        reported = ({match.group(3) for match in FINISHED.finditer(output)}
                    - {match.group(1) for match in CRASHED.finditer(output)})
        missing = {item for item in reported
                   if not any(item.startswith(episode) for episode in ids)}
        lost += len(missing)
        assert not missing, f"{whom} {signum}: reported finished but not recorded: {missing}"
        assert len(ids) < total or whom == "worker", "the kill interrupted the run"
        resumed = subprocess.run(pytest_argv(records, "--limbo-resume"), cwd=project.path,
                                 capture_output=True, text=True, timeout=300)
        assert "Traceback" not in resumed.stdout + resumed.stderr, resumed.stdout[-2000:]
        assert comparable(records) == expected, f"{whom} {signum}: resume differs"
    print(f"crash safety: {tried} kill points tried, {lost} finished episodes lost")
    assert tried == len(KILLS)
