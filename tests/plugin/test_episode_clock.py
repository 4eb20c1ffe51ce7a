"""The benchmarks' episode clock (``benchmarks/episode_clock.py``) sees every episode of a run.

``plugin_overhead.py --floor`` subtracts what it measures from the run's CPU and instruction
count; if it stopped seeing episodes (``run_episode`` looked up another way), the floor would
silently become the whole run.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"


def clocked_run(project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, records: str, *,
                twice: bool) -> tuple[float, int, list[str]]:
    clock = project.path / f"{records}.cpu"
    monkeypatch.setenv("PYTHONPATH", str(BENCHMARKS))
    monkeypatch.setenv("LIMBO_BENCH_EPISODE_CPU", str(clock))
    if twice:
        monkeypatch.setenv("LIMBO_BENCH_EPISODES_TWICE", "1")
    else:
        monkeypatch.delenv("LIMBO_BENCH_EPISODES_TWICE", raising=False)
    project.runpytest_subprocess("-p", "episode_clock", "--experiment", "small",
                                 "--limbo-records", f"{records}.jsonl")
    seconds, count = clock.read_text(encoding="utf-8").split()
    lines = (project.path / f"{records}.jsonl").read_text(encoding="utf-8").splitlines()
    return float(seconds), int(count), lines


def without_run_id(lines: list[str]) -> list[str]:
    return sorted(json.dumps({k: v for k, v in json.loads(line).items() if k != "run_id"})
                  for line in lines)


def test_the_clock_counts_every_episode_and_running_each_twice_records_each_once(
        project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    seconds, count, once = clocked_run(project, monkeypatch, "once", twice=False)
    assert count == len(once) == 8 and seconds > 0
    seconds, count, doubled = clocked_run(project, monkeypatch, "twice", twice=True)
    assert count == 8 and seconds > 0, "the clock counts calls of run_episode, not inner runs"
    assert without_run_id(doubled) == without_run_id(once), \
        "the second run of an episode gives the same record, written once"
