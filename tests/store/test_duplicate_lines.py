"""A record line written twice (a file concatenated with itself, a line copied, two resumes
appending the same episode) is one episode recorded twice: every reader of records keys them
by identity, counts the episode once and says what it dropped, in one line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from limbo_plugin import read_records
from limbo_plugin.cli import main
from limbo_plugin.episode import run_episode
from limbo_plugin.experiments import iter_worlds
from limbo_plugin.runconfig import RunConfig
from limbo_plugin.spec.registry import SpecRegistry
from limbo_plugin.store.read import scan_views
from limbo_plugin.store.runs import describe


@pytest.fixture(scope="module")
def lines(registry: SpecRegistry) -> list[str]:
    keys = list(iter_worlds(registry, ["incident_open"], [0], "all",
                            ["timeout_post", "timeout_late"]))
    config = RunConfig(agent="scripted:blind_retry")
    return [run_episode(key, config, registry=registry).model_dump_json() for key in keys]


def write(path: Path, lines: list[str]) -> Path:
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return path


def test_the_reader_keeps_each_episode_once_and_says_so(tmp_path: Path,
                                                        lines: list[str]) -> None:
    path = write(tmp_path / "r.jsonl", [*lines, lines[0], lines[0]])
    scan = scan_views(path)
    assert [v.episode_id for v in scan.records] == [json.loads(x)["episode_id"] for x in lines]
    assert scan.duplicates == 2
    assert scan.notices == [f"{path}: dropped 2 duplicate record line(s) (an episode already "
                            "recorded: same experiment, arm, repeat, world and configuration); "
                            "the last line of each episode is kept"]
    assert len(read_records(path)) == len(lines)


def test_the_last_line_of_an_episode_wins_in_the_place_of_the_first(tmp_path: Path,
                                                                    lines: list[str]) -> None:
    """A resumed run appends the re-run of an episode that had ended in an error."""
    errored = json.loads(lines[0])
    errored.update(error="infrastructure error: the provider went away", ts=None, eos=None,
                   overclaim=None)
    path = write(tmp_path / "r.jsonl", [json.dumps(errored), *lines[1:], lines[0]])
    views = scan_views(path).records
    assert views[0].episode_id == errored["episode_id"] and views[0].error is None
    assert len(views) == len(lines)


def test_limbo_summary_counts_a_duplicated_line_once(tmp_path: Path, lines: list[str],
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    """The duplicate used to count twice, and show as a pass^k repeat."""
    once = write(tmp_path / "once.jsonl", lines)
    twice = write(tmp_path / "twice.jsonl", [*lines, *lines])
    assert main(["summary", str(once)]) == 0
    expected = capsys.readouterr()
    assert main(["summary", str(twice)]) == 0
    got = capsys.readouterr()
    assert got.out == expected.out and "pass^" not in got.out
    assert expected.err == ""
    assert got.err == (f"limbo: {twice}: dropped {len(lines)} duplicate record line(s) (an "
                       "episode already recorded: same experiment, arm, repeat, world and "
                       "configuration); the last line of each episode is kept\n")


def test_limbo_runs_counts_each_episode_once(tmp_path: Path, lines: list[str]) -> None:
    run = describe(write(tmp_path / "r.jsonl", [*lines, lines[-1]]))
    assert (run.episodes, run.duplicates) == (len(lines), 1)


def test_limbo_gate_counts_a_duplicated_line_once(tmp_path: Path, lines: list[str],
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    gate = tmp_path / "gate.yaml"
    gate.write_text("name: g\nthresholds:\n  - {metric: duplicate_rate, family: lost_ack, "
                    "max: 0.5}\n")
    main(["gate", str(gate), "--records", str(write(tmp_path / "a.jsonl", lines))])
    expected = capsys.readouterr().out
    main(["gate", str(gate), "--records", str(write(tmp_path / "b.jsonl", [*lines, *lines]))])
    assert capsys.readouterr().out == expected
