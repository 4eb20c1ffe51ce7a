"""Whole runs: xdist, records, resume after an interruption, spec errors, gate, Allure."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest


def records(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


@pytest.mark.slow
def test_serial_and_xdist_give_identical_records_and_summary(project: pytest.Pytester) -> None:
    project.runpytest_subprocess("--experiment", "small", "--limbo-records", "serial/r.jsonl")
    result = project.runpytest_subprocess("--experiment", "small", "-n", "2",
                                          "--limbo-records", "xdist/r.jsonl")
    assert "Limbo summary" in result.stdout.str(), "the controller prints the summary"
    serial, xdist = (sorted(json.dumps({k: v for k, v in r.items() if k != "run_id"})
                            for r in records(project.path / run / "r.jsonl"))
                     for run in ("serial", "xdist"))
    assert len(serial) == 8 and serial == xdist, "identical but for the run id"
    assert (project.path / "serial" / "r.summary.json").read_text() == \
        (project.path / "xdist" / "r.summary.json").read_text()


@pytest.mark.slow
def test_a_crashed_worker_does_not_break_the_summary(project: pytest.Pytester) -> None:
    project.makeconftest(
        "import os\n"
        "def pytest_runtest_setup(item):\n"
        "    worker = hasattr(item.config, 'workerinput')\n"
        "    if worker and item.name.endswith('ticket-timeout_late'):\n"
        "        os._exit(3)\n")
    result = project.runpytest_subprocess("--experiment", "small", "-n", "2")
    out = result.stdout.str()
    assert "Limbo summary" in out
    written = records(project.path / "reports" / "episodes.jsonl")
    assert len(written) == 7
    assert "incident_open-i0-ticket-timeout_late" not in {r["episode_id"] for r in written}


@pytest.mark.slow
def test_resume_after_an_interrupted_run(project: pytest.Pytester) -> None:
    project.makeconftest(
        "import pytest\n"
        "seen = []\n"
        "def pytest_runtest_teardown(item):\n"
        "    seen.append(item)\n"
        "    if len(seen) == 3 and item.config.getoption('limbo_resume') is False:\n"
        "        raise KeyboardInterrupt\n")
    first = project.runpytest_subprocess("--experiment", "small")
    assert first.ret == pytest.ExitCode.INTERRUPTED
    path = project.path / "reports" / "episodes.jsonl"
    kept = records(path)
    assert 2 <= len(kept) <= 3, "every finished episode is kept"
    second = project.runpytest_subprocess("--experiment", "small", "--limbo-resume")
    outcomes = second.parseoutcomes()
    assert outcomes.get("skipped") == len(kept)
    assert sum(outcomes.get(k, 0) for k in ("passed", "failed", "xfailed")) == 8 - len(kept)
    final = records(path)
    assert len(final) == 8
    assert len({r["episode_id"] for r in final}) == 8, "nothing recorded twice"
    summary = json.loads((project.path / "reports" / "episodes.summary.json").read_text())
    rows = next(iter(summary["groups"].values()))
    assert sum(r["episodes"] for r in rows if r["family"] != "all_faulted") == 8


PAUSE_AFTER = """
import os
import time
from pathlib import Path

started = 0


def pytest_runtest_setup(item):
    # With LIMBO_TEST_PAUSE_AFTER=N the run stops before episode N + 1 (a marker file says so)
    # and waits there to be killed: the kill lands mid-run however fast or slow the machine is.
    global started
    started += 1
    if started == int(os.environ.get("LIMBO_TEST_PAUSE_AFTER", "0")) + 1 > 1:
        Path("paused").write_text("")
        time.sleep(3600)
"""


def wait_for_pause(process: subprocess.Popen[Any], project: pytest.Pytester, lines: int) -> Path:
    """Wait (a hang guard of minutes, not a speed check) until the run has paused after
    ``lines`` episodes and their records are in the file; the records path."""
    path = project.path / "reports" / "episodes.jsonl"
    deadline = time.monotonic() + 300
    while not ((project.path / "paused").exists() and path.exists()
               and path.read_text().count("\n") >= lines):
        assert process.poll() is None, "the run ended before it paused"
        assert time.monotonic() < deadline, "the run never paused"
        time.sleep(0.02)
    return path


@pytest.mark.slow
def test_a_killed_run_keeps_every_finished_episode(project: pytest.Pytester) -> None:
    """SIGKILL mid-run: every line written is a complete record, and resume finishes the rest."""
    project.makeconftest(PAUSE_AFTER)
    args = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "-k",
            "incident_open or invoice_batch or hotfix_long or release_announcement"]
    process = subprocess.Popen(args, cwd=project.path, stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL,
                               env={**os.environ, "LIMBO_TEST_PAUSE_AFTER": "20"})
    path = wait_for_pause(process, project, 20)
    os.kill(process.pid, signal.SIGKILL)
    process.wait()
    kept = records(path)
    assert len(kept) >= 20
    total = len(project.runpytest("--collect-only", "-q", "-k",
                                  "incident_open or invoice_batch or hotfix_long or "
                                  "release_announcement").outlines) - 2
    assert len(kept) < total, "the run was killed before the end"
    resumed = subprocess.run([*args, "--limbo-resume"], cwd=project.path, capture_output=True,
                             text=True, check=False)
    assert len({r["episode_id"] for r in records(path)}) == total, (
        resumed.stdout[-3000:] + resumed.stderr[-3000:])


BROKEN = {
    "syntax": ("name: broken\ntemplates: [incident_open\n", "YAML syntax error"),
    "field": ("name: broken\ntemplates: [incident_open]\nmodez: [none]\n", "unknown field"),
    "template": ("name: broken\ntemplates: [incident_open, nope]\n", "unknown template 'nope'"),
    "mode": ("name: broken\nmodes: [none, timeout_later]\n", "unknown fault mode"),
    "focal": ("name: broken\ntemplates: [incident_open]\nfocal_writes: [tickt]\n",
              "unknown focal write 'tickt'"),
    "agent": ("name: broken\ntemplates: [incident_open]\nagents: [scripted:nope]\n",
              "scripted policies: scripted:blind_retry"),
}


@pytest.mark.parametrize("kind", sorted(BROKEN))
def test_a_broken_experiment_is_one_clear_error(project: pytest.Pytester, kind: str) -> None:
    text, message = BROKEN[kind]
    (project.path / "specs" / "experiments" / "broken.yaml").write_text(text)
    result = project.runpytest("specs/experiments/broken.yaml", "specs/experiments/small.yaml")
    # verify_first duplicates both late commits and the keyable charge's redelivery
    result.assert_outcomes(errors=1, passed=4, failed=3, xfailed=1)
    out = result.stdout.str()
    assert "broken.yaml:" in out and message in out
    line = {"syntax": 3, "field": 3, "template": 2, "mode": 2, "focal": 3, "agent": 3}[kind]
    assert f"broken.yaml:{line}:" in out


def test_a_broken_task_template_names_its_file_and_line(project: pytest.Pytester) -> None:
    spec = project.path / "specs" / "tasks" / "incident_open.yaml"
    spec.write_text(spec.read_text().replace("tool: tickets_add_comment",
                                             "tool: tickets_add_coment", 1))
    project.makepyfile(test_plain="def test_ok():\n    assert True\n")
    result = project.runpytest("specs/experiments/small.yaml", "test_plain.py")
    # Only the broken template's episodes are lost: invoice_batch's four still run.
    result.assert_outcomes(errors=1, passed=3, failed=2)
    out = result.stdout.str()
    assert ("Limbo could not load a spec: specs/tasks/incident_open.yaml:24: at required[1] "
            "unknown tool 'tickets_add_coment'") in out
    assert "Traceback" not in out and "limbo_plugin/" not in out
    collected = project.runpytest("specs/experiments/small.yaml", "--collect-only", "-q")
    assert collected.ret != 0, "a broken spec fails --collect-only too"
    assert "ERROR collecting" in collected.stdout.str()
    assert "incident_open.yaml:24:" in collected.stdout.str()
    assert "invoice_batch-i0-charge_1-redelivery" in collected.stdout.str()


def test_a_broken_service_spec_does_not_kill_the_session(project: pytest.Pytester) -> None:
    spec = project.path / "specs" / "services" / "email.yaml"
    spec.write_text(spec.read_text().replace("visibility_lag_s: 120\n", "visibility_lag_s: 60\n",
                                             1))
    project.makepyfile(test_plain="def test_ok():\n    assert True\n")
    result = project.runpytest("specs/experiments/small.yaml", "test_plain.py")
    result.assert_outcomes(errors=1, passed=1)
    assert "email.yaml:21: at tools[0].contract.visibility_lag_s" in result.stdout.str()


GATE = """\
name: test_gate
thresholds:
  - {{metric: duplicate_rate, family: late_commit, max: {late}}}
  - {{metric: eos_rate, family: none, min: 1.0}}
"""


@pytest.mark.parametrize(("late", "passes"), [(0.5, True), (0.4, False)])
def test_gate_decides_the_exit_status(project: pytest.Pytester, late: float, passes: bool
                                      ) -> None:
    (project.path / "gate.yaml").write_text(GATE.format(late=late))
    result = project.runpytest("--experiment", "small", "--agent", "scripted:same_key",
                               "--limbo-gate", "gate.yaml")
    out = result.stdout.str()
    # same_key duplicates the key-less ticket but not the keyed charge: 50% of late commits
    assert "duplicate_rate[late_commit] ≤" in out and "50.0% (1/2" in out
    if passes:
        assert result.ret == pytest.ExitCode.OK, "the gate passes although an episode failed"
        assert "Limbo gate 'test_gate': PASSED" in out
    else:
        assert result.ret == pytest.ExitCode.TESTS_FAILED
        assert "Limbo gate 'test_gate': FAILED" in out and "FAIL duplicate_rate" in out


def test_gate_judged_on_the_interval_bound(project: pytest.Pytester) -> None:
    (project.path / "gate.yaml").write_text(
        "name: g\nthresholds:\n  - {metric: duplicate_rate, family: late_commit, max: 0.6,"
        " judge: bound}\n")
    result = project.runpytest("--experiment", "small", "--agent", "scripted:same_key",
                               "--limbo-gate", "gate.yaml")
    assert result.ret == pytest.ExitCode.TESTS_FAILED, "50% on two episodes: bound above 60%"
    assert "(95% upper bound)" in result.stdout.str()


def test_baseline_comparison_fails_a_significantly_worse_agent(project: pytest.Pytester
                                                              ) -> None:
    (project.path / "gate.yaml").write_text("name: g\nbaseline: {outcome: passed}\n")
    selection = ["-k", "lost_ack or misleading_500", "--limbo-gate", "gate.yaml"]
    records_file = project.path / "reports" / "episodes.jsonl"
    project.runpytest("--agent", "scripted:verify_first", *selection)
    verify = project.path / "verify.jsonl"
    verify.write_text(records_file.read_text())
    worse = project.runpytest("--agent", "scripted:blind_retry", "--limbo-baseline",
                              str(verify), *selection)
    assert worse.ret == pytest.ExitCode.TESTS_FAILED
    assert "FAIL not worse than baseline [lost_ack]" in worse.stdout.str()
    # The baseline may be the very file this run replaces: it is read before rotation.
    better = project.runpytest("--agent", "scripted:verify_first", "--limbo-baseline",
                               str(records_file), *selection)
    assert better.ret == pytest.ExitCode.OK, better.stdout.str()[-2000:]
    assert "ok   not worse than baseline [misleading_500]" in better.stdout.str()
    assert "61 now pass that failed" in better.stdout.str()


def test_allure_results(project: pytest.Pytester) -> None:
    project.runpytest("--experiment", "small", "--alluredir", "allure-results",
                      "-k", "ticket-timeout_late")
    results = [json.loads(p.read_text()) for p in (project.path / "allure-results").glob(
        "*-result.json")]
    assert len(results) == 1
    result = results[0]
    assert result["name"] == "incident_open #0: timeout_late on ticket (tickets_create)"
    labels = {(label["name"], label["value"]) for label in result["labels"]}
    assert {("epic", "incident_open"), ("feature", "late_commit"),
            ("story", "timeout_late"), ("tag", "contract:native")} <= labels
    params = {p["name"]: p["value"].strip("'") for p in result["parameters"]}
    assert params["focal_write"] == "ticket" and params["fault_mode"] == "timeout_late"
    names = {a["name"] for a in result["attachments"]}
    assert names == {"trace", "ledger", "grade"}
    for attachment in result["attachments"]:
        body = json.loads((project.path / "allure-results" / attachment["source"]).read_text())
        assert body


def test_cost_limit_stops_starting_episodes(project: pytest.Pytester) -> None:
    reports = project.path / "reports"
    reports.mkdir()
    project.runpytest("--experiment", "small", "-k", "baseline")
    path = reports / "episodes.jsonl"
    spent = records(path)
    for record in spent:
        record["usage"] = {"prompt_tokens": 10, "completion_tokens": 5, "cost_usd": 1.5,
                           "model_calls": 1}
    path.write_text("".join(json.dumps(r) + "\n" for r in spent))
    result = project.runpytest("--experiment", "small", "--limbo-resume",
                               "--limbo-cost-limit", "2")
    result.assert_outcomes(skipped=8)
    assert "Cost limit of $2.0 reached: 6 episode(s) were not started." in result.stdout.str()
