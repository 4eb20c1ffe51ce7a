"""Which writes a middleware knows to have unknown outcomes.

Re-issues are recognised by :meth:`ToolDefinition.is_reissue`, the definition the
recovery-behaviour coder uses (SPEC §5), so a condition intercepts exactly the calls the grader
would call re-issues.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from limbo_plugin.contracts import NON_IDEMPOTENT_CLASSES, ToolDefinition
from limbo_plugin.toolapi import ToolResult


def is_non_idempotent_write(definition: ToolDefinition) -> bool:
    """A write a repeat can duplicate (with or without key support); the ones worth guarding."""
    return definition.is_write and definition.contract.idempotency in NON_IDEMPOTENT_CLASSES


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
                if p.tool == definition.name and definition.is_reissue(p.args, args)]

    def resolve(self, definition: ToolDefinition, args: dict[str, Any]) -> None:
        """Forget the writes ``args`` re-issues: their intent is now known to be done."""
        matched = self.matching(definition, args)
        self.entries = [p for p in self.entries if p not in matched]


def describe_error(result: ToolResult) -> str:
    """A short name for an ambiguous error, for messages (``a timeout``, ``HTTP 500``)."""
    if result.error_type == "timeout":
        return "a timeout"
    if result.error_type == "connection_closed":
        return "a closed connection"
    if result.status is not None:
        return f"HTTP {result.status}"
    return f"an error ({result.error_type})"
