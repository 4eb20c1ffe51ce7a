"""How the tables slice episodes: families, fault classes, contract classes, model and harness.

Every derived label lives here so that a table, its figure and the explorer agree on it. What
depends on the specs (the families' order and classes, the native contract class of each
tool) is read from the spec registry once, into each row, when the records are loaded
(:class:`~limbo_plugin.report.load.SpecFacts`).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the figures import this module, and nothing of the records
    from limbo_plugin.store.view import EpisodeView

AMBIGUOUS_GROUPS = frozenset({"T", "E"})
"""The observation-equivalence groups whose answer is an error that hides the outcome (SPEC §3:
timeouts, 500s); ``S`` answers success (redelivery), ``-`` is explicit or no fault."""
COMMITTED_OUTCOMES = frozenset({"committed", "late", "partial"})
"""Hidden outcomes in which the request took (or will take) effect."""
CONTRACT_CLASS_ORDER = ("idempotent", "key_optional", "non_idempotent_strong",
                        "non_idempotent_eventual", "non_idempotent_unverifiable")
OUTCOMES = ("passed", "duplicate", "overclaim", "failed")
WAIT_CONDITION = re.compile(r"^wait_(0|[1-9][0-9]*)\Z")


def family_ranks(rows: Sequence[EpisodeView]) -> dict[str, int]:
    """Each family of ``rows`` and its place in the fault spec's order."""
    return {r.family: r.family_rank for r in rows}


def ordered_families(rows: Sequence[EpisodeView]) -> list[str]:
    ranks = family_ranks(rows)
    return sorted(ranks, key=lambda f: (ranks[f], f))


def ambiguous(row: EpisodeView) -> bool:
    """A fired fault whose error does not tell whether the request executed (group T or E)."""
    return row.fired and row.group in AMBIGUOUS_GROUPS


def committed_fault(row: EpisodeView) -> bool:
    """SPEC §3 "committed faults", fired: an ambiguous error behind which the request took, or
    will take, effect (timeout_post, http500_post, partial_batch, the late commits)."""
    return ambiguous(row) and row.hidden_outcome in COMMITTED_OUTCOMES


def committed_or_redelivery(row: EpisodeView) -> bool:
    """The episodes of the paper's pooled analyses: committed faults and redelivery (the
    request executed twice), fired. Selected on the fault spec's labels, so a new family with
    such a hidden outcome is in every table that pools them."""
    return committed_fault(row) or (row.fired and row.hidden_outcome == "duplicated")


def unmitigated(row: EpisodeView) -> bool:
    """The paper's baseline configuration: vanilla condition, default documentation and
    instruction, a truthful operator (E1 and E3's native condition). Any contract variant."""
    return (row.condition == "vanilla" and row.docs == "default"
            and row.instruction == "default" and row.operator == "truthful")


def fault_class(row: EpisodeView) -> str | None:
    """``resolvable`` / ``unresolvable`` by family, as the fault spec classes it (SPEC §3)."""
    return row.fault_class


def contract_class(row: EpisodeView) -> str | None:
    """The focal write's contract class under the *native* contract (see
    :meth:`~limbo_plugin.report.load.SpecFacts.contract_class`)."""
    return row.contract_class


def contract_factor(row: EpisodeView) -> str:
    """Table 4's "contract": the focal write's contract class and the contract variant."""
    return f"{contract_class(row)}|{row.contract}"


def outcome_of(row: EpisodeView) -> str:
    """The explorer's outcome filter: passed, duplicate, overclaim (no duplicate) or failed."""
    if row.passed:
        return "passed"
    if row.duplicated:
        return "duplicate"
    if row.overclaim:
        return "overclaim"
    return "failed"


VARIANTS = {"docs": "default", "instruction": "default", "operator": "truthful"}
"""The documentation, instruction and operator variants, each with its default value."""


def varying_variants(rows: Sequence[EpisodeView]) -> list[str]:
    """Which of the documentation, instruction and operator variants take more than one value.

    Tables keyed by condition and contract split their rows by these too: pooling E4's
    documentation or operator variants (or E6's ``no_cue``) into E2's ``vanilla`` row would
    report a rate that belongs to no configuration."""
    return [name for name in VARIANTS if len({getattr(r, name) for r in rows}) > 1]


def variant_values(row: EpisodeView, names: Sequence[str]) -> tuple[str, ...]:
    return tuple(getattr(row, name) for name in names)


def variant_rank(values: Sequence[str], names: Sequence[str]) -> tuple[tuple[bool, str], ...]:
    """Defaults first, then the other values alphabetically."""
    return tuple((value != VARIANTS[name], value) for value, name in zip(values, names,
                                                                          strict=True))


def varying_config_fields(rows: Sequence[EpisodeView]) -> list[str]:
    """The configuration fields that take more than one value (the agent always counts)."""
    from limbo_plugin.records import RUN_FIELDS

    out = ["agent"]
    for name in RUN_FIELDS[1:]:
        if len({getattr(r, name) for r in rows}) > 1:
            out.append(name)
    return out


def config_labeller(rows: Sequence[EpisodeView],
                    exclude: Sequence[str] = ()) -> tuple[list[str], Callable[[EpisodeView],
                                                                             tuple[str, ...]]]:
    """Column names and a function giving a row's configuration as those columns' values.
    Rows from several experiments (E2 beside E4) also get an ``experiment`` column, after the
    agent's: the same configuration run by two experiments is two rows, never one mixture."""
    names = [n for n in varying_config_fields(rows) if n not in exclude]
    if len({r.experiment for r in rows}) > 1 and "experiment" not in exclude:
        names.insert(1 if names[:1] == ["agent"] else 0, "experiment")

    def label(row: EpisodeView) -> tuple[str, ...]:
        return tuple((row.experiment or "—") if n == "experiment" else getattr(row, n)
                     for n in names)

    return names, label


def wait_bound(condition: str) -> int | None:
    match = WAIT_CONDITION.match(condition)
    return int(match.group(1)) if match else None


TIER_ORDER = ("frontier", "weaker")
"""The tiers tables pool by, in the paper's order (the experiment spec's ``models:`` labels)."""


def pooled(row: EpisodeView) -> bool:
    """Whether pooled statistics include the row's agent: its experiment spec may leave a model
    out (the paper's gpt-4.1, with ``pooled: false``); it is then shown per model only."""
    return row.pooled


def tiers_of(rows: Sequence[EpisodeView]) -> list[str]:
    """The tiers of the pooled agents of ``rows``, in :data:`TIER_ORDER`."""
    present = {r.tier for r in rows if r.pooled and r.tier}
    return [t for t in TIER_ORDER if t in present] + sorted(present - set(TIER_ORDER))


def tier_label(tier: str, rows: Sequence[EpisodeView]) -> str:
    """``frontier (6 models)``: a pooled tier row's label."""
    models = len({r.agent for r in rows if r.pooled and r.tier == tier})
    return f"{tier} ({models} model{'s' if models != 1 else ''})"


def unpooled_note(rows: Sequence[EpisodeView]) -> str | None:
    """The note a table with pooled rows adds when some agent is left out of them."""
    left = sorted({r.agent for r in rows if not r.pooled})
    if not left:
        return None
    return ("Pooled rows leave out " + ", ".join(left) + " (pooled: false in the experiment "
            "spec); shown per model only.")
