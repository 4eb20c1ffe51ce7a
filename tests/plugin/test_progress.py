"""The live progress line: episodes done of the total, ETA, running duplicate rate per family,
cost against the limit, infrastructure errors; also under -n, quiet under -q, and no control
characters when the output is not a terminal."""

from __future__ import annotations

import re

import pytest

from limbo_plugin.plugin.progress import Progress
from limbo_plugin.store.view import EpisodeView, ViewUsage

LINE = re.compile(r"^limbo: (\d+)/(\d+) episodes \(\d+%\), \S+(, ETA \S+)? \| "
                  r"(duplicate rate .*\| )?(\d+) infrastructure errors?$")


@pytest.mark.slow
def test_the_line_under_xdist_in_a_log(project: pytest.Pytester) -> None:
    result = project.runpytest_subprocess("--experiment", "small", "-n", "2",
                                          "--limbo-progress", "0", "--tb=no")
    raw = result.stdout.str()
    lines = [line for line in result.stdout.lines if line.startswith("limbo: ")
             and "episodes" in line]
    assert lines, raw[-3000:]
    for line in lines:
        assert LINE.match(line), line
        assert "\r" not in line and "\x1b" not in line
    assert "\r" not in raw and "\x1b" not in raw, "stdout is a pipe: plain lines only"
    done = [int(LINE.match(line).group(1)) for line in lines]  # type: ignore[union-attr]
    assert done == sorted(done) and done[-1] <= 8
    assert all(LINE.match(line).group(2) == "8" for line in lines)  # type: ignore[union-attr]
    assert any("late_commit" in line for line in lines)


def test_the_line_serially_and_quiet_under_q(project: pytest.Pytester) -> None:
    shown = project.runpytest("--experiment", "small", "--limbo-progress", "0", "--tb=no",
                              "-p", "no:randomly")
    lines = [line for line in shown.stdout.lines if LINE.match(line)]
    assert [int(LINE.match(line).group(1)) for line in lines] == list(range(1, 9))  # type: ignore[union-attr]
    assert "redelivery 100.0% of 2" in lines[-1]
    quiet = project.runpytest("--experiment", "small", "--limbo-progress", "0", "-q")
    assert not any(line.startswith("limbo: ") and "episodes (" in line
                   for line in quiet.stdout.lines)
    off = project.runpytest("--experiment", "small", "--limbo-progress", "off")
    assert not any(LINE.match(line) for line in off.stdout.lines)


def test_a_bad_interval_is_one_line(project: pytest.Pytester) -> None:
    project.runpytest("--experiment", "small", "-k", "incident_open")
    before = (project.path / "reports" / "episodes.jsonl").read_text()
    result = project.runpytest("--experiment", "small", "--limbo-progress", "soon")
    assert (project.path / "reports" / "episodes.jsonl").read_text() == before, "not moved"
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    errors = [line for line in result.stderr.lines if line.strip()]
    assert errors == ["ERROR: --limbo-progress expects seconds between lines (0: every "
                      "episode) or 'off', got 'soon'"]


def outcome(family: str, duplicates: int, *, error: str | None = None,
            cost: float = 0.0) -> EpisodeView:
    return EpisodeView(episode_id="e", template="t", family=family, agent="litellm:m",
                   contract="native", docs="default", instruction="default",
                   condition="vanilla", operator="truthful", fired=True, ts=True,
                   eos=duplicates == 0, overclaim=False, duplicates=duplicates, error=error,
                   usage=ViewUsage(cost_usd=cost))


def test_the_line_counts_cost_errors_and_eta() -> None:
    progress = Progress(total=10)
    for item in (outcome("lost_ack", 0, cost=0.25), outcome("lost_ack", 1, cost=0.5),
                 outcome("late_commit", 2, cost=0.25),
                 outcome("late_commit", 0, error="provider down")):
        progress.done += 1
        progress.add(item)
    line = progress.line(125, 5.0, {"lost_ack": 0, "late_commit": 1}, per_episode=30)
    assert line == ("limbo: 4/10 episodes (40%), 2m05s, ETA 3m00s | duplicate rate lost_ack "
                    "50.0% of 2, late_commit 100.0% of 1 | cost $1.00 of $5 limit | "
                    "1 infrastructure error")


def test_records_that_arrive_before_a_teardown_are_all_counted() -> None:
    """Under -n the controller can take another worker's record before this episode's
    teardown report arrives: each record counts once, none is skipped."""
    from types import SimpleNamespace

    from limbo_plugin.plugin.progress import LiveProgress

    config = SimpleNamespace(pluginmanager=SimpleNamespace(get_plugin=lambda name: None))
    outcomes: dict[str, EpisodeView] = {}
    live = LiveProgress(config, outcomes, interval=3600.0, cost_limit=None,
                        family_order=lambda: ())

    def teardown(name: str) -> None:
        live.pytest_runtest_logreport(SimpleNamespace(
            when="teardown", nodeid=f"specs/experiments/small.yaml::{name}", failed=False))

    outcomes["a"] = outcome("late_commit", 1)  # worker 1's call report
    outcomes["b"] = outcome("lost_ack", 0)  # worker 2's, before worker 1's teardown
    teardown("a")
    teardown("b")
    outcomes["c"] = outcome("late_commit", 0)
    teardown("c")
    families = {name: (count.fired, count.duplicated)
                for name, count in live.progress.families.items()}
    assert families == {"late_commit": (2, 1), "lost_ack": (1, 0)}
    assert live.progress.done == 3
