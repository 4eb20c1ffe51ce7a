"""SIGINT or SIGTERM sent to the controller alone (``kill -INT``, a cancelled CI job) while
pytest-xdist's workers are still starting up stops the run at once: the controller interrupts
its workers, each stops through its own clean-up, and the run ends with pytest's interrupted
status, no worker traceback and nothing written to the records."""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
HANG_LIMIT_S = 240
"""Generous: the run must end, not end fast (the machine may be loaded)."""

SLOW_START = '''
import os, time
from pathlib import Path

MARKS = Path(os.environ["LIMBO_TEST_MARKS"])


def pytest_collection(session):
    """A worker whose start-up takes as long as it is let: it stops only when interrupted."""
    if not hasattr(session.config, "workerinput"):
        return None
    worker = session.config.workerinput["workerid"]
    (MARKS / f"{worker}.started").write_text("")
    while True:
        time.sleep(0.1)


def pytest_unconfigure(config):
    if hasattr(config, "workerinput"):
        (MARKS / f"{config.workerinput['workerid']}.cleaned-up").write_text("")
'''


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_interrupting_the_controller_during_worker_start_up_ends_the_run(
        pytester: pytest.Pytester, signum: int) -> None:
    shutil.copytree(ROOT / "specs", pytester.path / "specs")
    pytester.makeini("[pytest]\ntestpaths = specs\naddopts = -p no:cacheprovider\n")
    pytester.makeconftest(SLOW_START)
    marks = pytester.path / "marks"
    marks.mkdir()
    env = {**os.environ, "LIMBO_TEST_MARKS": str(marks)}
    run = subprocess.Popen([sys.executable, "-m", "pytest", "-n", "2", "-p", "no:randomly",
                            "--limbo-records=out/run.jsonl"],
                           cwd=pytester.path, env=env, stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, text=True, start_new_session=True)
    try:
        deadline = time.monotonic() + HANG_LIMIT_S
        while len(list(marks.glob("*.started"))) < 2:  # both workers are starting up
            assert run.poll() is None, run.communicate()[0]
            assert time.monotonic() < deadline, "the workers did not start"
            time.sleep(0.1)
        run.send_signal(signum)  # the controller alone, as kill or a CI runner would
        output, _ = run.communicate(timeout=HANG_LIMIT_S)
    finally:
        if run.poll() is None:
            os.killpg(run.pid, signal.SIGKILL)
            run.wait()
    assert run.returncode == pytest.ExitCode.INTERRUPTED, output
    assert "Traceback" not in output, output
    assert len(re.findall(r"^!+ KeyboardInterrupt.* !+$", output, flags=re.MULTILINE)) == 1, output
    # Each worker stopped through its own clean-up, not killed.
    assert sorted(p.name for p in marks.glob("*.cleaned-up")) == ["gw0.cleaned-up",
                                                                  "gw1.cleaned-up"]
    records = pytester.path / "out" / "run.jsonl"
    assert not records.exists() or records.read_text() == ""
