"""What a ``python:`` agent leaves behind does not outlive its run: processes it started (and
the processes those started) end with its episode, and a non-daemon thread it never stops does
not keep the run alive after its last record (it is named, and the run ends with its own exit
status)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading

import pytest

FINISH = ('session.call("finish", {"status": "completed", "summary": "done", '
          '"uncertain_operations": []})')

SPAWNING_AGENT = f"""\
import os
import subprocess
import sys


class Spawns:
    name = "spawns"

    def run(self, session):
        # a child that sleeps, and a grandchild left behind when its parent exits at once
        sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
        orphan = subprocess.Popen([sys.executable, "-c",
                                   "import subprocess, sys; subprocess.Popen([sys.executable, "
                                   "'-c', 'import time; time.sleep(600)'], "
                                   "start_new_session=True); print('spawned')"])
        orphan.wait()
        with open(os.environ["LIMBO_TEST_PIDS"], "a") as out:
            out.write(f"{{sleeper.pid}}\\n")
        {FINISH}
"""

THREAD_AGENT = f"""\
import threading
import time
from concurrent.futures import ThreadPoolExecutor

POOLS = []


class Lingers:
    name = "lingers"

    def run(self, session):
        threading.Thread(target=time.sleep, args=(600,), name="agent-poller").start()
        # two pools kept and never shut down: one idle (Python ends its worker at exit), one
        # whose task hangs (that worker would keep the run alive like the thread above)
        POOLS.append(ThreadPoolExecutor(thread_name_prefix="agent-idle-pool"))
        POOLS[-1].submit(len, "x").result()
        POOLS.append(ThreadPoolExecutor(thread_name_prefix="agent-busy-pool"))
        POOLS[-1].submit(time.sleep, 600)
        {FINISH}
"""

IDLE_POOL_AGENT = f"""\
from concurrent.futures import ThreadPoolExecutor


POOL = ThreadPoolExecutor(thread_name_prefix="agent-idle-pool")


class LeavesAPool:
    name = "leaves-a-pool"

    def run(self, session):
        # a pool kept and never shut down, as litellm keeps one for its logging: its worker
        # waits on its queue until Python ends it at exit
        POOL.submit(len, "x").result()
        {FINISH}
"""


def _python_processes_sleeping(marker: str) -> list[int]:
    """Processes of this machine whose command line holds ``marker``."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as handle:
                command = handle.read().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if marker in command:
            found.append(int(entry))
    return found


@pytest.mark.skipif(not os.path.isdir("/proc"), reason="counts processes through /proc")
def test_the_processes_an_agent_starts_end_with_its_episode(project: pytest.Pytester,
                                                            monkeypatch: pytest.MonkeyPatch
                                                            ) -> None:
    marker = "time.sleep(600)"
    before = set(_python_processes_sleeping(marker))
    pids = project.path / "pids.txt"
    monkeypatch.setenv("LIMBO_TEST_PIDS", str(pids))
    (project.path / "spawning_agent.py").write_text(SPAWNING_AGENT)
    result = project.runpytest_subprocess(
        "--experiment", "small", "-k", "incident_open and lost_ack",
        "--agent", "python:spawning_agent:Spawns")
    lines = (project.path / "reports" / "episodes.jsonl").read_text().splitlines()
    assert len(lines) == 1 and json.loads(lines[0])["error"] is None, result.stdout.str()
    assert pids.read_text().strip()  # the agent did start its processes
    left = set(_python_processes_sleeping(marker)) - before
    assert not left, f"still running after the run: {left}"


@pytest.mark.slow
def test_a_thread_an_agent_leaves_does_not_keep_the_run_alive(project: pytest.Pytester) -> None:
    (project.path / "thread_agent.py").write_text(THREAD_AGENT)
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "--experiment", "small", "-k",
         "incident_open and lost_ack", "--agent", "python:thread_agent:Lingers", "-p",
         "no:cacheprovider"], cwd=project.path, capture_output=True, text=True,
        timeout=300)  # a hang limit: the thread sleeps for 600 s
    # the run's own exit status: its one episode failed (the agent finished without the task)
    assert "1 failed" in done.stdout and done.returncode == 1, done.stdout[-2000:]
    assert "2 thread(s) an agent started were still running" in done.stderr, done.stderr
    assert "agent-poller" in done.stderr and "agent-busy-pool" in done.stderr
    assert "agent-idle-pool" not in done.stderr
    records = (project.path / "reports" / "episodes.jsonl").read_text().splitlines()
    assert len(records) == 1


def test_an_idle_thread_pool_does_not_hold_the_run(project: pytest.Pytester) -> None:
    """A pool's idle worker is not an agent's leftover: the run ends without waiting out the
    grace for it or naming it (before, every serial run of a litellm agent waited 10 s for
    litellm's logging pool and then blamed the agent)."""
    (project.path / "pool_agent.py").write_text(IDLE_POOL_AGENT)
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "--experiment", "small", "-k",
         "incident_open and lost_ack", "--agent", "python:pool_agent:LeavesAPool", "-p",
         "no:cacheprovider"], cwd=project.path, capture_output=True, text=True, timeout=300)
    assert "1 failed" in done.stdout and done.returncode == 1, done.stdout[-2000:]
    assert "still running" not in done.stderr, done.stderr
    assert len((project.path / "reports" / "episodes.jsonl").read_text().splitlines()) == 1


STOPPABLE_THREAD_AGENT = f"""\
import os
import threading
import time

STOP_FILE = os.path.abspath("stop-the-poller")  # the run's directory: the test's project


def poll():
    while not os.path.exists(STOP_FILE):
        time.sleep(0.02)


class Lingers:
    name = "lingers"

    def run(self, session):
        threading.Thread(target=poll, name="agent-poller").start()
        {FINISH}
"""


def test_a_run_inside_another_leaves_its_host_process_alone(project: pytest.Pytester) -> None:
    """A run inside another process's session (pytester's in-process runs, a notebook) does not
    end that process over a thread its agent left: only the run that owns its process does."""
    (project.path / "stoppable_agent.py").write_text(STOPPABLE_THREAD_AGENT)
    project.syspathinsert()
    try:
        result = project.runpytest("--experiment", "small", "-k", "incident_open and lost_ack",
                                   "--agent", "python:stoppable_agent:Lingers")
        result.assert_outcomes(failed=1)  # and this process is still here to see it
    finally:
        # The thread is stopped through a file, not the agent module: pytester takes the
        # modules an in-process run imported out of sys.modules when the run returns, and a
        # thread left waiting would keep this test process alive at its exit.
        (project.path / "stop-the-poller").touch()
        for thread in threading.enumerate():
            if thread.name == "agent-poller":
                thread.join(timeout=30)
                assert not thread.is_alive(), "the agent's thread did not stop"
