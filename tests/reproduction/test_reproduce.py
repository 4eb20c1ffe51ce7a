"""``limbo reproduce``: the paper's study in one command — its plan matches the designs and what
pytest selects, it stops before spending or before a missing harness, and its small run goes
end to end into a report holding every paper table and figure."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from limbo_plugin.agents.harness_install import (
    find_harness,
    installed_executable,
)
from limbo_plugin.cli import main
from limbo_plugin.reproduction.design import PAPER
from limbo_plugin.reproduction.study import Study
from limbo_plugin.spec.registry import SpecRegistry

ROOT = Path(__file__).resolve().parents[2]
SPECS = ROOT / "specs"
DESIGN = {"e1": 7686, "e2": 8028, "e2k": 1784, "e3": 2904, "e3k": 968, "e4": 1728,
          "e5": 1960, "e6": 1128}
"""The README's experiment table (episodes over every agent of the spec)."""


def study(**options: object) -> Study:
    defaults: dict[str, object] = {"out": Path("out"), "registry": SpecRegistry.load(SPECS),
                                   "agents": None, "harnesses": None}
    return Study(**{**defaults, **options})  # type: ignore[arg-type]


def test_the_papers_runs_hold_every_designed_episode_once() -> None:
    paper = study()
    runs = [r for r in paper.plan() if not r.selection.second_run]
    for experiment, total in DESIGN.items():
        own = [r for r in runs if r.experiment == experiment]
        ids = [i for r in own for i in paper.expected_ids(r)]
        assert len(ids) == len(set(ids)) == total, experiment
        # one record file per agent, each agent picked from the spec's list by name, so every
        # arm keeps its own agents (E4's ablations run two models, not four)
        assert len({r.records for r in own}) == len(own)
        assert all(r.agent is None and r.selection.agent for r in own)
    e4 = {r.planned_agent: len(paper.expected(r)) for r in runs if r.experiment == "e4"}
    assert e4 == {"litellm:openai/claude-opus-5.5": 336, "litellm:openai/gpt-6-sol": 336,
                  "litellm:openai/gemini-3.8-flash": 528,
                  "litellm:openai/mai-code-1.1-flash": 528}


def test_gpt41_runs_in_its_own_lane(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["reproduce", "--print", "--only", "e1", "-n", "16", "--out", "out"]) == 0
    out = capsys.readouterr().out
    lane = [line for line in out.splitlines() if "gpt-4.1" in line and line.startswith("pytest")]
    assert lane == ["pytest --experiment e1 -k litellm-openai/gpt-4.1 -n 2 "
                    "--limbo-records=out/records/e1/litellm-openai_gpt-4.1.jsonl -q --tb=no -rN"]
    assert "pytest --experiment e1 -k litellm-openai/gpt-6-sol -n 16 " in out


def test_the_stability_repeat_is_declared_on_e2s_worlds(capsys: pytest.CaptureFixture[str]
                                                        ) -> None:
    assert main(["reproduce", "--print", "--only", "e1", "--agents", "litellm:openai/my-model",
                 "--out", "out"]) == 0
    out = capsys.readouterr().out
    assert ("pytest --experiment e1 --agent litellm:openai/my-model -k 'rep1 and -i0- and "
            "(none or timeout_pre or timeout_post or timeout_late or http500_pre or http500_post"
            " or partial_batch or redelivery)' --limbo-repeat 2 "
            "--limbo-records=out/records/e1-repeat/litellm-openai_my-model.jsonl") in out
    assert "# declared repeat of E1 litellm:openai/my-model: 223 episodes" in out
    assert "limbo report out/records/e1/litellm-openai_my-model.jsonl " \
           "out/records/e1-repeat/litellm-openai_my-model.jsonl --rho experiment " \
           "--out out/report/e1" in out
    assert "never repeat runs" in out  # the warning that goes with the E1 report


def test_pytest_selects_what_the_plan_counts() -> None:
    """The ``-k`` expressions and the Python count agree: an agent picked from the spec's list
    by name (E4, whose arms differ in agents), a small selection, and the declared repeat."""
    paper, small = study(experiments=("e1", "e4")), study(small=True, experiments=("e1",),
                                                          agents=["scripted:same_key"])
    runs = [(paper, next(r for r in paper.plan()
                         if r.planned_agent == "litellm:openai/gemini-3.8-flash"
                         and r.experiment == "e4")),
            (paper, next(r for r in paper.plan() if r.selection.second_run)),
            (small, next(r for r in small.plan() if not r.selection.second_run))]
    for chosen, run in runs:
        argv = run.argv()
        done = subprocess.run([sys.executable, "-m", *argv[:-4], "--collect-only", "-q"],
                              cwd=ROOT, capture_output=True, text=True, check=False)
        match = re.search(r"(\d+)(?:/\d+)? tests? collected", done.stdout)
        assert match, done.stdout[-1000:] + done.stderr[-1000:]
        assert int(match.group(1)) == len(chosen.expected(run)) > 0, argv


def test_model_agents_stop_after_the_budget(tmp_path: Path,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "study"
    assert main(["reproduce", "--agents", "litellm:openai/gpt-4o", "--harnesses", "none",
                 "--only", "e6", "--out", str(out)]) == 1
    printed = capsys.readouterr().out
    assert printed.startswith("Step 1, budget (limbo plan):\n")
    assert "E6 litellm:openai/gpt-4o: 188 episodes, ~1,824 model calls, ~2,256,000 tokens, $" \
        in printed
    assert "Nothing was run: this study calls models. Re-run with --yes" in printed
    assert not out.exists()



def test_a_missing_harness_stops_before_anything_runs(
        no_harnesses: None, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["reproduce", "--agents", "scripted:blind_retry", "--harnesses", "codex",
                 "--only", "e3", "--out", str(tmp_path / "study")]) == 2
    err = capsys.readouterr().err
    assert err == ("limbo: harness codex is not installed (needed by E3 harness:codex:"
                   "blind_retry): run `limbo harness install codex`, or leave harnesses out "
                   "with --harnesses none (Tables 8 and 9 and Table 4's bottom then stay "
                   "empty)\n")
    assert not (tmp_path / "study").exists()


@pytest.mark.parametrize(("argv", "message"), [
    (["--only", "e7"], "--only e7: unknown experiment 'e7'; valid: e1, e2, e2k, e3, e3k, e4, "
                       "e5, e6"),
    (["--agents", ","], "--agents: give at least one agent"),
    (["--shards", "0"], "--shards 0: give 1 or more"),
    (["--agents", "scripted:no_such_policy", "--only", "e6"], "no_such_policy"),
])
def test_bad_options_are_one_line(argv: list[str], message: str,
                                  capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["reproduce", "--print", *argv]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err and message in err


@pytest.mark.early
def test_a_sharded_run_is_merged_checked_and_reported(tmp_path: Path,
                                                       capsys: pytest.CaptureFixture[str]
                                                       ) -> None:
    out = tmp_path / "study"
    assert main(["reproduce", "--only", "e6", "--small", "--shards", "2",
                 "--agents", "scripted:same_key", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    merged = out / "records" / "e6" / "scripted-same_key.jsonl"
    shards = [merged.with_suffix(f".shard{k}.jsonl") for k in (0, 1)]
    lines = [len(p.read_text().splitlines()) for p in shards]
    assert all(lines) and sum(lines) == len(merged.read_text().splitlines()) == 36
    assert f"E6 scripted:same_key: 36 episodes in {merged}" in printed
    index = json.loads((out / "paper.json").read_text())
    # E6 without E1: Table 10 has nothing to pair, and the index says why rather than
    # claiming it; no other report was made
    cue = next(i for i in index if i["item"] == "Table 10")
    assert cue["file"] is None
    assert cue["missing"] == ("no no_cue episode has a default-instruction counterpart on the "
                              "same world and configuration")
    assert not any(i["file"] for i in index)
    assert sorted(p.name for p in (out / "report").iterdir()) == ["e6"]
    assert "0 of 27 of the paper's tables and figures produced" in printed


# -- the whole chain, small ----------------------------------------------------------------------
AGENTS = ("scripted:verify_first", "scripted:blind_retry")


def e1_cell(out: Path, agent: str, family: str) -> tuple[int, int]:
    """Duplicates among fired E1 episodes of ``family``, counted from the record files alone
    (the first run only: the declared repeat feeds stability, not Table 3)."""
    k = n = 0
    for path in (out / "records" / "e1").glob("*.jsonl"):
        for line in path.read_text(encoding="utf-8").splitlines():
            record = json.loads(line)
            if (record["agent"] == agent and record["family"] == family and record["fired"]
                    and record["error"] is None and record["repeat"] == 0):
                n += 1
                k += record["duplicates"] > 0
    return k, n


@pytest.mark.early
@pytest.mark.slow
def test_the_small_study_runs_end_to_end(tmp_path: Path) -> None:
    harness = installed_executable(find_harness("codex")) is not None
    out = tmp_path / "study"
    began = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "limbo_plugin.cli", "reproduce", "--small", "-j", "2",
         "--agents", ",".join(AGENTS), "--harnesses", "codex" if harness else "none",
         "--out", str(out)], cwd=ROOT, capture_output=True, text=True, check=False)
    elapsed = time.monotonic() - began
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    print(f"limbo reproduce --small: {elapsed:.0f} s")  # shown with -s; not asserted

    items = json.loads((out / "paper.json").read_text())
    assert [i["item"] for i in items] == [p.name for p in PAPER]
    harness_items = {"Table 8", "Table 9", "Table 4, bottom (E3)"}
    for item in items:
        if not harness and item["item"] in harness_items:
            assert "harness" in item["missing"], item
            continue
        assert item["file"] and (out / item["file"]).is_file(), item
    produced = len(items) - (0 if harness else len(harness_items))
    assert f"{produced} of {len(items)} of the paper's tables and figures produced" \
        in done.stdout

    table3 = json.loads((out / "report" / "e1" / "tables" / "table3_agents.json").read_text())
    rows = {row["agent"]: row for row in table3["rows"]}
    for agent in AGENTS:
        for family in ("lost_ack", "late_commit"):
            cell = rows[agent][f"dup_{family}"]
            assert (cell["k"], cell["n"]) == e1_cell(out, agent, family), (agent, family)
    # the two scripted policies part where a read-back tells: a lost acknowledgement
    assert rows["scripted:blind_retry"]["dup_lost_ack"]["k"] > 0
    assert rows["scripted:verify_first"]["dup_lost_ack"]["k"] == 0
