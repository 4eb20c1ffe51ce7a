"""Records files as a clumsy user meets them: a directory for a file, a missing baseline, a gate
that does not exist, a path after a space, a few small runs after a full one, an interrupted
run. Each is one clear line before any episode runs, and nothing is ever lost or renamed but
the records file itself."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from limbo_plugin.cli import main

ONE_TEMPLATE = ["--experiment", "small", "-k", "invoice_batch"]
"""Four episodes: fast, and enough to compare runs."""


def records(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def usage_error(result: pytest.RunResult) -> str:
    """The one error line pytest printed for a usage error, with nothing run."""
    assert result.ret == pytest.ExitCode.USAGE_ERROR, result.stdout.str()[-1500:]
    errors = [line for line in result.stderr.lines if line.strip()]
    assert len(errors) == 1, result.stderr.str()
    assert "Traceback" not in result.stderr.str() + result.stdout.str()
    return errors[0]


def test_a_directory_given_as_the_records_file_is_refused_and_nothing_is_moved(
        project: pytest.Pytester) -> None:
    reports = project.path / "reports"
    reports.mkdir()
    (reports / "README.md").write_text("kept\n")
    error = usage_error(project.runpytest(*ONE_TEMPLATE, "--limbo-records=reports"))
    assert error == ("ERROR: --limbo-records: reports is a directory; give a file path such as "
                     "reports/episodes.jsonl")
    assert (reports / "README.md").read_text() == "kept\n"
    assert sorted(p.name for p in project.path.iterdir() if p.name.startswith("reports")) == [
        "reports"], "nothing was renamed"
    specs = usage_error(project.runpytest(*ONE_TEMPLATE, "--limbo-records=specs"))
    assert "specs is a directory" in specs and (project.path / "specs" / "services").is_dir()
    under = usage_error(project.runpytest(
        *ONE_TEMPLATE, "--limbo-records=reports/README.md/run.jsonl"))
    assert "reports/README.md is a file" in under
    later = project.runpytest(*ONE_TEMPLATE)
    assert later.ret == pytest.ExitCode.TESTS_FAILED and len(records(
        reports / "episodes.jsonl")) == 4, "a plain run afterwards works"


def test_every_earlier_run_is_kept_in_history_and_the_move_is_announced(
        project: pytest.Pytester) -> None:
    reports = project.path / "reports"
    project.runpytest("--experiment", "small")
    full = (reports / "episodes.jsonl").read_text()
    second = project.runpytest(*ONE_TEMPLATE)
    third = project.runpytest("--experiment", "small", "-k", "incident_open")
    history = sorted((reports / "history").glob("*.jsonl"))  # beside each, its fingerprint
    assert len(history) == 2, "two earlier runs, both kept"
    assert history[0].read_text() == full, "the full run survives two small runs after it"
    assert len(records(history[1])) == 4
    for result, moved in ((second, history[0]), (third, history[1])):
        out = result.stdout.str()
        shown = f"reports/history/{moved.name}"
        assert f"limbo: the previous records reports/episodes.jsonl were moved to {shown}" in out
        assert f"The previous records are kept in {shown}" in out
    assert main(["runs", str(reports / "episodes.jsonl")]) == 0


def test_two_record_files_in_one_folder_keep_their_own_summaries(project: pytest.Pytester
                                                                 ) -> None:
    project.runpytest(*ONE_TEMPLATE, "--limbo-records=out/a.jsonl")
    project.runpytest("--experiment", "small", "-k", "incident_open",
                                 "--agent", "scripted:blind_retry", "--limbo-records=out/b.jsonl")
    a = json.loads((project.path / "out" / "a.summary.json").read_text())
    b = json.loads((project.path / "out" / "b.summary.json").read_text())
    assert a["total_episodes"] == 4 and b["total_episodes"] == 4
    assert "scripted:verify_first" in next(iter(a["groups"]))
    assert "scripted:blind_retry" in next(iter(b["groups"]))
    assert (project.path / "out" / "a.summary.md").exists()
    assert not (project.path / "out" / "summary.json").exists()


GATE = "name: g\nbaseline: {outcome: passed}\n"


def test_baseline_previous_is_the_run_this_one_replaces(project: pytest.Pytester) -> None:
    """Not the run before it: blind_retry, then verify_first twice, compared with `previous`,
    pairs verify_first with verify_first (nothing changed), not with blind_retry."""
    (project.path / "gate.yaml").write_text(GATE)
    selection = ["-k", "lost_ack or misleading_500"]
    project.runpytest("--agent", "scripted:blind_retry", *selection)
    project.runpytest("--agent", "scripted:verify_first", *selection)
    again = project.runpytest("--agent", "scripted:verify_first", *selection,
                                         "--limbo-gate", "gate.yaml", "--limbo-baseline",
                                         "previous")
    out = again.stdout.str()
    assert again.ret == pytest.ExitCode.OK, out[-2000:]
    assert "0 now fail that passed, 0 now pass that failed" in out
    assert "now pass that failed; exact McNemar p=1" in out


@pytest.mark.parametrize(("baseline", "message"), [
    ("missing.jsonl", "ERROR: --limbo-baseline: missing.jsonl: no such file; give a records "
                      "file of an earlier run, or 'previous', or run without "
                      "--limbo-baseline (the gate's thresholds alone judge the run)"),
    ("specs", "ERROR: --limbo-baseline: specs: is a directory"),
    ("previous", "ERROR: --limbo-baseline previous: there is no previous run: "
                 "reports/episodes.jsonl does not exist yet and its history/ is empty; "
                 "run without --limbo-baseline"),
    ("empty.jsonl", "ERROR: --limbo-baseline: empty.jsonl holds no records"),
    ("garbage.jsonl", "ERROR: --limbo-baseline: garbage.jsonl:2: not an episode record"),
])
def test_a_missing_or_unreadable_baseline_stops_the_run_before_it_starts(
        project: pytest.Pytester, baseline: str, message: str) -> None:
    (project.path / "empty.jsonl").write_text("")
    (project.path / "garbage.jsonl").write_text("\n{oops\n{}\n")
    error = usage_error(project.runpytest(*ONE_TEMPLATE, "--limbo-baseline",
                                                     baseline))
    assert error.startswith(message), error
    assert not (project.path / "reports" / "episodes.jsonl").exists(), "nothing ran"


@pytest.mark.parametrize(("gate", "message"), [
    ("specs/gates/nope.yaml", "ERROR: --limbo-gate: specs/gates/nope.yaml: no such file; gates "
                              "in specs/gates: release.yaml"),
    ("specs/experiments/small.yaml", "ERROR: --limbo-gate: specs/experiments/small.yaml:2: at "
                                     "templates unknown field"),
    ("typo.yaml", "ERROR: --limbo-gate: typo.yaml:3: at thresholds[0].family unknown family "
                  "'lat_commit'; valid: not_executed, lost_ack"),
])
def test_a_bad_gate_stops_the_run_before_the_first_episode(project: pytest.Pytester, gate: str,
                                                           message: str) -> None:
    (project.path / "typo.yaml").write_text(
        "name: typo\nthresholds:\n  - {metric: duplicate_rate, family: lat_commit, max: 0.1}\n")
    error = usage_error(project.runpytest(*ONE_TEMPLATE, "--limbo-gate", gate))
    assert error.startswith(message), error
    assert not (project.path / "reports" / "episodes.jsonl").exists(), "nothing ran"


def test_a_gate_never_passes_on_nothing(project: pytest.Pytester) -> None:
    (project.path / "gate.yaml").write_text(
        "name: partial\nthresholds:\n"
        "  - {metric: duplicate_rate, family: late_commit, max: 1.0}\n"
        "  - {metric: duplicate_rate, family: lost_ack, max: 0.1}\n"
        "  - {metric: duplicate_rate, family: explicit, max: 0.1, optional: true}\n")
    result = project.runpytest("-k", "late_commit", "--limbo-gate", "gate.yaml")
    out = result.stdout.str()
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    assert ("Limbo gate 'partial': FAILED (2 of 3 checks passed; 1 judged, 2 without enough "
            "episodes)") in out
    assert ("FAIL duplicate_rate[lost_ack] ≤ 10.0%: not judged: 0 fired episodes of lost_ack "
            "in this run, the gate needs 1") in out
    assert "ok   duplicate_rate[explicit] ≤ 10.0%: not judged: 0 fired episodes" in out
    (project.path / "gate.yaml").write_text(
        "name: strict\nmin_episodes: 200\nthresholds:\n"
        "  - {metric: duplicate_rate, family: late_commit, max: 1.0}\n")
    few = project.runpytest("-k", "late_commit", "--limbo-gate", "gate.yaml")
    assert few.ret == pytest.ExitCode.TESTS_FAILED
    assert "not judged: 138 fired episodes of late_commit in this run, the gate needs 200" in \
        few.stdout.str()


def test_a_path_option_after_a_space_cannot_move_the_rootdir(
        project: pytest.Pytester, tmp_path_factory: pytest.TempPathFactory) -> None:
    outside = tmp_path_factory.mktemp("data") / "run.jsonl"
    # The same one line on the first run (no file yet: pytest ignores the path) and after.
    first = usage_error(project.runpytest(*ONE_TEMPLATE, "--limbo-records", str(outside)))
    assert not outside.exists()
    outside.write_text("")
    error = usage_error(project.runpytest(*ONE_TEMPLATE, "--limbo-records",
                                                     str(outside)))
    assert first == error
    assert error.startswith(f"ERROR: --limbo-records {outside}: after a space pytest takes "
                            f"{outside} for a test path once it exists")
    assert error.endswith(f"write --limbo-records={outside}")
    inside = project.runpytest(*ONE_TEMPLATE, "--limbo-records", "reports/r.jsonl")
    assert inside.ret == pytest.ExitCode.TESTS_FAILED, "a path inside the project is fine"
    written = project.runpytest(*ONE_TEMPLATE, f"--limbo-records={outside}")
    assert written.ret == pytest.ExitCode.TESTS_FAILED and len(records(outside)) == 4


def test_resume_repairs_a_torn_last_line_and_refuses_garbage_in_the_middle(
        project: pytest.Pytester) -> None:
    path = project.path / "reports" / "episodes.jsonl"
    project.runpytest(*ONE_TEMPLATE)
    lines = path.read_bytes().splitlines(keepends=True)
    path.write_bytes(b"".join(lines[:3]) + lines[3][:200])  # killed while writing the 4th
    resumed = project.runpytest(*ONE_TEMPLATE, "--limbo-resume")
    assert ("limbo: reports/episodes.jsonl:4: removed a torn last line (200 bytes) left by an "
            "interrupted run; its episode runs again") in resumed.stdout.str()
    outcomes = resumed.parseoutcomes()
    assert outcomes["skipped"] == 3 and outcomes.get("passed", 0) + outcomes.get("failed", 0) == 1
    final = records(path)
    assert len(final) == 4 and len({r["episode_id"] for r in final}) == 4
    assert len({r["run_id"] for r in final}) == 2, "the resumed run adds its own run id"
    path.write_bytes(b"".join(lines[:2]) + b"\xff\xfe not a record\n" + b"".join(lines[2:]))
    error = usage_error(project.runpytest(*ONE_TEMPLATE, "--limbo-resume"))
    assert error == ("ERROR: --limbo-resume: reports/episodes.jsonl:3: not an episode record "
                     "(invalid UTF-8 at byte 0); fix or remove that line")


@pytest.mark.slow
def test_every_record_of_a_parallel_run_shares_its_run_id(project: pytest.Pytester) -> None:
    project.runpytest_subprocess("--experiment", "small", "-n", "2")
    run_ids = {r["run_id"] for r in records(project.path / "reports" / "episodes.jsonl")}
    assert len(run_ids) == 1 and None not in run_ids


def test_the_family_table_ends_the_output_and_says_when_the_run_is_partial(
        project: pytest.Pytester) -> None:
    whole = project.runpytest("--experiment", "small")
    out = whole.stdout.str()
    assert out.index("short test summary info") < out.index("Limbo summary"), \
        "not buried between failure blocks"
    assert "PARTIAL" not in out
    project.makeconftest(
        "seen = []\n"
        "def pytest_runtest_call(item):\n"
        "    seen.append(item)\n"
        "    if len(seen) == 3:\n"
        "        raise KeyboardInterrupt\n")
    # a KeyboardInterrupt from a hook needs its own process: in-process pytester re-raises it
    stopped = project.runpytest_subprocess("--experiment", "small")
    assert stopped.ret == pytest.ExitCode.INTERRUPTED
    # the third episode was interrupted before its outcome was reported, so it is not recorded
    assert ("PARTIAL: the run stopped early; the table covers the 2 episode(s) recorded so far. "
            "Re-run with --limbo-resume to finish it.") in stopped.stdout.str()


def test_a_run_stopped_before_its_first_episode_says_nothing_moved(project: pytest.Pytester
                                                                   ) -> None:
    reports = project.path / "reports"
    project.runpytest(*ONE_TEMPLATE)
    kept = (reports / "episodes.jsonl").read_text()
    # A harness that cannot run here (no gateway given) stops the run before its first episode.
    stopped = project.runpytest(*ONE_TEMPLATE, "--agent", "harness:codex:gpt-5-mini")
    assert stopped.ret == pytest.ExitCode.USAGE_ERROR
    out = stopped.stdout.str() + stopped.stderr.str()
    assert "moved to" not in out and "kept in" not in out, out[-2000:]
    assert (reports / "episodes.jsonl").read_text() == kept, "nothing moved"
    assert not (reports / "history").exists() or not any((reports / "history").iterdir())
