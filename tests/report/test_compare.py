"""``limbo compare A B``: paired flips per family between two real runs, with exact McNemar."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from limbo_plugin.cli import main
from limbo_plugin.episode import run_episode
from limbo_plugin.experiments import iter_worlds
from limbo_plugin.records import EpisodeRecord
from limbo_plugin.report.compare import compare_runs, render_text
from limbo_plugin.runconfig import RunConfig
from limbo_plugin.spec.registry import SpecRegistry
from limbo_plugin.stats import mcnemar_exact

MODES = ["none", "timeout_post", "timeout_late", "timeout_late_tail", "redelivery"]


def run(registry: SpecRegistry, **config: str) -> list[EpisodeRecord]:
    keys = iter_worlds(registry, ["cross_post", "incident_open", "invoice_batch"], [0, 1],
                       "all", MODES)
    return [run_episode(key, RunConfig(**config), registry=registry) for key in keys]


def write(path: Path, records: list[EpisodeRecord]) -> Path:
    path.write_text("".join(r.model_dump_json() + "\n" for r in records), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def runs(registry: SpecRegistry) -> dict[str, list[EpisodeRecord]]:
    return {"verify": run(registry), "blind": run(registry, agent="scripted:blind_retry"),
            "guard": run(registry, condition="guard")}


def expected_flips(a: list[EpisodeRecord], b: list[EpisodeRecord]
                   ) -> dict[str, tuple[set[str], set[str]]]:
    """Per family, the test ids of B that went pass→fail and fail→pass, by hand."""
    old = {r.episode_id: r for r in a}
    flips: dict[str, tuple[set[str], set[str]]] = {}
    for new in b:
        before = old[new.episode_id]
        worse, better = flips.setdefault(new.family, (set(), set()))
        if before.passed and not new.passed:
            worse.add(new.test_id)
        elif new.passed and not before.passed:
            better.add(new.test_id)
    return flips


def test_flips_and_mcnemar_per_family(runs: dict[str, list[EpisodeRecord]],
                                      registry: SpecRegistry) -> None:
    a, b = runs["verify"], runs["guard"]
    comparison = compare_runs(a, b, family_order=registry.family_order)
    want = expected_flips(a, b)
    assert comparison.paired == len(a) == len(b)
    assert comparison.compared == ["condition"]
    assert any(f.better for f in comparison.families)  # the guard helps somewhere
    for family in comparison.families:
        worse, better = want[family.family]
        assert {f.b_test_id for f in family.worse} == worse
        assert {f.b_test_id for f in family.better} == better
        assert family.p_value == mcnemar_exact(len(worse), len(better))
        assert family.p_holm >= family.p_value
        assert family.a_held == sum(r.passed for r in a if r.family == family.family)
    order = [f.family for f in comparison.families]
    assert order == [f for f in registry.family_order if f in order]


def test_errors_are_left_out_and_unpaired_counted(runs: dict[str, list[EpisodeRecord]]) -> None:
    a = runs["verify"]
    b = [r.model_copy(update={"error": "provider down"}) if i == 0 else r
         for i, r in enumerate(runs["blind"][:-2])]
    comparison = compare_runs(a, b)
    assert comparison.paired == len(a) - 3
    assert comparison.only_a == 3 and comparison.only_b == 0
    assert comparison.b.errors == 1
    assert "infrastructure errors left out: A 0, B 1" in "\n".join(render_text(comparison))


def test_fields_that_vary_within_a_run_pair_like_with_like(
        runs: dict[str, list[EpisodeRecord]]) -> None:
    both = runs["verify"] + runs["blind"]
    comparison = compare_runs(both, list(reversed(both)))
    assert comparison.paired_on == ["agent"]
    assert comparison.paired == len(both)
    assert not any(f.worse or f.better for f in comparison.families)


def test_cli_text_and_json(runs: dict[str, list[EpisodeRecord]], tmp_path: Path,
                           capsys: pytest.CaptureFixture[str]) -> None:
    a = write(tmp_path / "a.jsonl", runs["verify"])
    b = write(tmp_path / "b.jsonl", runs["blind"])
    want = expected_flips(runs["verify"], runs["blind"])
    assert main(["compare", str(a), str(b)]) == 0
    text = capsys.readouterr().out
    assert "agent=scripted:verify_first" in text and "agent=scripted:blind_retry" in text
    assert "pass→fail" in text and "McNemar p" in text
    for worse, _ in want.values():
        for test_id in sorted(worse)[:1]:
            assert f"  {test_id}\n" in text
    assert main(["compare", str(a), str(b), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["compared"] == ["agent"]
    got = {f["family"]: {x["b_test_id"] for x in f["pass_to_fail_ids"]}
           for f in data["families"]}
    assert got == {family: worse for family, (worse, _) in want.items()}
    assert all(f["pass_to_fail"] == len(f["pass_to_fail_ids"]) for f in data["families"])


def test_cli_bad_file_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    assert main(["compare", str(tmp_path / "nope.jsonl"), str(empty)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "nope.jsonl does not exist" in err
    assert main(["compare", str(empty), str(empty)]) == 2
    assert "holds no records" in capsys.readouterr().err


def test_raw_and_holm_p_are_both_shown_labelled(runs: dict[str, list[EpisodeRecord]],
                                                 registry: SpecRegistry) -> None:
    """``limbo compare``, the gate and the HTML panel show the exact McNemar p and the
    Holm-adjusted one side by side (Holm recomputed here with statsmodels)."""
    from statsmodels.stats.multitest import multipletests

    from limbo_plugin.report.gate import BaselineSpec, compare_with_baseline

    a, b = runs["verify"], runs["blind"]
    comparison = compare_runs(a, b, family_order=registry.family_order,
                              outcome="no_duplicate")
    flips = {f.family: (len(f.worse), len(f.better)) for f in comparison.families}
    raw = {f: mcnemar_exact(w, b_) for f, (w, b_) in flips.items()}
    adjusted = dict(zip(raw, multipletests(list(raw.values()), method="holm")[1], strict=True))
    assert any(adjusted[f] != raw[f] for f in raw)
    text = render_text(comparison)
    header = next(line for line in text if line.startswith("family"))
    assert "McNemar p" in header and "Holm p" in header
    for family in comparison.families:
        row = next(line for line in text if line.split()[:1] == [family.family])
        assert f"{raw[family.family]:.3g}  " in row + "  "
        assert f"{adjusted[family.family]:.3g}" in row
    checks = compare_with_baseline(BaselineSpec(outcome="no_duplicate"), b, a)
    for check in checks:
        name = check.name.split("[", 1)[1].split("]", 1)[0]
        assert f"exact McNemar p={raw[name]:.3g}" in check.detail
        assert f"Holm-adjusted p={adjusted[name]:.3g}" in check.detail
