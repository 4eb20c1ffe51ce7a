"""How the tables slice episodes: families, fault classes, contract classes, model and harness.

Every derived label lives here so that a table, its figure and the explorer agree on it.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from functools import cache

from limbo_plugin.report.load import EpisodeRow

FAMILY_ORDER = ("not_executed", "lost_ack", "misleading_500", "partial_batch", "late_commit",
                "redelivery", "explicit", "none")
RESOLVABLE = frozenset({"lost_ack", "misleading_500", "partial_batch"})
UNRESOLVABLE = frozenset({"late_commit", "redelivery"})
COMMITTED_MODES = frozenset({"timeout_post", "http500_post", "partial_batch", "timeout_late",
                             "timeout_late_tail"})
"""SPEC §3 "committed faults": the request took (or will take) effect behind an error."""
CONTRACT_CLASS_ORDER = ("idempotent", "key_optional", "non_idempotent_strong",
                        "non_idempotent_eventual", "non_idempotent_unverifiable")
OUTCOMES = ("passed", "duplicate", "overclaim", "failed")
CONFIG_FIELDS = ("agent", "contract", "docs", "instruction", "condition", "operator")
WAIT_CONDITION = re.compile(r"^wait_(0|[1-9][0-9]*)$")


def family_rank(family: str) -> int:
    return FAMILY_ORDER.index(family) if family in FAMILY_ORDER else len(FAMILY_ORDER)


def ordered_families(rows: Sequence[EpisodeRow]) -> list[str]:
    return sorted({r.family for r in rows}, key=lambda f: (family_rank(f), f))


def committed_or_redelivery(row: EpisodeRow) -> bool:
    """The episodes of the paper's pooled analyses: committed faults and redelivery, fired."""
    return row.fired and (row.fault_mode in COMMITTED_MODES or row.family == "redelivery")


def unmitigated(row: EpisodeRow) -> bool:
    """The paper's baseline configuration: vanilla condition, default documentation and
    instruction, a truthful operator (E1 and E3's native condition). Any contract variant."""
    return (row.condition == "vanilla" and row.docs == "default"
            and row.instruction == "default" and row.operator == "truthful")


def fault_class(row: EpisodeRow) -> str | None:
    """``resolvable`` / ``unresolvable`` by family (SPEC §3), whatever the record says."""
    if row.family in RESOLVABLE:
        return "resolvable"
    if row.family in UNRESOLVABLE:
        return "unresolvable"
    return None


def contract_class(row: EpisodeRow) -> str | None:
    """The focal write's contract class under the *native* contract.

    Rows of one class must line up across contract variants (Table 5 compares the same writes
    natively and with keys everywhere), but a ``keys_everywhere`` record describes its focal write
    as key-optional. The native class is looked up in the specs by tool; a tool the specs do not
    know falls back to the class the record states.
    """
    if row.focal_tool is None:
        return None
    native = native_contract_classes().get(row.focal_tool)
    if native is not None:
        return native
    return classify(row.focal_idempotency, row.focal_verification, row.focal_accepts_key)


def classify(idempotency: str | None, verification: str | None,
             accepts_key: bool | None) -> str | None:
    if idempotency is None:
        return None
    if idempotency in ("idempotent", "naturally_idempotent"):
        return "idempotent"
    if accepts_key or idempotency == "key_optional":
        return "key_optional"
    suffix = {"strong": "strong", "eventual": "eventual"}.get(verification or "", "unverifiable")
    return f"non_idempotent_{suffix}"


_SPECS_DIR: list[str | None] = [None]


def use_specs(specs_dir: str | None) -> None:
    """Point contract-class lookups at another specs directory (``limbo --specs``)."""
    _SPECS_DIR[0] = specs_dir
    native_contract_classes.cache_clear()


@cache
def native_contract_classes() -> dict[str, str]:
    from limbo_plugin.errors import LimboError
    from limbo_plugin.spec.registry import get_registry

    try:
        catalog = get_registry(_SPECS_DIR[0]).catalog("native")
    except LimboError:
        return {}
    out = {}
    for tool in catalog.tools.values():
        if tool.is_write:
            label = classify(tool.contract.idempotency, tool.contract.verification,
                             tool.accepts_key)
            if label:
                out[tool.name] = label
    return out


def contract_factor(row: EpisodeRow) -> str:
    """Table 4's "contract": the focal write's contract class and the contract variant."""
    return f"{contract_class(row)}|{row.contract}"


def harness_of(agent: str) -> str:
    """``harness:<name>:…`` → name; ``litellm:``, ``scripted:`` and anything else → minimal."""
    parts = agent.split(":")
    if parts[0] == "harness" and len(parts) >= 2 and parts[1]:
        return parts[1]
    return "minimal"


def model_of(agent: str) -> str:
    """The model behind an agent: ``litellm:M`` → M, ``harness:H:M`` → M, scripted → policy."""
    kind, _, rest = agent.partition(":")
    if kind == "harness":
        _, _, model = rest.partition(":")
        return model or rest
    return rest or agent


def outcome_of(row: EpisodeRow) -> str:
    """The explorer's outcome filter: passed, duplicate, overclaim (no duplicate) or failed."""
    if row.passed:
        return "passed"
    if row.duplicated:
        return "duplicate"
    if row.overclaim:
        return "overclaim"
    return "failed"


def varying_config_fields(rows: Sequence[EpisodeRow]) -> list[str]:
    """The configuration fields that take more than one value (the agent always counts)."""
    out = ["agent"]
    for name in CONFIG_FIELDS[1:]:
        if len({getattr(r, name) for r in rows}) > 1:
            out.append(name)
    return out


def config_labeller(rows: Sequence[EpisodeRow],
                    exclude: Sequence[str] = ()) -> tuple[list[str], Callable[[EpisodeRow],
                                                                             tuple[str, ...]]]:
    """Column names and a function giving a row's configuration as those columns' values."""
    names = [n for n in varying_config_fields(rows) if n not in exclude]

    def label(row: EpisodeRow) -> tuple[str, ...]:
        return tuple(getattr(row, n) for n in names)

    return names, label


def wait_bound(condition: str) -> int | None:
    match = WAIT_CONDITION.match(condition)
    return int(match.group(1)) if match else None
