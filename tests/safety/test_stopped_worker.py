"""A worker that stops giving signs of life (SIGSTOP) does not hang the run: the controller ends
it after its heartbeat falls silent, says which worker and episode in one line, pytest-xdist
replaces it, and every other episode is recorded."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from limbo_plugin.plugin.worker_watch import WorkerWatch, heartbeat_dir, silence_limit_s

STOP_ONCE = """\
import os, signal

MARK = os.environ["LIMBO_TEST_STOP_MARK"]


class StopOnce:
    \"\"\"The first episode to run stops its own worker (as SIGSTOP from outside would); every
    other one finishes at once.\"\"\"

    def run(self, session):
        try:
            fd = os.open(MARK, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
        except FileExistsError:
            session.call("finish", {"status": "failed", "summary": "did nothing",
                                    "uncertain_operations": []})
            return
        os.write(fd, f"{os.getpid()} {session.episode_id}".encode())
        os.close(fd)
        os.kill(os.getpid(), signal.SIGSTOP)
"""


def test_the_silence_limit_follows_the_episode_limit_up_to_a_minute() -> None:
    assert silence_limit_s(5) == 5 + 5 + 15  # the limit, its grace, the margin
    assert silence_limit_s(None) == silence_limit_s(1800) == 60 + 15


class Config:
    pluginmanager: Any = None


def test_a_silent_worker_of_this_controller_is_ended_and_named(tmp_path: Path) -> None:
    directory = heartbeat_dir(tmp_path / "episodes.jsonl")
    directory.mkdir()
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    stranger = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    try:
        os.kill(child.pid, signal.SIGSTOP)
        for worker, pid, controller in (("gw3", child.pid, os.getpid()),
                                        ("gw4", stranger.pid, os.getpid() + 1)):
            beat = directory / f"{worker}.json"
            beat.write_text(json.dumps({"worker": worker, "pid": pid, "controller": controller,
                                        "episode": "specs/x.yaml::episode[a]"}))
            os.utime(beat, (time.time() - 100, time.time() - 100))
        fresh = directory / "gw5.json"
        fresh.write_text(json.dumps({"worker": "gw5", "pid": child.pid,
                                     "controller": os.getpid(), "episode": None}))
        watch = WorkerWatch(Config(), directory, limit_s=30)  # type: ignore[arg-type]
        watch.check()
        assert child.wait(timeout=60) == -signal.SIGKILL, "a stopped child is ended"
        assert stranger.poll() is None, "a process the heartbeat does not tie to us is not"
        assert fresh.exists(), "a worker that beat recently is left alone"
        assert list(watch.ended) == ["gw3"]
        said = watch.ended["gw3"]
        assert f"worker gw3 (pid {child.pid}) gave no sign of life for 100 s" in said, said
        assert "while running specs/x.yaml::episode[a]" in said and "--limbo-resume" in said
    finally:
        for process in (child, stranger):
            process.kill()
            process.wait()


@pytest.mark.early
@pytest.mark.slow
def test_a_stopped_worker_is_ended_and_the_run_finishes(project: pytest.Pytester,
                                                        tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    mark = tmp_path / "stopped"
    monkeypatch.setenv("LIMBO_TEST_STOP_MARK", str(mark))
    (project.path / "stop_once.py").write_text(STOP_ONCE)
    try:
        run = subprocess.run(
            [sys.executable, "-m", "pytest", "-p", "no:randomly", "--experiment", "small",
             "--agent", "python:stop_once:StopOnce", "--limbo-episode-timeout", "5",
             "-n", "2"],
            cwd=project.path, capture_output=True, text=True, timeout=600)
    finally:
        with contextlib.suppress(OSError, ValueError):  # if it was not ended, end it here
            os.kill(int(mark.read_text().split()[0]), signal.SIGKILL)
    output = run.stdout + run.stderr
    pid, stopped_episode = mark.read_text().split()
    said = [line for line in output.splitlines() if line.startswith("limbo: worker ")]
    assert len(said) == 1, output[-3000:]
    assert f"(pid {pid}) gave no sign of life" in said[0] and "ended and is replaced" in said[0]
    assert stopped_episode in said[0] or stopped_episode.split("/")[-1] in said[0], said[0]
    assert "INTERNALERROR" not in output and "Traceback" not in output, output[-3000:]
    assert run.returncode == pytest.ExitCode.TESTS_FAILED, output[-3000:]
    records = [json.loads(line) for line in
               (project.path / "reports" / "episodes.jsonl").read_text().splitlines()]
    collected = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:randomly", "--experiment", "small",
         "--collect-only", "-q"], cwd=project.path, capture_output=True, text=True, timeout=300)
    episodes = [line for line in collected.stdout.splitlines() if "::" in line]
    assert len(records) == len(episodes) - 1, output[-3000:]
    assert len({r["episode_id"] for r in records}) == len(records)
    assert stopped_episode not in {r["episode_id"] for r in records}
    assert not heartbeat_dir(project.path / "reports" / "episodes.jsonl").exists()
