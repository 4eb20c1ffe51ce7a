"""The study's experiments through the plugin, as a user runs them: they collect with every kind
of agent, a slice of each runs, all of E5 feeds ``limbo report``'s Table 6, E4 runs its own
model agents, and a harness that is not installed stops a run before its first episode (with
and without xdist) but never stops collection."""

from __future__ import annotations

import json
from collections import Counter

import pytest

from limbo_plugin.agents.prompts import SYSTEM_PROMPT
from limbo_plugin.cli import main
from limbo_plugin.conditions.wording import PARAPHRASES
from limbo_plugin.experiments import load_experiment
from limbo_plugin.runconfig import RunConfig
from limbo_plugin.spec.registry import SpecRegistry
from limbo_plugin.testing.models import PolicyModel
from limbo_plugin.testing.openai_server import OpenAIServer

STUDY = ("e1", "e2", "e2k", "e3", "e3k", "e4", "e5", "e6")
FILES = [f"specs/experiments/{name}.yaml" for name in STUDY]
E2_MODELS = ("claude-opus-5.5", "gpt-6-sol", "gemini-3.8-flash", "mai-code-1.1-flash")


def records(project: pytest.Pytester) -> list[dict]:
    path = project.path / "reports" / "episodes.jsonl"
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line]


def collected(result: pytest.RunResult) -> Counter[str]:
    """Items per experiment file in ``--collect-only -q`` output."""
    return Counter(line.split("::", 1)[0].removeprefix("specs/experiments/").removesuffix(".yaml")
                   for line in result.outlines if line.startswith("specs/experiments/")
                   and "::" in line)



AGENT_KINDS = {
    "their own": None,
    "scripted": "scripted:same_key",
    "mcp": "mcp:verify_first",
    "litellm": "litellm:openai/my-model",
    "harness": "harness:codex:my-model",
    "command harness": "harness:command:my-cli.yaml",
    "python": "python:my_agents:MyAgent",
}


@pytest.mark.parametrize("kind", sorted(AGENT_KINDS))
def test_every_experiment_collects_with_every_kind_of_agent(project: pytest.Pytester,
                                                           no_harnesses: None, kind: str
                                                           ) -> None:
    project.makepyfile(my_agents="class MyAgent:\n    def run(self, session):\n"
                                 "        session.call('finish', {'status': 'failed'})\n")
    (project.path / "my-cli.yaml").write_text("name: my-cli\nmodel: m\n"
                                              "command: [my-cli-not-installed, \"{prompt}\"]\n")
    agent = AGENT_KINDS[kind]
    args = [] if agent is None else ["--agent", agent]
    result = project.runpytest(*FILES, "--collect-only", "-q", *args)
    assert result.ret == pytest.ExitCode.OK, result.stderr.str()
    registry = SpecRegistry.load(project.path / "specs")
    overrides = {} if agent is None else {"agent": agent}
    expected = {name: len(load_experiment(project.path / file, registry).episodes(
        registry, overrides, RunConfig())) for name, file in zip(STUDY, FILES, strict=True)}
    assert collected(result) == expected
    total = sum(expected.values())
    assert f"{total} tests collected" in result.stdout.str()


def test_a_run_needing_uninstalled_harnesses_stops_before_its_first_episode(
        project: pytest.Pytester, no_harnesses: None) -> None:
    select = ["--experiment", "e3k", "-k", "incident_open-i0-ticket-timeout_post"]
    listed = project.runpytest(*select, "--collect-only", "-q")
    assert "8 tests collected" in listed.stdout.str()
    run = project.runpytest(*select)
    assert run.ret == pytest.ExitCode.USAGE_ERROR
    errors = [line for line in run.errlines if line.startswith("ERROR:")]
    assert len(errors) == 1, run.errlines
    for name in ("codex", "copilot", "hermes"):
        assert f"run `limbo harness install {name}`" in errors[0]
    assert "Traceback" not in run.stdout.str() + run.stderr.str()
    assert records(project) == [], "no episode ran"


@pytest.mark.slow
def test_deselecting_the_harness_episodes_runs_the_rest_under_xdist(
        project: pytest.Pytester, no_harnesses: None) -> None:
    """Under xdist too a missing harness stops the run; the controller collects nothing itself
    and learns which agents the workers selected from their item ids, so deselecting the
    harness episodes (``-k``) needs no harness, with or without xdist."""
    (project.path / "specs" / "experiments" / "mixed.yaml").write_text(
        "name: mixed\ntemplates: [incident_open]\ninstances: [0]\nfocal_writes: [ticket]\n"
        "modes: [timeout_post, timeout_late]\n"
        "agents: [scripted:verify_first, harness:hermes:some-model]\n")
    stopped = project.runpytest_subprocess("--experiment", "mixed", "-k", "timeout_post",
                                           "-n", "2")
    assert stopped.ret == pytest.ExitCode.USAGE_ERROR
    errors = [line for line in stopped.errlines if line.startswith("ERROR:")]
    assert len(errors) == 1 and "run `limbo harness install hermes`" in errors[0]
    assert records(project) == []
    for workers in (["-n", "2"], []):
        run = project.runpytest_subprocess("--experiment", "mixed", "-k", "scripted", *workers)
        run.assert_outcomes(passed=1, failed=1)  # verify-first duplicates the late commit
        assert {r["agent"] for r in records(project)} == {"scripted:verify_first"}


SLICES: dict[str, tuple[str, int, dict[str, set[object]]]] = {
    # experiment: (-k expression, episodes, what every record of the slice shows)
    "e1": ("migration_log-i5", 12, {"instance": {5}, "condition": {"vanilla"}}),
    "e2": ("incident_open-i0-ticket-timeout_post", 9,
           {"condition": {"vanilla", "aware", "reflect", "sdk_retry", "rules", "vbr", "guard",
                          "state_oracle", "outcome_oracle"}}),
    "e2k": ("incident_open-i0-ticket-timeout_late", 2,
            {"contract": {"keys_everywhere"}, "condition": {"vanilla", "guard"}}),
    "e3": ("feature_flags-i0-publish-redelivery", 2, {"condition": {"vanilla", "guard"}}),
    "e3k": ("cross_post-i0-post_x-timeout_post", 2, {"contract": {"keys_everywhere"}}),
    "e4": ("deploy_release-i0-deploy_staging-timeout_late", 11,
           {"docs": {"default", "no_consistency_docs", "explicit"},
            "operator": {"truthful", "unresponsive"},
            "condition": {"vanilla", "guard", "paraphrase_1", "paraphrase_2", "paraphrase_3",
                          "guard-no-key", "guard-no-consistency", "guard-no-block",
                          "guard-no-annotate"}}),
    "e5": ("refund_duplicate", 28, {"fault_mode": {"timeout_late", "timeout_late_tail"}}),
    "e6": ("ticket_resolution", 16, {"instruction": {"no_cue"}}),
}


@pytest.mark.parametrize("name", STUDY)
def test_a_scripted_slice_of_each_experiment_runs(project: pytest.Pytester, name: str) -> None:
    expression, count, shows = SLICES[name]
    result = project.runpytest("--experiment", name, "--agent", "scripted:verify_first",
                               "-k", expression)
    outcomes = result.parseoutcomes()
    assert "error" not in outcomes and "errors" not in outcomes, result.stdout.str()
    ran = sum(outcomes.get(k, 0) for k in ("passed", "failed", "xfailed", "xpassed"))
    assert ran == count
    found = records(project)
    assert len(found) == count and {r["agent"] for r in found} == {"scripted:verify_first"}
    for field, values in shows.items():
        assert {r[field] for r in found} == values, field


@pytest.mark.slow
def test_e5_with_a_scripted_agent_gives_table6_and_its_figure(
        project: pytest.Pytester, capsys: pytest.CaptureFixture[str]) -> None:
    run = project.runpytest_subprocess("--experiment", "e5", "--agent", "scripted:verify_first",
                                       "-n", "2")  # arms collect identically on every worker
    assert run.ret == pytest.ExitCode.TESTS_FAILED  # verify-first duplicates late commits
    assert len(records(project)) == 14 * 35
    out = project.path / "report"
    assert main(["report", str(project.path / "reports" / "episodes.jsonl"),
                 "--out", str(out)]) == 0
    assert "Table 6: waiting versus keys" in capsys.readouterr().out
    table = json.loads((out / "tables" / "table6_waiting.json").read_text())
    rows = {(r["delay"], r["contract"], r["condition"]): r for r in table["rows"]}
    assert set(rows) == {("fixed", "native", f"wait_{d}") for d in (0, 60, 120, 300)} | {
        ("tail", "native", c) for c in ("wait_0", "wait_60", "wait_300", "wait_900",
                                        "wait_3600", "vanilla", "guard", "outcome_oracle")} | {
        ("tail", "keys_everywhere", "vanilla"), ("tail", "keys_everywhere", "guard")}
    assert all(r["episodes"] == 35 for r in rows.values())
    # Waiting out a bound above the fixed 90 s delay is exactly-once; below it, it is not.
    for bound, exact in ((0, False), (60, False), (120, True), (300, True)):
        row = rows["fixed", "native", f"wait_{bound}"]
        assert (row["eos"]["k"] == 35) is exact and row["p_delay_within_bound"] == float(exact)
    # Under the heavy tail a longer bound covers more worlds and duplicates less, never more.
    tail = [rows["tail", "native", f"wait_{d}"] for d in (0, 60, 300, 900, 3600)]
    covered = [r["p_delay_within_bound"] for r in tail]
    duplicates = [r["duplicate_rate"]["k"] for r in tail]
    assert covered == sorted(covered) and covered[-1] < 1.0
    assert duplicates == sorted(duplicates, reverse=True) and duplicates[0] > duplicates[-1]
    for reference in (("tail", "native", "outcome_oracle"),
                      ("tail", "keys_everywhere", "guard")):
        assert rows[reference]["eos"]["k"] == 35, reference
    for suffix in ("png", "svg"):
        figure = out / "figures" / f"waiting_vs_keys.{suffix}"
        assert figure.stat().st_size > 1000


@pytest.mark.slow
def test_e4_runs_its_own_models_against_a_scripted_model_server(project: pytest.Pytester,
                                                               registry: SpecRegistry) -> None:
    with OpenAIServer(PolicyModel("verify_first", registry=registry)) as server:
        run = project.runpytest_subprocess(
            "--experiment", "e4",
            "-k", "incident_open-i0-ticket-timeout_post and (paraphrase_3 or guard-no-block)",
            "--model-option", f"api_base={server.base_url}", "--model-option", "api_key=local",
            "--limbo-provider-backoff", "0", "--limbo-preflight", "off")  # episodes' prompts only
        prompts = {(r.model, r.messages[0]["content"]) for r in server.requests}
    run.assert_outcomes(passed=6)
    assert prompts == {(m, PARAPHRASES[2]) for m in E2_MODELS} | {
        (m, SYSTEM_PROMPT) for m in ("gemini-3.8-flash", "mai-code-1.1-flash")}
    assert Counter((r["agent"], r["condition"]) for r in records(project)) == Counter(
        {**{(f"litellm:openai/{m}", "paraphrase_3"): 1 for m in E2_MODELS},
         **{(f"litellm:openai/{m}", "guard-no-block"): 1
            for m in ("gemini-3.8-flash", "mai-code-1.1-flash")}})
