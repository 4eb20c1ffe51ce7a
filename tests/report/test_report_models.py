"""The tables built on model fits and agreement statistics: Table 4, H1, observation
equivalence and stability.

These check what the report hands to :mod:`limbo_plugin.stats` (which episodes, factors, formula,
pairs) and how it lays out what comes back, with the statistics replaced by recording stand-ins;
the statistics themselves are tested in ``tests/stats``.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from reportkit import cell, load, record, trace, write

import limbo_plugin.stats as stats
from limbo_plugin.records import EpisodeRecord
from limbo_plugin.report.render import to_markdown
from limbo_plugin.report.tables.base import Skipped, Table
from limbo_plugin.report.tables.equivalence import table_equivalence, table_stability
from limbo_plugin.report.tables.regression import table_h1
from limbo_plugin.report.tables.shapley import ONE_LEVEL, table4
from limbo_plugin.store.view import EpisodeView


def rows_of(tmp_path: Path, records: Sequence[EpisodeRecord]) -> list[EpisodeView]:
    return load([write(tmp_path / "records.jsonl", records)]).rows


class Recorder:
    """Stands in for a statistics function: remembers its arguments, returns ``result``."""

    def __init__(self, result: Any) -> None:
        self.calls: list[tuple[tuple[Any, ...], dict[str, Any]]] = []
        self.result = result

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        self.calls.append((args, kwargs))
        return self.result(*args, **kwargs) if callable(self.result) else self.result


def test_table4_fits_only_varying_factors_per_column(tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    def shapley(rows: Sequence[dict[str, Any]], outcome: str, factors: Sequence[str]) -> Any:
        share = 1 / len(factors)
        return SimpleNamespace(r2=0.25, contributions={f: 0.25 * share for f in factors},
                               shares={f: share for f in factors}, n=len(rows))

    fake = Recorder(shapley)
    monkeypatch.setattr(stats, "shapley_pseudo_r2", fake)
    records = [*cell(4, 1, agent="litellm:m1"), *cell(4, 3, agent="litellm:m2"),
               *cell(4, 4, agent="litellm:m1", fault_mode="timeout_late"),
               *cell(4, 2, agent="litellm:m2", fault_mode="timeout_late"),
               *cell(4, 0, agent="litellm:m2", fault_mode="timeout_pre"),  # not in any column
               *cell(4, 4, agent="litellm:m2", condition="guard"),  # a mitigation: left out
               *cell(4, 4, agent="litellm:m2", instruction="no_cue")]
    table = table4(rows_of(tmp_path, records))
    assert isinstance(table, Table)
    calls = {tuple(kw.get("factors", args[2])): args[0] for args, kw in fake.calls}
    # pooled: model and fault vary; resolvable and unresolvable: only the model does.
    assert [list(k) for k in calls] == [["model", "fault"], ["model"]]
    (args, _), resolvable_call, unresolvable_call = fake.calls
    assert len(args[0]) == 16 and args[1] == "duplicate"
    assert sum(r["duplicate"] for r in args[0]) == 10
    assert {r["model"] for r in args[0]} == {"m1", "m2"}
    assert {r["harness"] for r in args[0]} == {"minimal"}
    assert len(resolvable_call[0][0]) == 8 and len(unresolvable_call[0][0]) == 8
    by_factor = {r["factor"]: r for r in table.rows}
    assert by_factor["model"] == {"factor": "model", "pooled": 0.5, "resolvable": 1.0,
                                  "unresolvable": 1.0}
    assert by_factor["fault"]["pooled"] == 0.5 and by_factor["fault"]["resolvable"] == ONE_LEVEL
    assert by_factor["harness"]["pooled"] == ONE_LEVEL
    assert by_factor["contract"]["pooled"] == ONE_LEVEL
    assert by_factor["pseudo-R²"]["pooled"] == 0.25
    assert by_factor["episodes"] == {"factor": "episodes", "pooled": 16, "resolvable": 8,
                                     "unresolvable": 8}


def test_table4_says_why_a_column_is_not_fitted(tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    fake = Recorder(lambda rows, outcome, factors: SimpleNamespace(
        r2=0.1, contributions={}, shares={f: 1.0 for f in factors}, n=len(rows)))
    monkeypatch.setattr(stats, "shapley_pseudo_r2", fake)
    records = [*cell(4, 1, agent="litellm:m1"), *cell(4, 3, agent="litellm:m2")]
    table = table4(rows_of(tmp_path, records))
    assert isinstance(table, Table)
    assert "unresolvable: no episodes." in table.notes
    assert len(fake.calls) == 2  # pooled and resolvable
    same = [*cell(4, 0, agent="litellm:m1"), *cell(4, 0, agent="litellm:m2")]
    result = table4(rows_of(tmp_path, same))
    assert isinstance(result, Skipped)
    assert "pooled: every episode has the same duplicate outcome" in result.reason


def test_h1_formula_and_both_fits(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def fit(value: float) -> Any:
        return SimpleNamespace(odds_ratio={"weak_read_path": value},
                               ci_low={"weak_read_path": value / 2},
                               ci_high={"weak_read_path": value * 2},
                               pvalue={"weak_read_path": 0.007}, n=18, groups=3)

    bayes, gee = Recorder(fit(6.4)), Recorder(fit(2.9))
    monkeypatch.setattr(stats, "bayes_mixed_logit", bayes)
    monkeypatch.setattr(stats, "gee_logit", gee)
    templates = ("t1", "t2", "t3")
    records = [*cell(6, 5, templates=templates, focal_verification="eventual",
                     focal_tool="email_send", agent="litellm:m1"),
               *cell(6, 1, templates=templates, agent="litellm:m2", first_instance=10),
               *cell(6, 0, templates=templates, focal_idempotency="key_optional",
                     focal_accepts_key=True, fault_mode="timeout_late", first_instance=20),
               *cell(3, 3, templates=templates, fault_mode="timeout_pre"),  # not committed
               *cell(6, 6, templates=templates, contract="keys_everywhere"),  # not native
               *cell(6, 6, templates=templates, condition="vbr")]  # not vanilla
    table = table_h1(rows_of(tmp_path, records))
    assert isinstance(table, Table)
    (data, formula), kwargs = bayes.calls[0][0], bayes.calls[0][1]
    assert formula == "duplicate ~ weak_read_path + C(model) + C(fault)"
    assert kwargs["random"] == {"template": "0 + C(template)",
                                "instance": "0 + C(template_instance)"}
    assert len(data) == 18 and sum(d["weak_read_path"] for d in data) == 6
    assert {d["template_instance"] for d in data} >= {"t1#0", "t2#10", "t3#20"}
    assert gee.calls[0][1]["cluster"] == "template"
    assert [(str(r["method"]).split()[0], r["odds_ratio"], r["p"]) for r in table.rows] == [
        ("Bayesian", 6.4, None), ("GEE", 2.9, 0.007)]


def test_h1_skipped_when_the_writes_are_all_alike(tmp_path: Path) -> None:
    result = table_h1(rows_of(tmp_path, cell(6, 2, templates=("t1", "t2", "t3"))))
    assert isinstance(result, Skipped) and "all of one kind" in result.reason


def _focal_then(tool: str, next_tool: str) -> list[Any]:
    return trace((tool, 0.0, 30.0, True, "agent"), (next_tool, 30.0, 31.0, False, "agent"))


def test_observation_equivalence_pairs_matched_worlds(tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    agreement = Recorder(lambda pairs: sum(a == b for a, b in pairs) / len(pairs))
    permutation = Recorder(lambda pairs, **kw: SimpleNamespace(
        statistic=0.1, null_mean=0.12, pvalue=0.6, n_pairs=len(pairs), permutations=10_000))
    monkeypatch.setattr(stats, "first_action_agreement", agreement)
    monkeypatch.setattr(stats, "permutation_tv_test", permutation)
    tool = "tickets_create"
    worlds = [
        record(fault_mode="timeout_pre", trace=_focal_then(tool, "tickets_list")),
        record(fault_mode="timeout_post", trace=_focal_then(tool, "tickets_list")),
        record(fault_mode="timeout_late", trace=_focal_then(tool, tool)),
        record(fault_mode="http500_pre", trace=_focal_then(tool, "wait")),
        record(fault_mode="http500_post", trace=_focal_then(tool, "wait")),
        record(fault_mode="timeout_post", template="other", trace=_focal_then(tool, "wait")),
    ]
    again = [record(fault_mode="timeout_post", trace=_focal_then(tool, "tickets_list"),
                    repeat=1),
             record(fault_mode="timeout_late", trace=_focal_then(tool, "tickets_list"),
                    repeat=1)]
    loaded = load([write(tmp_path / "a.jsonl", worlds), write(tmp_path / "b.jsonl",
                                                                      again)])
    table = table_equivalence(loaded.rows, loaded.repeats)
    assert isinstance(table, Table)
    (pairs,), _ = permutation.calls[0]
    # One pair per world and error group, absent against committed: the timeout triple gives
    # one pair (pre, post), not three dependent ones; the late world and "other" pair with none.
    assert pairs == [("wait", "wait"),  # http500_pre, http500_post (group E)
                     ("tickets_list", "tickets_list")]  # timeout_pre, timeout_post (group T)
    (row,) = table.rows
    assert row["matched_pairs"] == 2 and row["matched_agreement"] == pytest.approx(1.0)
    # Repeats: only the worlds that pair (the post world agrees with its rerun).
    assert row["repeat_pairs"] == 1 and row["repeat_agreement"] == pytest.approx(1.0)
    assert (row["tv"], row["tv_null"], row["p"]) == (0.1, 0.12, 0.6)


def test_observation_equivalence_skipped_without_matched_worlds(tmp_path: Path) -> None:
    result = table_equivalence(rows_of(tmp_path, cell(3, 1)), [])
    assert isinstance(result, Skipped) and "matched worlds" in result.reason


def test_stability_kappa_over_repeat_runs(tmp_path: Path,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    kappa = Recorder(0.42)
    monkeypatch.setattr(stats, "cohens_kappa", kappa)
    first = cell(6, 3)
    second = [r.model_copy(update={"duplicates": int(i in (0, 1, 5)), "repeat": 1})
              for i, r in enumerate(first)]
    loaded = load([write(tmp_path / "a.jsonl", first),
                           write(tmp_path / "b.jsonl", second)])
    table = table_stability(loaded.rows, loaded.repeats)
    assert isinstance(table, Table)
    (x, y), _ = kappa.calls[0]
    assert sorted(zip(x, y, strict=True)) == sorted(
        [(True, True), (True, True), (True, False), (False, False), (False, False),
         (False, True)])
    (row,) = table.rows
    assert row["repeat_pairs"] == 6 and row["agreement"] == pytest.approx(4 / 6)
    assert row["kappa"] == 0.42
    assert isinstance(table_stability(loaded.rows, []), Skipped)


# -- the same tables on the real statistics, with hand-computed values ---------------------------
def test_table4_real_fit_gives_the_whole_variance_to_the_deciding_factor(tmp_path: Path
                                                                         ) -> None:
    # m1 always duplicates, m2 never; the fault mode is balanced and irrelevant. The model
    # predicts every outcome (McFadden R² = 1) and the fault adds nothing.
    records = [r for agent, k in (("litellm:m1", 4), ("litellm:m2", 0))
               for mode in ("timeout_post", "timeout_late")
               for r in cell(4, k, agent=agent, fault_mode=mode,
                             first_instance=10 * ("m2" in agent))]
    table = table4(rows_of(tmp_path, records))
    assert isinstance(table, Table)
    by_factor = {r["factor"]: r for r in table.rows}
    assert by_factor["pseudo-R²"]["pooled"] == pytest.approx(1.0)
    assert by_factor["model"]["pooled"] == pytest.approx(1.0)
    assert by_factor["fault"]["pooled"] == pytest.approx(0.0, abs=1e-9)
    assert by_factor["episodes"]["pooled"] == 16
    assert "| episodes | 16 | 8 | 8 |" in to_markdown(table)


def test_table4_bottom_is_the_native_contract_only(tmp_path: Path) -> None:
    """Fed E3 + E3k, as the README's reproduction does, Table 4 decomposes E3's native episodes:
    E3k's keys-everywhere vanilla episodes are another contract, not a level of a factor."""
    e3 = [r for agent, k in (("harness:copilot:m1", 4), ("litellm:m2", 1))
          for mode in ("timeout_post", "timeout_late")
          for r in cell(4, k, agent=agent, fault_mode=mode, experiment="e3",
                        first_instance=10 * ("m2" in agent))]
    e3k = [r for agent in ("harness:copilot:m1", "litellm:m2")
           for r in cell(4, 0, agent=agent, fault_mode="timeout_late", experiment="e3k",
                         contract="keys_everywhere", first_instance=20 + 10 * ("m2" in agent))]
    alone = table4(rows_of(tmp_path, e3))
    both = table4(load([write(tmp_path / "e3.jsonl", e3), write(tmp_path / "e3k.jsonl",
                                                                    e3k)]).rows)
    assert isinstance(alone, Table) and isinstance(both, Table)
    assert both.rows == alone.rows
    assert {r["factor"]: r["pooled"] for r in both.rows}["episodes"] == 16


def test_equivalence_and_stability_real_values(tmp_path: Path) -> None:
    tool = "tickets_create"
    worlds = [record(fault_mode="timeout_pre", trace=_focal_then(tool, "tickets_list")),
              record(fault_mode="timeout_post", trace=_focal_then(tool, "tickets_list")),
              record(fault_mode="timeout_late", trace=_focal_then(tool, tool)),
              record(fault_mode="http500_pre", trace=_focal_then(tool, "wait")),
              record(fault_mode="http500_post", trace=_focal_then(tool, "wait"),
                     duplicated=True)]
    again = [record(fault_mode="timeout_post", trace=_focal_then(tool, "tickets_list"),
                    duplicated=True, repeat=1),
             record(fault_mode="timeout_late", trace=_focal_then(tool, "tickets_list"),
                    repeat=1),
             record(fault_mode="http500_post", trace=_focal_then(tool, "wait"),
                    duplicated=True, repeat=1),
             record(fault_mode="timeout_pre", trace=_focal_then(tool, "tickets_list"),
                    repeat=1)]
    loaded = load([write(tmp_path / "a.jsonl", worlds),
                           write(tmp_path / "b.jsonl", again)])
    table = table_equivalence(loaded.rows, loaded.repeats)
    assert isinstance(table, Table)
    (row,) = table.rows
    # Pairs (absent, committed): (list, list) in group T, (wait, wait) in group E: both agree.
    assert row["matched_agreement"] == pytest.approx(1.0)
    assert row["tv"] == pytest.approx(0.0)  # the same first actions in both worlds
    assert 0.0 <= row["p"] <= 1.0  # type: ignore[operator]
    # Repeats of the paired worlds (pre, post, http500_post): all three agree.
    assert row["repeat_pairs"] == 3 and row["repeat_agreement"] == pytest.approx(1.0)
    stability = table_stability(loaded.rows, loaded.repeats)
    assert isinstance(stability, Table)
    (kappa,) = stability.rows
    # Duplicates, first run / repeat: (F,T), (F,F), (T,T), (F,F): p_o = 3/4,
    # p_e = ¼·½ + ¾·½ = ½ → κ = (¾ − ½) / (1 − ½) = ½.
    assert kappa["agreement"] == pytest.approx(0.75)
    assert kappa["kappa"] == pytest.approx(0.5)


def test_h1_real_fits_find_the_weak_read_path_effect(tmp_path: Path) -> None:
    templates = ("t1", "t2", "t3", "t4")
    records = [*cell(16, 12, templates=templates, focal_verification="eventual",
                     focal_tool="email_send"),
               *cell(16, 3, templates=templates, first_instance=10)]
    table = table_h1(rows_of(tmp_path, records))
    assert isinstance(table, Table)
    bayes, gee = table.rows
    assert gee["episodes"] == 32 and gee["clusters"] == 4
    for row in (bayes, gee):
        assert row["odds_ratio"] > 1  # type: ignore[operator]
        assert row["ci_low"] <= row["odds_ratio"] <= row["ci_high"]  # type: ignore[operator]
    # Without clustering the odds ratio is (12·13)/(4·3) = 13; the fits stay in its range.
    assert 3 < gee["odds_ratio"] < 40  # type: ignore[operator]
    # The GEE row, recomputed from the records with statsmodels and scipy directly.
    import warnings

    import numpy as np
    import pandas as pd
    import statsmodels.api as sm
    from scipy.stats import t as student_t

    frame = pd.DataFrame({"y": [int(r.duplicates > 0) for r in records],
                          "weak": [int(r.focal_verification == "eventual") for r in records],
                          "template": [r.template for r in records]})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fit = sm.GEE.from_formula("y ~ weak", groups="template", data=frame,
                                  family=sm.families.Binomial(),
                                  cov_struct=sm.cov_struct.Exchangeable()
                                  ).fit(cov_type="bias_reduced")
    beta, se = float(fit.params["weak"]), float(fit.bse["weak"])
    q = float(student_t.ppf(0.975, 3))
    assert gee["odds_ratio"] == pytest.approx(np.exp(beta), rel=1e-6)
    assert (gee["ci_low"], gee["ci_high"]) == (pytest.approx(np.exp(beta - q * se), rel=1e-6),
                                               pytest.approx(np.exp(beta + q * se), rel=1e-6))
    assert gee["p"] == pytest.approx(2 * student_t.sf(abs(beta / se), 3), rel=1e-6)



def test_a_failed_fit_is_a_stated_reason_not_a_crash(tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise ValueError("the logistic fit did not converge")

    monkeypatch.setattr(stats, "shapley_pseudo_r2", refuse)
    records = [*cell(4, 1, agent="litellm:m1"), *cell(4, 3, agent="litellm:m2")]
    result = table4(rows_of(tmp_path, records))
    assert isinstance(result, Skipped)
    assert "pooled: the fit failed (the logistic fit did not converge)" in result.reason
    monkeypatch.setattr(stats, "gee_logit", refuse)
    templates = ("t1", "t2", "t3")
    h1 = table_h1(rows_of(tmp_path, [
        *cell(6, 5, templates=templates, focal_verification="eventual"),
        *cell(6, 1, templates=templates, first_instance=10)]))
    assert isinstance(h1, Table)
    assert [r["method"].split()[0] for r in h1.rows] == ["Bayesian"]  # type: ignore[union-attr]
    assert "The fit failed — GEE: the fit did not converge on these episodes" in h1.notes


def test_h1_says_in_words_why_a_fit_failed(tmp_path: Path) -> None:
    """Every write with a weak read path duplicated: the odds ratio is infinite. The table says
    so in words, never with a formula or a library's raw message."""
    templates = ("t1", "t2", "t3")
    records = [*cell(6, 6, templates=templates, focal_verification="eventual"),
               *cell(6, 1, templates=templates, first_instance=10)]
    weak = [r for r in records if r.focal_verification == "eventual"]
    assert all(r.duplicates > 0 for r in weak)  # separation, by construction
    h1 = table_h1(rows_of(tmp_path, records))
    text = h1.reason if isinstance(h1, Skipped) else " ".join(h1.notes)
    assert "GEE: among these episodes some level of a term" in text
    assert "odds ratio is infinite" in text
    for raw in ("~", "C(", "weak_read_path", "Traceback", "Error"):
        assert raw not in text
