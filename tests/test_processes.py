"""One way to stop a child process: SIGTERM, a grace period, then SIGKILL, for a process or its
whole group (a harness CLI and the helpers it started)."""

from __future__ import annotations

import signal
import subprocess
import sys
import time

from limbo_plugin.processes import kill_group, stop

IGNORES_TERM = ("import signal, sys, time\n"
                "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
                "print('ready', flush=True)\n"
                "time.sleep(600)\n")
ENDS_ON_TERM = ("import signal, sys, time\n"
                "signal.signal(signal.SIGTERM, lambda *_: sys.exit(3))\n"
                "print('ready', flush=True)\n"
                "time.sleep(600)\n")
LEAVES_A_CHILD = ("import subprocess, sys, time\n"
                  "child = subprocess.Popen([sys.executable, '-c', 'import time; "
                  "time.sleep(600)'])\n"
                  "print(child.pid, flush=True)\n"
                  "time.sleep(600)\n")


def started(script: str, **options: object) -> tuple[subprocess.Popen[str], str]:
    process = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE,
                               text=True, **options)  # type: ignore[call-overload]
    assert process.stdout is not None
    return process, process.stdout.readline().strip()  # ready: its handlers are installed


def test_a_process_that_ends_on_sigterm_is_given_the_chance() -> None:
    process, ready = started(ENDS_ON_TERM)
    assert ready == "ready"
    assert stop(process, grace_s=600) == 3


def test_a_process_that_ignores_sigterm_is_killed_after_the_grace_period() -> None:
    process, ready = started(IGNORES_TERM)
    assert ready == "ready"
    assert stop(process, grace_s=0.5) == -signal.SIGKILL
    assert process.returncode == -signal.SIGKILL


def test_stopping_a_finished_process_returns_its_status() -> None:
    process = subprocess.Popen([sys.executable, "-c", "raise SystemExit(7)"])
    process.wait()
    assert stop(process) == 7


def test_a_group_is_stopped_with_what_its_leader_started() -> None:
    process, child = started(LEAVES_A_CHILD, start_new_session=True)
    child_pid = int(child)
    try:
        assert stop(process, grace_s=600, group=True) == -signal.SIGTERM
        deadline = time.monotonic() + 120  # generous: the machine may be loaded
        while alive(child_pid) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not alive(child_pid)
    finally:
        kill_group(process.pid)  # nothing left is fine


def alive(pid: int) -> bool:
    """Whether ``pid`` still runs (a zombie awaiting its reaper has ended)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (FileNotFoundError, ProcessLookupError):
        return False
