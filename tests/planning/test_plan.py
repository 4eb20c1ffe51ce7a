"""``limbo plan``: episodes, model calls, tokens and cost of an experiment before it runs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from limbo_plugin.agents.options import AgentOptions
from limbo_plugin.agents.provider import import_litellm
from limbo_plugin.cli import main
from limbo_plugin.episode import run_episode
from limbo_plugin.experiments import load_experiment
from limbo_plugin.records import EpisodeKey
from limbo_plugin.runconfig import RunConfig
from limbo_plugin.spec.registry import SpecRegistry
from limbo_plugin.testing.models import PolicyModel
from limbo_plugin.testing.openai_server import OpenAIServer

SPECS = Path(__file__).resolve().parents[2] / "specs"


def test_a_scripted_agent_costs_nothing(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["plan", "--experiment", "e1", "--agent", "scripted:verify_first"]) == 0
    out = capsys.readouterr().out
    assert "Experiment e1: 854 episode(s)." in out  # e1.yaml: 716 + 138 per model
    assert "scripted:verify_first: 854 episodes, ~0 model calls, ~0 tokens, $0.00" in out


@pytest.mark.parametrize(("agent", "message"), [
    ("scripted:nope", "unknown agent 'scripted:nope'; scripted policies: scripted:blind_retry"),
    ("nope", "unknown agent 'nope'; valid forms: scripted:<policy>"),
    ("harness:nope:x", "unknown harness 'nope'; known: codex, copilot, hermes"),
    ("litellm:", "agent 'litellm:' needs a model"),
])
def test_an_agent_that_does_not_exist_is_refused_not_priced(
        agent: str, message: str, capsys: pytest.CaptureFixture[str]) -> None:
    """It was priced: a mistyped policy at $0, a mistyped harness at "unknown"."""
    assert main(["plan", "--experiment", "e1", "--agent", agent]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err.count("\n") == 1, captured
    assert captured.err.startswith(f"limbo: {message}"), captured.err


def test_a_model_is_priced_from_litellms_map(capsys: pytest.CaptureFixture[str]) -> None:
    price = import_litellm().model_cost["gpt-4o"]
    expected = 854 * 12_000 * (0.9 * price["input_cost_per_token"]
                               + 0.1 * price["output_cost_per_token"])
    assert main(["plan", "--experiment", "e1", "--agent", "litellm:openai/gpt-4o",
                 "--completion-share", "0.1"]) == 0
    out = capsys.readouterr().out
    assert f"~{854 * 12_000:,} tokens, ${expected:,.2f}" in out


def test_an_unknown_model_has_an_unknown_cost(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["plan", "--experiment", "e1", "--agent", "litellm:openai/no-such-model"]) == 0
    out = capsys.readouterr().out
    assert "unknown (no known price for openai/no-such-model)" in out
    assert "plus 1 agent(s) of unknown cost" in out


# -- from the user's own recording (--cassette) --------------------------------------------------
PILOT_MODES = ("timeout_post", "timeout_late", "redelivery")
PLANNED = "litellm:openai/gpt-4o"


@pytest.fixture(scope="module")
def pilot(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A real pilot run of the scaffold (litellm against a local scripted model): its records
    file and its cassette directory."""
    registry = SpecRegistry.load(SPECS)
    root = tmp_path_factory.mktemp("pilot")
    cassette = root / "cassette"
    keys = [EpisodeKey(template="incident_open", instance=0, focal_write="ticket", fault_mode=m)
            for m in PILOT_MODES]
    with OpenAIServer(PolicyModel("verify_first", registry=registry)) as server:
        options = AgentOptions(model_options=server.model_options(), cassette=str(cassette),
                               cassette_mode="record", provider_backoff_s=0.01)
        records = [run_episode(key, RunConfig(agent="litellm:openai/scripted"),
                               registry=registry, agent_options=options) for key in keys]
    path = root / "pilot.jsonl"
    path.write_text("".join(r.model_dump_json() + "\n" for r in records), encoding="utf-8")
    return path, cassette


def planned_modes(experiment: str) -> list[str]:
    registry = SpecRegistry.load(SPECS)
    spec = load_experiment(SPECS / "experiments" / f"{experiment}.yaml", registry)
    return [e.key.fault_mode for e in spec.episodes(registry, {"agent": PLANNED}, RunConfig())]


def price(model: str) -> tuple[float, float]:
    info = import_litellm().model_cost[model]
    return info["input_cost_per_token"], info["output_cost_per_token"]


def test_a_records_file_gives_usage_per_episode_and_fault_mode(
        pilot: tuple[Path, Path], capsys: pytest.CaptureFixture[str]) -> None:
    lines = [json.loads(line) for line in pilot[0].read_text().splitlines()]
    by_mode = {r["fault_mode"]: r["usage"] for r in lines}
    assert all(u["model_calls"] > 0 for u in by_mode.values())
    overall = {k: sum(u[k] for u in by_mode.values()) / len(by_mode)
               for k in ("model_calls", "prompt_tokens", "completion_tokens")}
    modes = planned_modes("smoke")
    per = [by_mode.get(m, overall) for m in modes]  # unmeasured modes: the agent's mean
    prompt = sum(u["prompt_tokens"] for u in per)
    completion = sum(u["completion_tokens"] for u in per)
    calls = sum(u["model_calls"] for u in per)
    cost = prompt * price("gpt-4o")[0] + completion * price("gpt-4o")[1]

    assert main(["plan", "--experiment", "smoke", "--agent", PLANNED,
                 "--cassette", str(pilot[0])]) == 0
    out = capsys.readouterr().out
    assert (f"{PLANNED}: {len(modes)} episodes, ~{calls:,.0f} model calls, "
            f"~{prompt + completion:,.0f} tokens, ${cost:,.2f}") in out
    assert (f"measured: 3 episode(s) of litellm:openai/scripted in {pilot[0]}, "
            f"3 of {len(set(modes))} fault mode(s) covered") in out
    # not the paper's 12k tokens per episode
    assert f"~{len(modes) * 12_000:,} tokens" not in out


def test_a_folder_of_records_files_is_read_whole(
        pilot: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """As ``limbo reproduce --small`` leaves a pilot: one file per experiment and agent, and
    earlier runs under history/ (not read)."""
    lines = pilot[0].read_text().splitlines(keepends=True)
    (tmp_path / "e1").mkdir()
    (tmp_path / "e2" / "history").mkdir(parents=True)
    (tmp_path / "e1" / "a.jsonl").write_text(lines[0])
    (tmp_path / "e2" / "b.jsonl").write_text("".join(lines[1:]))
    (tmp_path / "e2" / "history" / "b.old.jsonl").write_text("not a record\n")
    (tmp_path / "e2" / "b.summary.json").write_text('{"families": []}')  # as pytest leaves it
    assert main(["plan", "--experiment", "smoke", "--agent", PLANNED,
                 "--cassette", str(tmp_path)]) == 0
    whole = capsys.readouterr().out
    assert main(["plan", "--experiment", "smoke", "--agent", PLANNED,
                 "--cassette", str(pilot[0])]) == 0
    single = capsys.readouterr().out
    assert "measured: 3 episode(s)" in whole
    assert whole.replace(str(tmp_path), "X") == single.replace(str(pilot[0]), "X")


def test_a_cassette_directory_gives_tokens_per_call(
        pilot: tuple[Path, Path], capsys: pytest.CaptureFixture[str]) -> None:
    entries = [json.loads(p.read_text()) for p in pilot[1].glob("*/*.json")]
    assert entries
    prompt = sum(e["response"]["prompt_tokens"] for e in entries) / len(entries)
    completion = sum(e["response"]["completion_tokens"] for e in entries) / len(entries)
    calls = 9.7 * len(planned_modes("smoke"))
    cost = calls * (prompt * price("gpt-4o")[0] + completion * price("gpt-4o")[1])

    assert main(["plan", "--experiment", "smoke", "--agent", PLANNED,
                 "--cassette", str(pilot[1])]) == 0
    out = capsys.readouterr().out
    assert f"~{calls:,.0f} model calls, ~{calls * (prompt + completion):,.0f} tokens, " \
           f"${cost:,.2f}" in out
    assert f"tokens per call measured: {len(entries)} call(s)" in out


def test_an_agent_the_recording_lacks_keeps_the_papers_figures(
        pilot: tuple[Path, Path], capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["plan", "--experiment", "e1", "--agent", "harness:codex:gpt-5.6-sol",
                 "--cassette", str(pilot[0])]) == 0
    out = capsys.readouterr().out
    assert f"~{854 * 153_000:,} tokens" in out
    assert f"not in {pilot[0]}: the paper's figures" in out


KEY = "ab" + "0" * 62
BAD_CASSETTES = {
    "missing": (None, "no such file or directory; give a records file (--limbo-records) or a "
                      "cassette directory"),
    "not JSONL": ("summary: not records\n", ":1: not an episode record (not a JSON object)"),
    "empty directory": ({}, "a directory without cassette entries"),
    "corrupt entry": ({f"ab/{KEY}.json": "{not json"}, f"{KEY}.json: not a cassette entry ("),
    "entry without tokens": ({f"ab/{KEY}.json": '{"request": {"model": "m"}, "response": {}}'},
                             f"{KEY}.json: not a cassette entry (missing 'prompt_tokens')"),
    "summaries only": ({"e1/run.summary.json": "{}"}, "a directory without cassette entries"),
}


@pytest.mark.parametrize("case", sorted(BAD_CASSETTES))
def test_a_bad_cassette_is_one_line_naming_it(case: str, tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    content, message = BAD_CASSETTES[case]
    path = tmp_path / "given"
    if isinstance(content, str):
        path.write_text(content)
    elif isinstance(content, dict):
        path.mkdir()
        for name, text in content.items():
            (path / name).parent.mkdir(parents=True, exist_ok=True)
            (path / name).write_text(text)
    assert main(["plan", "--experiment", "e1", "--cassette", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert err.startswith(f"limbo: --cassette {path}")
    assert message in err


def test_records_of_scripted_agents_have_no_usage_to_measure(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    registry = SpecRegistry.load(SPECS)
    key = EpisodeKey(template="incident_open", instance=0, focal_write="ticket",
                     fault_mode="timeout_post")
    record = run_episode(key, RunConfig(agent="scripted:blind_retry"), registry=registry)
    path = tmp_path / "scripted.jsonl"
    path.write_text(record.model_dump_json() + "\n")
    assert main(["plan", "--experiment", "e1", "--cassette", str(path)]) == 2
    err = capsys.readouterr().err
    assert err == (f"limbo: --cassette {path}: no finished episode with model usage (it holds "
                   "1 record(s) of scripted:blind_retry); scripted and MCP agents make no model "
                   "call: record a pilot run of a litellm: or harness: agent with "
                   "--limbo-records\n")


def test_a_cassette_and_a_token_figure_conflict(pilot: tuple[Path, Path],
                                                capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["plan", "--experiment", "e1", "--cassette", str(pilot[0]),
                 "--tokens-per-episode", "5000"]) == 2
    assert "--cassette and --tokens-per-episode" in capsys.readouterr().err


def test_the_plan_selects_as_the_run_will_with_k_m_and_a_sample(
        capsys: pytest.CaptureFixture[str]) -> None:
    args = ["plan", "--experiment", "default", "--agent", "litellm:openai/gpt-4o-mini"]
    assert main([*args, "-k", "late_commit"]) == 0
    late = capsys.readouterr().out
    assert "Experiment default: 138 episode(s) selected by -k 'late_commit'." in late
    assert "litellm:openai/gpt-4o-mini: 138 episodes" in late
    assert main([*args, "-m", "lost_ack"]) == 0
    assert "69 episode(s) selected by -m 'lost_ack'" in capsys.readouterr().out
    assert main([*args, "-k", "late_commit", "--sample", "5"]) == 0
    pilot = capsys.readouterr().out
    assert "5 episode(s) selected by -k 'late_commit' --sample '5'" in pilot
    assert "litellm:openai/gpt-4o-mini: 5 episodes, ~48 model calls" in pilot
    assert main([*args, "-m", "not_a_marker and ("]) == 2
    assert "Wrong expression passed to '-m': not_a_marker and (" in capsys.readouterr().err
