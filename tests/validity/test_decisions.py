"""The choices the SPEC left open (``docs/decisions.md``) do not reveal hidden outcomes.

Each decision the agent can see is checked the same way: the same calls, made in every world of
an observation-equivalent group (T: timeout_pre/post/late/late_tail; E: http500_pre/post), get
byte-identical answers at identical times, including the re-issue that lands on the decision (a
repeated upsert, a second refund, a re-created ticket). Decisions that are not about hidden
outcomes (search words, the explicit warning, grading, the Δ reading) name the test that pins
them; every ``D-…`` heading of the page must appear here, and every entry here on the page.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from limbo_plugin.spec.registry import SpecRegistry
from tests.world.worldkit import GROUP_E, GROUP_T, make_box, observe, write_args

DOC = Path(__file__).resolve().parents[2] / "docs" / "decisions.md"
Steps = list[tuple[str, dict[str, Any]]]
LATER = ("wait", {"seconds": 4000})  # past every late commit and redelivery


def repeated(tool: str, args: dict[str, Any]) -> Steps:
    """The faulted call, its immediate re-issue, and one more after every in-flight request."""
    return [(tool, args), (tool, args), LATER, (tool, args)]


UPSERT_EXISTING = {"table": "feature_flags", "key": {"flag": "dark_mode"},
                   "values": {"enabled": True}}
UPSERT_NEW = {"table": "feature_flags", "key": {"flag": "offline_mode"},
              "values": {"enabled": True, "cohort": "beta"}}

VISIBLE: dict[str, list[tuple[str, Steps]]] = {
    "D-upsert-single-answer": [("db_upsert", repeated("db_upsert", UPSERT_EXISTING)),
                               ("db_upsert", repeated("db_upsert", UPSERT_NEW))],
    "D-intent-ids": [
        ("db_upsert", repeated("db_upsert", UPSERT_NEW)),
        ("billing_refund_charge",
         repeated("billing_refund_charge", {"charge_id": "ch_seed_dup"})),
    ],
    "D-idempotent-repeats": [
        ("tickets_set_status",
         repeated("tickets_set_status", {"ticket_id": "OPS-1001", "status": "resolved"})),
        ("billing_refund_charge",
         repeated("billing_refund_charge", {"charge_id": "ch_seed_dup"})),
        ("social_delete_post",
         repeated("social_delete_post", {"platform": "x", "post_id": "x_seed1"})),
        ("deploy_cancel_run", repeated("deploy_cancel_run", {"run_id": "run_seed1"})),
    ],
    "D-request-ids": [(tool, repeated(tool, write_args(tool)))
                      for tool in ("billing_create_charge", "mastodon_publish", "x_publish",
                                   "email_send", "db_insert_row", "tickets_add_comment")],
    "D-ticket-numbers": [("tickets_create", repeated("tickets_create",
                                                     write_args("tickets_create")))],
    "D-deploy-status": [("deploy_trigger", repeated("deploy_trigger",
                                                    write_args("deploy_trigger")))],
}
"""Per visible decision: the focal tool and the calls whose answers must not differ."""

PINNED: dict[str, str] = {
    "D-search-terms":
        "tests/world/test_world_consistency.py::test_a_search_term_finds_other_forms_of_its_word",
    "D-explicit-keyed":
        "tests/world/test_world_services.py::test_explicit_keyed_docs_never_contradict_a_key",
    "D-superseded":
        "tests/validity/test_grader.py::test_reopening_a_resolved_ticket_undoes_the_status_change",
    "D-resolve-twice":
        "tests/validity/test_grader.py::test_resolving_again_after_reopening_counts_twice",
    "D-behaviour-told": "tests/validity/test_grader.py::test_behaviour_coder",
    "D-seeded-ids":
        "tests/validity/test_grader.py::test_changing_another_customers_seeded_row_is_collateral",
    "D-wait-bound": "tests/conditions/test_conditions_wait.py::"
                    "test_the_bound_runs_from_every_unknown_request_not_only_the_first",
    "D-icc-within-cells": "tests/stats/test_stats_intervals.py::"
                          "test_icc_within_cells_by_hand_on_a_strong_family_effect",
    "D-behaviour-observes": "tests/validity/test_coder_agrees.py::"
                            "test_only_a_read_that_could_show_the_write_verifies",
    "D-stakes-keyed": "tests/report/test_report_tables.py::"
                  "test_h4_stakes_irreversible_against_reversible",
    "D-icc-per-configuration": "tests/report/test_one_interval.py::"
                               "test_a_cell_does_not_move_when_other_agents_join",
}
"""Decisions that are not about hidden outcomes, and the test that pins each."""


def test_every_decision_on_the_page_is_checked() -> None:
    headings = set(re.findall(r"^### (D-[a-z-]+)", DOC.read_text(), flags=re.MULTILINE))
    checked = set(VISIBLE) | set(PINNED) | {"D-outage-retry-after"}
    assert headings == checked
    for target in PINNED.values():
        path, name = target.split("::")
        assert f"def {name}(" in (DOC.parents[1] / path).read_text(), target


CASES = [(decision, tool, steps) for decision, cases in VISIBLE.items()
         for tool, steps in cases]


@pytest.mark.parametrize("group", [GROUP_T, [m for m in GROUP_E if m != "partial_batch"]],
                         ids=["T", "E"])
@pytest.mark.parametrize(("decision", "tool", "steps"), CASES,
                         ids=[f"{d}-{t}-{i}" for i, (d, t, _) in enumerate(CASES)])
def test_a_visible_decision_answers_identically_across_hidden_outcomes(
        registry: SpecRegistry, decision: str, tool: str, steps: Steps, group: list[str]
) -> None:
    seen = {}
    for mode in group:
        box = make_box(registry, mode=mode, tool=tool)
        seen[mode] = observe(box, steps)
        assert box.transport.fired, (decision, mode)
    reference = seen[group[0]]
    assert all(obs == reference for obs in seen.values()), {
        mode: [text for text, _ in obs] for mode, obs in seen.items()}
    assert any("error" not in text for text, _ in reference), "the re-issues were answered"


def test_the_outage_hint_does_not_tell_how_long_the_outage_lasts(registry: SpecRegistry
                                                                ) -> None:
    """D-outage-retry-after: every call in the window, read or write, early or late, gets the
    same explicit refusal with the same 60 s hint; after the window the service answers."""
    box = make_box(registry, mode="outage", tool="tickets_create")
    answers = [box.call("tickets_create", write_args("tickets_create"))]
    for name, args, pause in [("tickets_list", {"project": "OPS"}, 59),
                              ("tickets_create", write_args("tickets_create"), 120),
                              ("tickets_get", {"ticket_id": "OPS-1001"}, 100)]:
        box.call("wait", {"seconds": pause})
        answers.append(box.call(name, args))
    assert box.now < 300
    assert len({a.text() for a in answers}) == 1
    assert answers[0].retry_after_s == 60 and answers[0].is_explicit_refusal
    box.call("wait", {"seconds": 300})
    assert not box.call("tickets_create", write_args("tickets_create")).is_error

