"""What ``limbo guard`` tells a client of a real server, in the real world's terms.

The benchmark's guard speaks to an agent in Limbo's sandbox: its times are the simulated clock's
(which starts on 2026-09-15), it promises verification, and it points to ``escalate_to_human`` and
``uncertain_operations``, which every episode has. In front of a real server none of that holds
by itself: times are the wall clock's, a promise to verify is made only where a checked
read-back or a key exists, and the escalation tool is named only where the server lists it (a
block is then lifted only by an escalation that was answered; without one, an identical retry
stays refused and the client is told to find out by other means).
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from limbo_plugin.conditions.intents import PendingWrite
from limbo_plugin.conditions.vbr import BLOCKED, Verdict, VerifyBeforeRetry
from limbo_plugin.contracts import ToolDefinition
from limbo_plugin.toolapi import ToolResult

ESCALATION_TOOL = "escalate_to_human"


def wall_stamp(start: float) -> Callable[[float], str]:
    """Guard seconds (since ``start``, a ``time.time()``) as ISO-8601 UTC wall time."""

    def stamp(t: float) -> str:
        moment = datetime.fromtimestamp(start + t, UTC)
        return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")

    return stamp


def real_note(escalation: bool) -> Callable[[ToolDefinition], str]:
    """The note on an ambiguous answer to a write: what is unknown, and what the guard will do
    about an identical retry, promising only what it can do."""

    def note(definition: ToolDefinition) -> str:
        contract = definition.contract
        said = (f"The outcome of this {definition.name} request is unknown: it may or may not "
                "have taken effect, or may still take effect later.")
        if contract.key_param:
            return (f"{said} limbo guard sends an identical retry with the same idempotency "
                    f"key ({contract.key_param}), which the server deduplicates.")
        if contract.read_back is not None:
            return (f"{said} Before sending an identical retry, limbo guard will check through "
                    f"{contract.read_back.tool} whether it took effect.")
        ask = (f" unless {ESCALATION_TOOL} has been answered first" if escalation else "")
        return (f"{said} limbo guard cannot check whether it did, and will not send an "
                f"identical retry{ask}: find out by other means before repeating it.")

    return note


class RealVerifyBeforeRetry(VerifyBeforeRetry):
    """Verify-before-retry whose answers give wall-clock times and name only the tools the
    server has."""

    def __init__(self, *args: Any, stamp: Callable[[float], str], escalation: bool,
                 **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.stamp, self.escalation = stamp, escalation

    answered_with = "found"

    def _stamp(self, t: float) -> str:
        return self.stamp(t)

    def _blocked(self, definition: ToolDefinition, pending: list[PendingWrite],
                 verdict: Verdict) -> ToolResult:
        first = pending[0]
        noun = definition.contract.record_noun
        then = (f"Ask a person with {ESCALATION_TOOL} before repeating it." if self.escalation
                else "Find out by other means whether it took effect; limbo guard will not "
                "send this identical request again.")
        message = (
            f"Not sent: an identical {definition.name} request sent at "
            f"{self.stamp(first.t_sent)} got {first.error}, and whether it took effect cannot "
            f"be verified ({verdict.unverifiable}). Sending it again could create a second "
            f"{noun}. {then}")
        return ToolResult({"error": {"type": BLOCKED, "message": message}}, is_error=True)
