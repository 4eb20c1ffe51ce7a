"""Table 7 lists conditions in the paper's order; a condition missing from that order sorts
after every listed one, by name, which put ``guard-no-promise`` below the oracles."""

from __future__ import annotations

import re

from limbo_plugin.conditions.registry import condition_forms
from limbo_plugin.report.tables.conditions import ORDER, condition_rank


def test_every_condition_the_registry_knows_has_a_place_in_the_order() -> None:
    forms = condition_forms()
    assert "guard-no-promise" in forms
    for form in forms:
        name = re.sub(r"<[^>]+>", "90", form)  # a pattern's instance: wait_<seconds> → wait_90
        assert condition_rank(name)[0] < len(ORDER), f"{form} has no place in ORDER"


def test_the_no_promise_guard_sits_with_the_guard_not_after_the_oracles() -> None:
    ranked = sorted(["outcome_oracle", "guard-no-promise", "guard", "state_oracle"],
                    key=condition_rank)
    assert ranked == ["guard", "guard-no-promise", "state_oracle", "outcome_oracle"]
