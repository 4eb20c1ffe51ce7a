"""``--limbo-shard`` and ``limbo merge``: shards partition a run by world, stably and in
balance, and their merged records are the unsharded run's."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from limbo_plugin.cli import main
from limbo_plugin.errors import UsageError
from limbo_plugin.experiments import load_experiment
from limbo_plugin.records import run_fingerprint
from limbo_plugin.runconfig import RunConfig
from limbo_plugin.sharding import Shard, assign_worlds, expected_costs, shard_of_each
from limbo_plugin.spec.registry import SpecRegistry
from limbo_plugin.store.merge import merge_records
from limbo_plugin.store.read import RecordFileError

PAIRED = """\
name: paired
templates: [incident_open, invoice_batch, hotfix_long, release_announcement]
instances: [0]
modes: [none, timeout_post, timeout_late, redelivery, http500_post]
conditions: [vanilla, guard]
"""


@pytest.fixture
def paired(project: pytest.Pytester) -> pytest.Pytester:
    (project.path / "specs" / "experiments" / "paired.yaml").write_text(PAIRED)
    return project


def lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def identities(path: Path) -> set[tuple[str, str]]:
    return {(r["episode_id"], run_fingerprint(type("R", (), r))) for r in lines(path)}


def without_run_ids(path: Path) -> list[str]:
    return sorted(json.dumps({k: v for k, v in r.items() if k != "run_id"}, sort_keys=True)
                  for r in lines(path))


def run_shard(project: pytest.Pytester, shard: str, out: str, *extra: str) -> Path:
    project.runpytest("--experiment", "paired", "--limbo-shard", shard,
                      f"--limbo-records={project.path / out}", *extra)
    return project.path / out


def test_three_shards_merged_are_the_unsharded_run(paired: pytest.Pytester) -> None:
    whole = run_shard(paired, "0/1", "whole.jsonl")
    shards = [run_shard(paired, f"{k}/3", f"shard{k}.jsonl") for k in range(3)]
    assert all(lines(s) for s in shards), "every shard got episodes"
    merged = paired.path / "merged.jsonl"
    assert main(["merge", str(merged), *map(str, shards)]) == 0
    assert len(lines(merged)) == len(lines(whole)) > 30
    assert without_run_ids(merged) == without_run_ids(whole)
    # Disjoint, and every world's paired variants (vanilla and guard) on one shard.
    worlds = [{r["episode_id"] for r in lines(s)} for s in shards]
    assert not (worlds[0] & worlds[1] or worlds[0] & worlds[2] or worlds[1] & worlds[2])
    for shard in shards:
        conditions: dict[str, set[str]] = {}
        for record in lines(shard):
            conditions.setdefault(record["episode_id"], set()).add(record["condition"])
        assert all(found == {"vanilla", "guard"} for found in conditions.values())


@pytest.mark.slow
def test_a_shard_is_the_same_on_a_rerun_and_under_xdist(paired: pytest.Pytester) -> None:
    first = identities(run_shard(paired, "1/3", "first.jsonl"))
    again = identities(run_shard(paired, "1/3", "again.jsonl"))
    paired.runpytest_subprocess("--experiment", "paired", "--limbo-shard", "1/3", "-n", "2",
                                f"--limbo-records={paired.path / 'xdist.jsonl'}")
    assert first and first == again == identities(paired.path / "xdist.jsonl")


def test_the_shard_index_can_come_from_the_environment(paired: pytest.Pytester,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("JOB_COMPLETION_INDEX", "2")
    from_env = identities(run_shard(paired, "env:JOB_COMPLETION_INDEX/3", "env.jsonl"))
    monkeypatch.delenv("JOB_COMPLETION_INDEX")
    assert from_env and from_env == identities(run_shard(paired, "2/3", "given.jsonl"))


def test_a_shard_applies_after_keyword_selection(paired: pytest.Pytester) -> None:
    result = paired.runpytest("--experiment", "paired", "-k", "redelivery", "--limbo-shard",
                              "0/2", "--collect-only", "-q")
    selected = [line for line in result.outlines if "::" in line]
    assert selected and all("redelivery" in line for line in selected)


@pytest.mark.parametrize(("value", "message"), [
    ("3/3", "expected K/N with 0 ≤ K < N"),
    ("1/0", "expected K/N"),
    ("a/3", "--limbo-shard expects K/N"),
    ("1-3", "--limbo-shard expects K/N"),
    ("env:LIMBO_TEST_UNSET/3", "the environment variable LIMBO_TEST_UNSET is not set"),
])
def test_bad_shards_are_one_line_usage_errors(paired: pytest.Pytester, value: str,
                                              message: str) -> None:
    result = paired.runpytest("--experiment", "paired", "--limbo-shard", value)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert message in result.stderr.str()
    with pytest.raises(UsageError, match="--limbo-shard"):
        Shard.parse(value, environ={})


def test_the_index_variable_must_be_a_number() -> None:
    with pytest.raises(UsageError, match="is 'x', not a shard number"):
        Shard.parse("env:I/3", environ={"I": "x"})
    assert Shard.parse("env:I/3", environ={"I": "2"}) == Shard(2, 3)


# -- balance -------------------------------------------------------------------------------------
def test_worlds_go_most_expensive_first_to_the_least_loaded_shard() -> None:
    assignment = assign_worlds({"a": 5.0, "b": 4.0, "c": 3.0, "d": 3.0, "e": 1.0}, 2)
    loads = [sum(c for w, c in {"a": 5, "b": 4, "c": 3, "d": 3, "e": 1}.items()
                 if assignment[w] == shard) for shard in range(2)]
    assert sorted(loads) == [8, 8]
    assert assign_worlds({"a": 1.0}, 3) == {"a": 0}


def test_the_default_experiment_is_balanced_by_expected_cost(registry: SpecRegistry) -> None:
    experiment = load_experiment(registry.root / "experiments" / "default.yaml", registry)
    episodes = experiment.episodes(registry, {}, RunConfig())
    for count in (2, 3, 8):
        loads = expected_costs(episodes, registry, count)
        assert max(loads) / min(loads) < 1.05, (count, loads)
        shards = shard_of_each(episodes, registry, count)
        assert set(shards) == set(range(count))
        assert shard_of_each(list(reversed(episodes)), registry, count) == shards[::-1], \
            "the assignment depends on the episodes, not on their order"


# -- merge ---------------------------------------------------------------------------------------
@pytest.fixture
def shard_files(paired: pytest.Pytester) -> list[Path]:
    return [run_shard(paired, f"{k}/3", f"s{k}.jsonl") for k in range(3)]


def test_merge_is_idempotent(shard_files: list[Path], tmp_path: Path) -> None:
    out = tmp_path / "out.jsonl"
    merge_records(out, shard_files)
    merged = out.read_bytes()
    twice = tmp_path / "twice.jsonl"
    result = merge_records(twice, [out, *shard_files])  # merging the output with its inputs
    assert twice.read_bytes() == merged and result.duplicates == len(lines(out))
    repeated = tmp_path / "repeated.jsonl"
    merge_records(repeated, [*shard_files, shard_files[1]])  # one shard twice
    assert repeated.read_bytes() == merged
    again = merge_records(out, shard_files)  # over an earlier merge: that one is kept
    assert out.read_bytes() == merged and again.kept_previous is not None
    assert again.kept_previous.read_bytes() == merged


def test_run_ids_do_not_make_a_conflict(shard_files: list[Path], tmp_path: Path) -> None:
    other_run = tmp_path / "other.jsonl"
    other_run.write_text("".join(json.dumps({**r, "run_id": "another-run"}) + "\n"
                                 for r in lines(shard_files[0])))
    result = merge_records(tmp_path / "out.jsonl", [shard_files[0], other_run])
    assert result.written == len(lines(shard_files[0]))


def test_different_records_of_one_episode_are_a_conflict_naming_both(
        shard_files: list[Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    records = lines(shard_files[0])
    records[2]["duplicates"] += 1
    changed = tmp_path / "changed.jsonl"
    changed.write_text("".join(json.dumps(r) + "\n" for r in records))
    with pytest.raises(RecordFileError) as error:
        merge_records(tmp_path / "out.jsonl", [shard_files[0], changed])
    message = str(error.value)
    assert f"{shard_files[0]}:3 and {changed}:3" in message
    assert records[2]["episode_id"] in message
    assert not (tmp_path / "out.jsonl").exists(), "nothing is written on a conflict"
    assert main(["merge", str(tmp_path / "out.jsonl"), str(shard_files[0]), str(changed)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("limbo: ")


def test_one_world_in_two_experiments_or_arms_is_two_episodes_not_a_conflict(
        shard_files: list[Path], tmp_path: Path) -> None:
    """The merge identifies a record as the store's reader does: experiment, arm, repeat,
    world and configuration. The same world run in two experiments (E2 and E3 share their
    worlds) or two arms is two episodes, both kept; within one arm it is still a conflict."""
    records = lines(shard_files[0])[:3]
    by_experiment: list[Path] = []
    for name, arm in (("e2", None), ("e3", None), ("e3", "b")):
        path = tmp_path / f"{name}-{arm}.jsonl"
        path.write_text("".join(json.dumps({**r, "experiment": name, "arm": arm,
                                            "duplicates": r["duplicates"] + len(by_experiment)})
                                + "\n" for r in records))
        by_experiment.append(path)
    out = tmp_path / "out.jsonl"
    result = merge_records(out, by_experiment)
    assert result.written == 9 and result.duplicates == 0
    assert {(r["experiment"], r["arm"]) for r in lines(out)} == {("e2", None), ("e3", None),
                                                                  ("e3", "b")}
    clash = tmp_path / "clash.jsonl"
    clash.write_text("".join(json.dumps({**r, "experiment": "e3", "arm": "b"}) + "\n"
                             for r in records))
    with pytest.raises(RecordFileError, match="in experiment e3 in arm b"):
        merge_records(tmp_path / "out2.jsonl", [by_experiment[2], clash])


def test_a_successful_record_supersedes_an_infrastructure_error(shard_files: list[Path],
                                                               tmp_path: Path) -> None:
    records = lines(shard_files[0])
    failed = tmp_path / "failed.jsonl"
    failed.write_text(json.dumps({**records[0], "error": "provider down"}) + "\n")
    for order in ([failed, shard_files[0]], [shard_files[0], failed]):
        out = tmp_path / "out.jsonl"
        result = merge_records(out, order)
        assert result.superseded_errors == 1
        assert all(r["error"] is None for r in lines(out))


def test_a_torn_last_line_is_skipped_and_other_junk_is_an_error(shard_files: list[Path],
                                                               tmp_path: Path) -> None:
    torn = tmp_path / "torn.jsonl"
    torn.write_text(shard_files[0].read_text() + '{"episode_id": "x", "tem')
    result = merge_records(tmp_path / "out.jsonl", [torn])
    assert result.torn_lines == 1 and result.written == len(lines(shard_files[0]))
    junk = tmp_path / "junk.jsonl"
    junk.write_text("not json\n" + shard_files[0].read_text())
    with pytest.raises(RecordFileError, match=r"junk.jsonl:1: not an episode record"):
        merge_records(tmp_path / "out.jsonl", [junk])
