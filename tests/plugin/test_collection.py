"""Experiment specs become one item per episode, with ids and keywords users can select by."""

from __future__ import annotations

import json

import pytest


def ids(result: pytest.RunResult) -> list[str]:
    return sorted(line.split("::", 1)[1].strip() for line in result.outlines
                  if line.startswith("specs/experiments/") and "::" in line)


def test_a_small_experiment_collects_one_item_per_episode(project: pytest.Pytester) -> None:
    result = project.runpytest("--experiment", "small", "--collect-only", "-q")
    collected = ids(result)
    # incident_open: ticket × 3 modes + baseline; invoice_batch: charge_1 × 3 + baseline
    assert len(collected) == 8
    assert "incident_open-i0-ticket-timeout_late" in collected
    assert "invoice_batch-i0-baseline-none" in collected
    assert "invoice_batch-i0-charge_1-redelivery" in collected


@pytest.mark.parametrize(("expression", "expected"), [
    ("late_commit", {"incident_open-i0-ticket-timeout_late",
                     "invoice_batch-i0-charge_1-timeout_late"}),
    ("redelivery and billing", {"invoice_batch-i0-charge_1-redelivery"}),
    ("tickets_create and lost_ack", {"incident_open-i0-ticket-timeout_post"}),
    ("invoice_batch and not none", {"invoice_batch-i0-charge_1-timeout_post",
                                    "invoice_batch-i0-charge_1-timeout_late",
                                    "invoice_batch-i0-charge_1-redelivery"}),
    ("unresolvable and incident_open", {"incident_open-i0-ticket-timeout_late",
                                        "incident_open-i0-ticket-redelivery"}),
])
def test_keyword_selection(project: pytest.Pytester, expression: str, expected: set[str]
                           ) -> None:
    result = project.runpytest("--experiment", "small", "--collect-only", "-q", "-k", expression)
    assert set(ids(result)) == expected


def test_marker_selection_by_family(project: pytest.Pytester) -> None:
    result = project.runpytest("--experiment", "small", "--collect-only", "-q", "-m",
                               "lost_ack")
    assert set(ids(result)) == {"incident_open-i0-ticket-timeout_post",
                                "invoice_batch-i0-charge_1-timeout_post"}


def test_bare_pytest_runs_the_default_experiment(project: pytest.Pytester) -> None:
    result = project.runpytest("--collect-only", "-q")
    assert len(ids(result)) > 700
    assert all(i.startswith(("cross_post", "customer", "deploy", "feature", "hotfix",
                             "incident", "invoice", "migration", "refund", "release",
                             "subscription", "ticket")) for i in ids(result))


def test_non_default_configuration_appears_in_ids(project: pytest.Pytester) -> None:
    result = project.runpytest("--experiment", "small", "--collect-only", "-q",
                               "--contract", "keys_everywhere", "--condition", "aware")
    assert "incident_open-i0-ticket-timeout_late-keys_everywhere-aware" in ids(result)


def test_outcomes_failures_and_expected_failures(project: pytest.Pytester) -> None:
    result = project.runpytest("--experiment", "small", "--agent", "scripted:blind_retry",
                               "-rA")
    # blind_retry duplicates in committed worlds; redelivery on tickets_create is an xfail, on
    # the keyed billing charge an ordinary failure of a key-less agent.
    result.assert_outcomes(passed=2, failed=5, xfailed=1)
    text = result.stdout.str()
    assert "duplicated ticket: committed 2×" in text
    assert "final status: completed" in text
    assert "no client-side policy can be exactly-once" in text


def test_reportinfo_points_at_the_template(project: pytest.Pytester) -> None:
    run = project.inline_run("--experiment", "small", "--agent", "scripted:blind_retry",
                             "-k", "ticket-timeout_post")
    report = run.getreports("pytest_runtest_logreport")[0]
    path, line, domain = report.location
    assert path.replace("\\", "/").endswith("specs/tasks/incident_open.yaml")
    assert line == 0
    assert domain == "episode incident_open-i0-ticket-timeout_post-scripted-blind_retry"


def test_records_file_has_every_field(project: pytest.Pytester) -> None:
    project.runpytest("--experiment", "small")
    lines = (project.path / "reports" / "episodes.jsonl").read_text().splitlines()
    assert len(lines) == 8
    record = json.loads(lines[0])
    for name in ("template", "instance", "focal_write", "fault_mode", "family", "contract",
                 "docs", "instruction", "condition", "operator", "agent", "world_seed",
                 "fired", "ts", "eos", "duplicates", "residual_duplicates", "collateral",
                 "unrequested", "overclaim", "final_status", "behaviour", "tool_calls",
                 "sim_seconds", "trace", "ledger"):
        assert name in record, name
    assert record["trace"] and record["ledger"]


def test_summary_table_and_files(project: pytest.Pytester) -> None:
    result = project.runpytest("--experiment", "small", "--agent", "scripted:blind_retry")
    text = result.stdout.str()
    assert "Limbo summary" in text
    assert "late_commit" in text and "duplicate rate" in text
    summary = json.loads((project.path / "reports" / "episodes.summary.json").read_text())
    rows = next(iter(summary["groups"].values()))
    late = next(r for r in rows if r["family"] == "late_commit")
    assert late["duplicate_rate"]["k"] == 2 and late["duplicate_rate"]["n"] == 2
    assert (project.path / "reports" / "episodes.summary.md").read_text().startswith(
        "# Limbo summary")


@pytest.mark.parametrize(("args", "message"), [
    (["--agent", "scripted:nope"], "scripted:verify_first"),
    (["--contract", "keyz"], "keys_everywhere"),
    (["--condition", "magic"], "vanilla"),
    (["--experiment", "missing"], "smoke"),
    (["--operator", "silent"], "unresponsive"),
    (["--model-option", "novalue"], "KEY=VALUE"),
    (["--limbo-cassette-mode", "bogus"], "--limbo-cassette-mode: input should be 'record'"),
    (["--limbo-provider-retries", "0"], "--limbo-provider-retries: input should be greater"),
    (["--model-option", "mock_response=yes"], "--model-option mock_response not allowed: "
                                              "mock_response: it fakes the model's answer"),
    (["--model-option", "num_retries=3", "--model-option", "input_cost_per_token=0",
      "--model-option", "stream=true"],
     "--model-option num_retries, input_cost_per_token, stream not allowed: num_retries: "
     "litellm would retry behind Limbo's own retries (use --limbo-provider-retries); "
     "input_cost_per_token: it rewrites the cost that records and --limbo-cost-limit count; "
     "stream: the scaffold reads whole answers, not streams"),
    (["--limbo-episode-timeout", "soon"], "--limbo-episode-timeout expects a number"),
    (["--limbo-episode-timeout", "nan"], "--limbo-episode-timeout must be a positive number"),
])
def test_unknown_values_are_usage_errors_listing_valid_ones(project: pytest.Pytester,
                                                            args: list[str], message: str
                                                            ) -> None:
    result = project.runpytest(*args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert message in result.stderr.str()


def test_options_can_be_set_in_the_ini_file(project: pytest.Pytester) -> None:
    project.makeini("[pytest]\ntestpaths = specs\nlimbo_experiment = small\n"
                    "limbo_agent = scripted:blind_retry\nlimbo_records = out/r.jsonl\n")
    project.runpytest()
    records = [json.loads(x) for x in (project.path / "out" / "r.jsonl").read_text().split("\n")
               if x]
    assert len(records) == 8 and {r["agent"] for r in records} == {"scripted:blind_retry"}


def test_project_suite_is_not_collected_and_reports_are_untouched(project: pytest.Pytester
                                                                  ) -> None:
    reports = project.path / "reports"
    reports.mkdir()
    (reports / "episodes.jsonl").write_text("{}\n")
    project.makepyfile(test_plain="def test_ok():\n    assert True\n")
    result = project.runpytest("test_plain.py")
    result.assert_outcomes(passed=1)
    assert (reports / "episodes.jsonl").read_text() == "{}\n"
    assert not (reports / "history").exists()
    project.runpytest("--experiment", "small", "--collect-only")
    assert (reports / "episodes.jsonl").read_text() == "{}\n", "collecting runs nothing"
