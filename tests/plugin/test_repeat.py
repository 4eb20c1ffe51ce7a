"""``--limbo-repeat K``: each episode K times on its same world, ids carrying the repeat index,
and pass^k (tau2-bench's definition) in the summary."""

from __future__ import annotations

import json
from collections import defaultdict
from math import comb

import pytest

from limbo_plugin.report.passk import pass_hat_k, pass_k_rows
from limbo_plugin.store.view import EpisodeView


def records(project: pytest.Pytester) -> list[dict]:
    path = project.path / "reports" / "episodes.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_each_episode_runs_k_times_on_the_same_world(project: pytest.Pytester) -> None:
    result = project.runpytest("--experiment", "small", "--limbo-repeat", "3", "-p",
                               "no:randomly", "-k", "incident_open")
    out = result.stdout.str()
    rows = records(project)
    assert len(rows) == 3 * 4
    result.assert_outcomes(passed=6, failed=3, xfailed=3, deselected=12)
    runs: dict[str, list[dict]] = defaultdict(list)
    for row in rows:
        runs[row["episode_id"]].append(row)
    for episode_id, repeated in runs.items():
        assert sorted(r["repeat"] for r in repeated) == [0, 1, 2]
        by_repeat = {r["repeat"]: r for r in repeated}
        assert by_repeat[0]["test_id"] == episode_id
        assert by_repeat[2]["test_id"] == f"{episode_id}-rep2"
        same = {json.dumps({k: v for k, v in r.items()
                            if k not in ("run_id", "repeat", "test_id")}, sort_keys=True)
                for r in repeated}
        assert len(same) == 1, "a scripted agent on the same world does the same thing"
    assert "pass^k" in out and "pass^3" in out


def test_ids_carry_the_repeat_index_and_select_with_k(project: pytest.Pytester) -> None:
    result = project.runpytest("--experiment", "small", "--limbo-repeat", "2",
                               "--collect-only", "-q", "-k", "incident_open and rep1")
    ids = [line for line in result.stdout.lines if "::" in line]
    assert ids and all(line.endswith("-rep1") for line in ids)
    assert len(ids) == 4


def test_resume_runs_only_the_missing_repeats(project: pytest.Pytester) -> None:
    project.runpytest("--experiment", "small", "-k", "incident_open")
    assert len(records(project)) == 4
    result = project.runpytest("--experiment", "small", "-k", "incident_open",
                               "--limbo-repeat", "2", "--limbo-resume")
    assert result.parseoutcomes()["skipped"] == 4, "the single run is repeat 0"
    rows = records(project)
    assert len(rows) == 8 and sorted(r["repeat"] for r in rows) == [0] * 4 + [1] * 4


@pytest.mark.parametrize("value", ["0", "two", "-1"])
def test_a_bad_repeat_is_one_line(project: pytest.Pytester, value: str) -> None:
    result = project.runpytest("--experiment", "small", "--limbo-repeat", value)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "--limbo-repeat" in result.stderr.str() and value in result.stderr.str()
    assert not (project.path / "reports" / "episodes.jsonl").exists()


def test_pass_hat_k_is_tau2_benchs() -> None:
    # tau2-bench: mean over tasks of C(successes, k) / C(trials, k).
    assert pass_hat_k([(3, 2)], 1) == pytest.approx(2 / 3)
    assert pass_hat_k([(3, 2)], 2) == pytest.approx(1 / 3)
    assert pass_hat_k([(3, 2)], 3) == 0
    assert pass_hat_k([(4, 4), (4, 1)], 2) == pytest.approx((1 + 0) / 2)
    assert pass_hat_k([(4, 3), (2, 2)], 3) == pytest.approx(comb(3, 3) / comb(4, 3))
    assert pass_hat_k([(1, 1)], 2) is None


def outcome(episode: str, family: str, passed: bool, repeat: int) -> EpisodeView:
    return EpisodeView(episode_id=episode, template="t", family=family, agent="scripted:x",
                   contract="native", docs="default", instruction="default",
                   condition="vanilla", operator="truthful", fired=True, ts=True, eos=passed,
                   overclaim=False, duplicates=0 if passed else 1, repeat=repeat)


def test_pass_k_rows_per_family_and_over_faulted() -> None:
    rows = [outcome("a", "lost_ack", p, i) for i, p in enumerate([True, True, False])]
    rows += [outcome("b", "late_commit", p, i) for i, p in enumerate([True, False, False])]
    rows += [outcome("c", "none", True, i) for i in range(3)]
    most, table = pass_k_rows(rows, family_order=["none", "lost_ack", "late_commit"])
    assert most == 3
    got = {r.family: r.pass_k for r in table}
    assert got["lost_ack"] == pytest.approx([2 / 3, 1 / 3, 0])
    assert got["late_commit"] == pytest.approx([1 / 3, 0, 0])
    assert got["all_faulted"] == pytest.approx([1 / 2, 1 / 6, 0])
    assert [r.family for r in table] == ["none", "lost_ack", "late_commit", "all_faulted"]


def test_merge_keeps_every_repeat(project: pytest.Pytester) -> None:
    from limbo_plugin.cli import main

    project.runpytest("--experiment", "small", "--limbo-repeat", "2", "-k", "incident_open")
    source = project.path / "reports" / "episodes.jsonl"
    out = project.path / "merged.jsonl"
    assert main(["merge", str(out), str(source)]) == 0
    assert len(out.read_text().splitlines()) == 8


def test_the_report_shows_pass_k(project: pytest.Pytester, registry) -> None:
    import json as json_

    from limbo_plugin.report.build import make_report

    project.runpytest("--experiment", "small", "--limbo-repeat", "3", "-k", "incident_open")
    source = project.path / "reports" / "episodes.jsonl"
    outcome = make_report([source], registry, project.path / "report")
    table = json_.loads((project.path / "report" / "tables" / "pass_k.json").read_text())
    text = json_.dumps(table)
    assert "pass^3" in text
    html = (outcome.index).read_text()
    assert 'data-table="pass_k"' in html
    rows = [outcome_row for outcome_row in table["rows"] if outcome_row["family"] == "lost_ack"]
    assert rows and rows[0]["episodes"] == 1
