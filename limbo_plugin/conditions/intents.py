"""Which calls are the same intent, and which writes a middleware knows to have unknown outcomes.

A *re-issue* is a later call of the same tool whose intent fields (from the contract) equal the
earlier call's; for a batch write, other intent fields equal and at least one row shared. This is
the definition the recovery-behaviour coder uses (SPEC §5), so a condition intercepts exactly the
calls the grader would call re-issues.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any

from limbo_plugin.contracts import NON_IDEMPOTENT_CLASSES, ToolDefinition
from limbo_plugin.toolapi import ToolResult, canonical_json


def intent_of(definition: ToolDefinition, args: dict[str, Any]) -> dict[str, Any]:
    """The values of the contract's intent fields in ``args``."""
    return {name: args.get(name) for name in definition.contract.intent_fields}


def intent_digest(definition: ToolDefinition, args: dict[str, Any]) -> str:
    """A stable fingerprint of ``(tool, intent)``: equal for every call of the same intent."""
    text = canonical_json({"tool": definition.name, "intent": intent_of(definition, args)})
    return hashlib.sha256(text.encode()).hexdigest()


def is_reissue(definition: ToolDefinition, earlier: dict[str, Any], later: dict[str, Any]
               ) -> bool:
    """Whether ``later`` re-issues ``earlier`` (both calls of ``definition``)."""
    contract = definition.contract
    batch = contract.batch_field
    if batch is None:
        return intent_of(definition, earlier) == intent_of(definition, later)
    others = [f for f in contract.intent_fields if f != batch]
    if any(earlier.get(f) != later.get(f) for f in others):
        return False
    rows = _rows(later, batch)
    return any(row in rows for row in _rows(earlier, batch))


def is_non_idempotent_write(definition: ToolDefinition) -> bool:
    """A write a repeat can duplicate (with or without key support); the ones worth guarding."""
    return definition.is_write and definition.contract.idempotency in NON_IDEMPOTENT_CLASSES


def key_of(definition: ToolDefinition, args: dict[str, Any]) -> str | None:
    param = definition.contract.key_param
    key = args.get(param) if param else None
    return key if isinstance(key, str) else None


def _rows(args: dict[str, Any], batch: str) -> list[Any]:
    rows = args.get(batch)
    return rows if isinstance(rows, list) else []


@dataclass(frozen=True)
class PendingWrite:
    """A write request whose response was ambiguous (timeout or 5xx): it may have executed."""

    tool: str
    args: dict[str, Any]
    t_sent: float
    t_answered: float
    error: str


@dataclass
class UnknownOutcomes:
    """The writes this harness sent and does not know the outcome of, as the harness saw them.

    Built only from the requests the harness forwarded and the responses it got back, never from
    the world.
    """

    entries: list[PendingWrite] = field(default_factory=list)

    def add(self, definition: ToolDefinition, args: dict[str, Any], t_sent: float,
            t_answered: float, result: ToolResult) -> None:
        self.entries.append(PendingWrite(tool=definition.name, args=dict(args), t_sent=t_sent,
                                         t_answered=t_answered, error=describe_error(result)))

    def matching(self, definition: ToolDefinition, args: dict[str, Any]) -> list[PendingWrite]:
        """The unknown-outcome writes that ``args`` would re-issue, oldest first."""
        return [p for p in self.entries
                if p.tool == definition.name and is_reissue(definition, p.args, args)]

    def resolve(self, definition: ToolDefinition, args: dict[str, Any]) -> None:
        """Forget the writes ``args`` re-issues: their intent is now known to be done."""
        matched = self.matching(definition, args)
        self.entries = [p for p in self.entries if p not in matched]


def describe_error(result: ToolResult) -> str:
    """A short name for an ambiguous error, for messages (``a timeout``, ``HTTP 500``)."""
    if result.error_type == "timeout":
        return "a timeout"
    if result.status is not None:
        return f"HTTP {result.status}"
    return f"an error ({result.error_type})"
