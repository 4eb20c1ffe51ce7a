"""The episode time limit holds whatever the agent's code does.

An agent can swallow :class:`EpisodeTimeout` with a bare ``except:`` or disarm the alarm with
``signal.alarm(0)``; the watchdog raises again from its own thread, and an agent that swallows
every one is given up: its record says so, and its worker is replaced (under ``-n``) or the run
stops with one line (serial). Every case ends with the episode recorded as a timeout.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time

import pytest

from limbo_plugin.agents import AgentSession
from limbo_plugin.episode import run_episode
from limbo_plugin.plugin.controller import INFRASTRUCTURE_ERROR
from limbo_plugin.records import EpisodeKey
from limbo_plugin.spec.registry import SpecRegistry

KEY = EpisodeKey(template="invoice_batch", instance=0, focal_write="charge_1",
                 fault_mode="timeout_post")


class Disarms:
    name = "disarms"

    def run(self, session: AgentSession) -> None:
        signal.alarm(0)
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, signal.SIG_IGN)
        while True:
            time.sleep(0.01)


class SwallowsOnce:
    name = "swallows_once"

    def run(self, session: AgentSession) -> None:
        try:
            while True:
                time.sleep(0.01)
        except:  # noqa: E722  # the point: a bare except
            pass
        while True:
            sum(range(1000))


@pytest.mark.parametrize("agent", [Disarms(), SwallowsOnce()], ids=lambda a: a.name)
def test_a_disarmed_or_swallowed_limit_still_ends_the_episode(registry: SpecRegistry,
                                                              agent: object) -> None:
    record = run_episode(KEY, registry=registry, agent=agent,  # type: ignore[arg-type]
                         time_limit_s=1)
    assert record.error is not None and "wall-clock limit of 1 s" in record.error


FOREVER = '''
import time


class Forever:
    name = "forever"

    def run(self, session):
        session.call("wait", {"seconds": 1})
        while True:
            try:
                time.sleep(0.05)
            except:  # noqa: E722
                pass
'''


@pytest.mark.slow
@pytest.mark.parametrize("workers", [["-n", "2"], []], ids=["xdist", "serial"])
def test_an_agent_that_swallows_every_timeout_is_given_up_and_recorded(
        project: pytest.Pytester, workers: list[str]) -> None:
    (project.path / "hostile_agent.py").write_text(FOREVER)
    records = project.path / "out" / "run.jsonl"
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:randomly", "--experiment", "small",
         "-k", "invoice_batch and (timeout_post or redelivery)", "--limbo-records=out/run.jsonl",
         "--agent", "python:hostile_agent:Forever", "--limbo-episode-timeout", "1", *workers],
        cwd=project.path, capture_output=True, text=True, timeout=300)
    output = run.stdout + run.stderr
    assert "Traceback" not in output, output[-3000:]
    lines = [json.loads(line) for line in records.read_text().splitlines()]
    errors = [line["error"] for line in lines]
    assert all("did not stop" in error for error in errors), errors
    if workers:  # the worker is replaced and the other episode runs too
        assert len(lines) == 2, output[-3000:]
        assert run.returncode == INFRASTRUCTURE_ERROR, output[-3000:]  # both errored
    else:  # one episode recorded, the run stops with one line
        assert len(lines) == 1 and run.returncode == 3, output[-3000:]
        said = [line for line in run.stderr.splitlines() if "did not stop" in line]
        assert len(said) == 1 and "--limbo-resume" in said[0], run.stderr[-2000:]
    assert not (records.parent / ".run.jsonl.abandoned").exists()
