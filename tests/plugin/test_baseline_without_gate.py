"""``--limbo-baseline`` without a gate: the run prints its comparison with the baseline (what
``limbo compare`` prints) after the family table, instead of ignoring the option."""

from __future__ import annotations

import json

import pytest

from limbo_plugin.cli import main


@pytest.mark.parametrize("agent", [[], ["--agent", "scripted:blind_retry"]],
                         ids=["same-agent", "other-agent"])
def test_baseline_prints_the_comparison_after_the_table(project: pytest.Pytester,
                                                         agent: list[str],
                                                         capsys: pytest.CaptureFixture[str]
                                                         ) -> None:
    selection = ["-k", "lost_ack", "-p", "no:randomly"]
    first = project.runpytest(*selection)
    assert "Limbo summary" in first.stdout.str()
    second = project.runpytest(*selection, *agent, "--limbo-baseline", "previous")
    out = second.stdout.str()
    assert "Limbo comparison with the baseline" in out, out[-2000:]
    assert out.index("Limbo summary") < out.index("Limbo comparison with the baseline")
    section = out[out.index("Limbo comparison with the baseline"):]
    assert "B: this run" in section and "lost_ack" in section and "McNemar p" in section
    # The same counts as `limbo compare` on the two files.
    history = sorted((project.path / "reports" / "history").glob("*.jsonl"))
    capsys.readouterr()
    assert main(["--specs", str(project.path / "specs"), "compare", str(history[-1]),
                 str(project.path / "reports" / "episodes.jsonl"), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    (lost_ack,) = [f for f in data["families"] if f["family"] == "lost_ack"]
    row = next(line for line in section.splitlines() if line.startswith("lost_ack "))
    assert row.split()[1:6] == [str(lost_ack[k]) for k in
                                ("paired", "a_held", "b_held", "pass_to_fail", "fail_to_pass")]
    if agent:
        assert lost_ack["pass_to_fail"] > 0
    else:
        assert lost_ack["pass_to_fail"] == lost_ack["fail_to_pass"] == 0
