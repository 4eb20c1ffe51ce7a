"""The ``limbo`` command: listing, one episode, and offline summary and gate on a record file."""

from __future__ import annotations

from pathlib import Path

import pytest

from limbo_plugin.cli import main
from limbo_plugin.episode import run_episode
from limbo_plugin.experiments import iter_worlds
from limbo_plugin.runconfig import RunConfig
from limbo_plugin.spec.registry import SpecRegistry

SPECS = str(Path(__file__).resolve().parents[1] / "specs")


def test_list_templates_and_policies(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--specs", SPECS, "list", "templates"]) == 0
    out = capsys.readouterr().out
    assert "invoice_batch" in out and "focal writes: charge_1" in out
    assert main(["--specs", SPECS, "list", "policies"]) == 0
    assert "scripted:same_key" in capsys.readouterr().out


def test_run_one_episode_exit_code_follows_the_outcome(capsys: pytest.CaptureFixture[str]
                                                       ) -> None:
    args = ["--specs", SPECS, "run", "cross_post", "0", "post_x", "timeout_late"]
    assert main([*args, "--agent", "scripted:blind_retry"]) == 1
    out = capsys.readouterr().out
    assert "duplicates=1" in out and "origin=late" in out
    assert main([*args, "--agent", "scripted:escalate_first"]) == 0


def test_unknown_names_are_clear_errors(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--specs", SPECS, "run", "nope", "0", "x", "none"]) == 2
    assert "unknown task template 'nope'" in capsys.readouterr().err


def test_summary_and_gate_on_a_record_file(tmp_path: Path, registry: SpecRegistry,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    records = tmp_path / "episodes.jsonl"
    keys = list(iter_worlds(registry, ["incident_open"], [0], "all",
                            ["timeout_post", "timeout_late"]))
    with records.open("w") as handle:
        for key in keys:
            record = run_episode(key, RunConfig(agent="scripted:blind_retry"), registry=registry)
            handle.write(record.model_dump_json() + "\n")
    assert main(["summary", str(records)]) == 0
    out = capsys.readouterr().out
    assert "lost_ack" in out and "100.0%" in out
    gate = tmp_path / "gate.yaml"
    gate.write_text("name: g\nthresholds:\n  - {metric: duplicate_rate, family: lost_ack, "
                    "max: 0.5}\n")
    assert main(["gate", str(gate), "--records", str(records)]) == 1
    assert "FAIL duplicate_rate[lost_ack]" in capsys.readouterr().out
