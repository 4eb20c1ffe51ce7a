"""The ``limbo`` command: listing, one episode, and offline summary and gate on a record file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from limbo_plugin.cli import main
from limbo_plugin.episode import run_episode
from limbo_plugin.experiments import iter_worlds
from limbo_plugin.runconfig import RunConfig
from limbo_plugin.spec.registry import SpecRegistry

SPECS = str(Path(__file__).resolve().parents[2] / "specs")


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


def test_gate_never_passes_on_records_that_all_errored(tmp_path: Path, registry: SpecRegistry,
                                                       capsys: pytest.CaptureFixture[str]
                                                       ) -> None:
    records = tmp_path / "episodes.jsonl"
    keys = list(iter_worlds(registry, ["incident_open"], [0], "all", ["timeout_post"]))
    with records.open("w") as handle:
        for key in keys:
            record = run_episode(key, RunConfig(agent="scripted:verify_first"),
                                 registry=registry)
            record = record.model_copy(
                update={"error": "openai/x: AuthenticationError (HTTP 401): invalid key"})
            handle.write(record.model_dump_json() + "\n")
    gate = tmp_path / "gate.yaml"
    gate.write_text("name: g\nthresholds:\n  - {metric: duplicate_rate, family: lost_ack, "
                    "max: 0.5}\n")
    assert main(["gate", str(gate), "--records", str(records)]) == 1
    out = capsys.readouterr().out
    assert "FAILED (0 of 1 checks passed" in out
    assert f"all {len(keys)} recorded episode(s) ended in an infrastructure error" in out


@pytest.mark.parametrize(("argv", "message"), [
    (["summary", "{tmp}"], "is a directory; give a records file such as"),
    (["summary", "{tmp}/missing.jsonl"], "missing.jsonl does not exist"),
    (["show", "x", "--records", "{tmp}"], "is a directory"),
    (["run", "cross_post", "0", "post_y", "timeout_late"],
     "unknown focal write 'post_y' of cross_post instance 0; valid: post_x, post_mastodon"),
    (["run", "cross_post", "0", "post_x", "none"],
     "a fault-free episode (mode none) has focal write 'baseline'"),
    (["run", "cross_post", "0", "post_x", "timeout_latte"], "unknown fault mode 'timeout_latte'"),
    (["run", "cross_post", "-1", "post_x", "timeout_late"], "instances are numbered from 0"),
    (["run", "cross_post", "x", "post_x", "timeout_late"], "not a number: 'x'"),
    (["gate", "{tmp}/nope.yaml"], "nope.yaml: cannot read file"),
    (["runs", "{tmp}/nothing.jsonl"], "does not exist and has no history/ beside it"),
    (["lst"], "invalid choice: 'lst'"),
])
def test_every_cli_error_is_one_line_and_exit_2(tmp_path: Path, argv: list[str], message: str,
                                                capfd: pytest.CaptureFixture[str]) -> None:
    argv = [arg.replace("{tmp}", str(tmp_path)) for arg in argv]
    try:
        status = main(["--specs", SPECS, *argv])
    except SystemExit as exit_:  # argparse's own errors
        status = int(exit_.code or 0)
    err = capfd.readouterr().err
    assert status == 2
    assert message in err
    assert len(err.strip().splitlines()) == 1, err
    assert "Traceback" not in err


def _two_configurations(path: Path, registry: SpecRegistry) -> None:
    key = next(iter_worlds(registry, ["cross_post"], [0], ["post_x"], ["timeout_late"]))
    with path.open("w") as handle:
        for config in (RunConfig(agent="scripted:blind_retry"),
                       RunConfig(agent="scripted:blind_retry", condition="guard")):
            handle.write(run_episode(key, config, registry=registry).model_dump_json() + "\n")


def test_show_takes_exactly_what_pytest_prints_and_lists_ambiguous_matches(
        tmp_path: Path, registry: SpecRegistry, capsys: pytest.CaptureFixture[str]) -> None:
    records = tmp_path / "episodes.jsonl"
    _two_configurations(records, registry)
    node = ("specs/experiments/default.yaml::"
            "cross_post-i0-post_x-timeout_late-guard-scripted-blind_retry")
    assert main(["show", node, "--records", str(records)]) == 0
    out = capsys.readouterr().out
    assert out.startswith("cross_post-i0-post_x-timeout_late  [PASS]") and "condition=guard" in out
    assert main(["show", "cross_post-i0-post_x-timeout_late-scripted-blind_retry",
                 "--records", str(records), "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["condition"] == "vanilla" and shown["duplicates"] == 1
    assert main(["show", "cross_post-i0-post_x-timeout_late", "--records", str(records)]) == 2
    err = capsys.readouterr().err
    assert ("matches 2 episodes" in err and "cross_post-i0-post_x-timeout_late-scripted-"
            "blind_retry, cross_post-i0-post_x-timeout_late-guard-scripted-blind_retry" in err)
    assert main(["show", "cross_post-i0-post_x-timeout_lat", "--records", str(records)]) == 2
    assert "did you mean: cross_post-i0-post_x-timeout_late" in capsys.readouterr().err


def test_version_and_runs(tmp_path: Path, registry: SpecRegistry,
                          capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as done:
        main(["--version"])
    assert done.value.code == 0 and capsys.readouterr().out.startswith("limbo ")
    records = tmp_path / "episodes.jsonl"
    _two_configurations(records, registry)
    (tmp_path / "history").mkdir()
    old = tmp_path / "history" / "episodes.20260101T000000Z.jsonl"
    old.write_text(records.read_text().splitlines()[0] + "\n")
    assert main(["runs", str(records)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split()[:3] == ["file", "written", "(UTC)"]
    assert str(records) in lines[2] and " 2 " in lines[2] and "2 configurations" in lines[2]
    assert str(old) in lines[3] and "scripted:blind_retry" in lines[3]


def test_running_the_command_in_process_leaves_signal_handling_alone() -> None:
    """``main`` runs inside other programs too (this test process; an xdist worker): setting
    SIGPIPE to its default there would kill the host on its next write to a closed pipe, such
    as a subprocess's stdin, silently."""
    import signal

    before = signal.getsignal(signal.SIGPIPE)
    assert main(["--specs", SPECS, "list", "policies"]) == 0
    assert signal.getsignal(signal.SIGPIPE) == before


def test_a_reader_that_goes_away_ends_the_command_quietly(monkeypatch: pytest.MonkeyPatch,
                                                          capsys: pytest.CaptureFixture[str]
                                                          ) -> None:
    """``limbo list tools | head``: the pipe closes under the command; no traceback."""
    import io

    class ClosedPipe(io.StringIO):
        def write(self, text: str) -> int:
            raise BrokenPipeError(32, "Broken pipe")

    monkeypatch.setattr("sys.stdout", ClosedPipe())
    assert main(["--specs", SPECS, "list", "tools"]) == 1
    assert capsys.readouterr().err == ""
