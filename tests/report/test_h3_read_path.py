"""H3: duplicates after a verified lost acknowledgement, eventual against strong read paths.

The cells are recomputed from the records without the generator's code: the scope by hand
from the records' own fields, the rate's interval with ρ from two statsmodels OLS fits, and the
GEE with statsmodels' GEE and scipy's t directly.
"""

from __future__ import annotations

import subprocess
import sys
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from reportkit import cell, clusters, load, record, same_configs, within_cell_rho, write

from limbo_plugin.records import EpisodeRecord
from limbo_plugin.report.render import to_markdown
from limbo_plugin.report.tables.base import RateCell, Skipped, Table
from limbo_plugin.report.tables.readpath import table_h3
from limbo_plugin.stats import rate_with_interval

TEMPLATES = ("t1", "t2", "t3", "t4", "t5")
EVENTUAL = {"focal_verification": "eventual", "focal_tool": "email_send"}


def verified(n: int, k: int, *, first_instance: int, **fields: Any) -> list[EpisodeRecord]:
    """``n`` lost-acknowledgement episodes read back before any re-issue, ``k`` duplicated."""
    out = cell(n, k, templates=TEMPLATES, first_instance=first_instance,
               fault_mode="timeout_post", **fields)
    return [r.model_copy(update={"behaviour": "verify_then_retry" if r.duplicates else
                                 "verify_then_skip"}) for r in out]


def out_of_scope() -> list[EpisodeRecord]:
    """Episodes H3 must leave out, each duplicated so that letting one in moves a cell."""
    common: dict[str, Any] = {"templates": TEMPLATES, "fault_mode": "timeout_post"}
    return [
        *cell(5, 5, first_instance=100, behaviour="blind_retry", **common),  # not read back
        *cell(5, 5, first_instance=110, behaviour="verify_then_retry",
              fault_mode="timeout_late", templates=TEMPLATES),  # a late commit, not a lost ack
        *cell(5, 5, first_instance=120, behaviour="verify_then_retry",
              fault_mode="http500_post", templates=TEMPLATES),  # a 500, not a timeout
        *cell(5, 5, first_instance=130, behaviour="verify_then_retry", condition="guard",
              **common),  # a mitigation
        *cell(5, 5, first_instance=140, behaviour="verify_then_retry",
              contract="keys_everywhere", **common),  # another contract
        *cell(5, 5, first_instance=150, behaviour="verify_then_retry",
              focal_accepts_key=True, **common),  # a keyable write: its read path is moot
        *cell(5, 5, first_instance=160, behaviour="verify_then_retry",
              focal_verification=None, **common),  # nothing to read back
    ]


def in_scope_by_hand(records: Sequence[EpisodeRecord]) -> list[EpisodeRecord]:
    return [r for r in records
            if r.fired and r.fault_mode == "timeout_post"
            and r.behaviour in ("verify_then_retry", "verify_then_skip")
            and r.condition == "vanilla" and r.contract == "native"
            and r.docs == "default" and r.instruction == "default"
            and r.operator == "truthful" and not r.focal_accepts_key
            and r.focal_idempotency == "non_idempotent"
            and r.focal_verification in ("eventual", "strong")]


def dup(r: EpisodeRecord) -> bool:
    return r.duplicates > 0


def independent_gee(scope: Sequence[EpisodeRecord]) -> tuple[float, float, float, float]:
    """Odds ratio, 95% bounds and p of the eventual read path: statsmodels' GEE with the
    Mancl–DeRouen covariance and a t reference on G − 1 df, built here from the records."""
    import numpy as np
    import pandas as pd
    import statsmodels.api as sm
    from scipy.stats import t as student_t

    frame = pd.DataFrame({"y": [int(dup(r)) for r in scope],
                          "eventual": [int(r.focal_verification == "eventual") for r in scope],
                          "template": [r.template for r in scope]})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fit = sm.GEE.from_formula("y ~ eventual", groups="template", data=frame,
                                  family=sm.families.Binomial(),
                                  cov_struct=sm.cov_struct.Exchangeable()
                                  ).fit(cov_type="bias_reduced")
    df = frame["template"].nunique() - 1
    beta, se = float(fit.params["eventual"]), float(fit.bse["eventual"])
    q = float(student_t.ppf(0.975, df))
    p = float(2 * student_t.sf(abs(beta / se), df))
    return float(np.exp(beta)), float(np.exp(beta - q * se)), float(np.exp(beta + q * se)), p


def test_h3_cells_recomputed_from_the_records(tmp_path: Path) -> None:
    eventual = verified(30, 9, first_instance=0, **EVENTUAL)
    strong = verified(30, 2, first_instance=50)
    records = [*eventual, *strong, *out_of_scope()]
    table = table_h3(load([write(tmp_path / "e1.jsonl", records)]).rows)
    assert isinstance(table, Table), table

    scope = in_scope_by_hand(records)
    assert len(scope) == 60
    (row,) = table.rows
    assert row["episodes"] == 60
    for key, members in (("eventual", [r for r in scope if r.focal_verification == "eventual"]),
                         ("strong", [r for r in scope if r.focal_verification == "strong"])):
        got = row[key]
        assert isinstance(got, RateCell)
        k = sum(map(dup, members))
        assert (got.k, got.n) == (k, 30)
        counted = [r for r in records if r.fired or r.family == "none"]
        expected = rate_with_interval(clusters(members, dup),
                                      icc=within_cell_rho(same_configs(counted, members), dup))
        assert (got.low, got.high) == (pytest.approx(expected.low), pytest.approx(expected.high))
    assert (row["eventual"].k, row["strong"].k) == (9, 2)  # type: ignore[union-attr]

    odds, low, high, p = independent_gee(scope)
    assert row["odds_ratio"] == pytest.approx(odds, rel=1e-6)
    assert (row["ci_low"], row["ci_high"]) == (pytest.approx(low, rel=1e-6),
                                               pytest.approx(high, rel=1e-6))
    assert row["p"] == pytest.approx(p, rel=1e-6)
    assert row["clusters"] == 5
    assert odds > 1, "the eventual read path duplicates more"


def test_h3_pools_agents_with_the_model_as_a_fixed_effect(tmp_path: Path) -> None:
    records = [*verified(20, 8, first_instance=0, agent="litellm:m1", **EVENTUAL),
               *verified(20, 1, first_instance=30, agent="litellm:m1"),
               *verified(20, 5, first_instance=0, agent="litellm:m2", **EVENTUAL),
               *verified(20, 2, first_instance=30, agent="litellm:m2")]
    table = table_h3(load([write(tmp_path / "e1.jsonl", records)]).rows)
    assert isinstance(table, Table)
    assert [r["agent"] for r in table.rows] == ["litellm:m1", "litellm:m2", "all agents"]
    assert "eventual_read_path + C(model)" in table.description
    m1, m2, pooled = table.rows
    assert m1.get("p") is None and m2.get("p") is None, "the GEE is fitted on the pooled row"
    assert pooled["episodes"] == 80 and isinstance(pooled["p"], float)
    assert pooled["eventual"].k == 13  # type: ignore[union-attr]


def test_separation_is_one_line_and_nothing_reaches_the_terminal(tmp_path: Path) -> None:
    """No duplicate on the strong read path: the GEE's odds ratio is infinite. The rates stay,
    the note says why there is no fit in one line, and the command prints no warning."""
    records = [*verified(20, 6, first_instance=0, **EVENTUAL),
               *verified(20, 0, first_instance=30)]
    path = write(tmp_path / "e1.jsonl", records)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        table = table_h3(load([path]).rows)
    assert caught == []
    assert isinstance(table, Table)
    (row,) = table.rows
    assert row["eventual"].k == 6 and row["strong"].k == 0  # type: ignore[union-attr]
    assert row.get("odds_ratio") is None
    (reason,) = [n for n in table.notes if n.startswith("GEE not fitted")]
    assert "\n" not in reason
    assert "separation" in reason and "eventual_read_path = 0 has outcome 0" in reason
    assert reason in to_markdown(table)

    done = subprocess.run([sys.executable, "-W", "default", "-m", "limbo_plugin.cli", "report",
                           str(path), "--out", str(tmp_path / "out")],
                          capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode == 0, done.stderr
    assert "H3: duplicates after a verified lost acknowledgement" in done.stdout
    assert "Warning" not in done.stdout + done.stderr, done.stderr


def test_h3_skipped_without_verified_lost_acknowledgements(tmp_path: Path) -> None:
    result = table_h3(load([write(tmp_path / "r.jsonl", out_of_scope())]).rows)
    assert isinstance(result, Skipped)
    assert "no fired lost-acknowledgement episode in which the agent read back" in result.reason


def test_one_read_path_only_says_why_there_is_no_fit(tmp_path: Path) -> None:
    result = table_h3(load([write(tmp_path / "r.jsonl",
                                  verified(10, 3, first_instance=0))]).rows)
    assert isinstance(result, Table)
    assert "GEE not fitted: the episodes are all on one read path." in result.notes
    assert result.rows[0]["eventual"].n == 0  # type: ignore[union-attr]


def test_a_record_without_the_fields_is_never_in_scope(tmp_path: Path) -> None:
    rec = record(fault_mode="timeout_post", behaviour="verify_then_skip",
                 focal_idempotency=None, focal_verification=None, focal_tool=None)
    assert isinstance(table_h3(load([write(tmp_path / "r.jsonl", [rec])]).rows), Skipped)
