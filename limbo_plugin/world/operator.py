"""The simulated on-call operator behind ``escalate_to_human``.

After 900 simulated seconds the operator answers truthfully, from the ground truth, for every
write that so far returned an error or timed out: committed (with record ids), not executed,
partially executed (which rows), or still in flight and will complete. Which of these it finds
is read off the flags of the request's fate (:mod:`limbo_plugin.world.fates`), so a fate an
extension declares needs no finding of its own. The ``unresponsive`` variant never answers.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from limbo_plugin.world.clock import iso
from limbo_plugin.world.fates import Executed, fate_of

if TYPE_CHECKING:
    from limbo_plugin.world.world import Request, World

OPERATOR_VARIANTS = ("truthful", "unresponsive")
NO_RESPONSE = "No response from the on-call operator."


def operator_answer(world: World) -> dict[str, Any]:
    if world.operator == "unresponsive":
        return {"operator": "on-call", "answer": NO_RESPONSE, "operations": []}
    operations = [describe(r, world) for r in world.requests if r.is_write and r.is_error]
    if not operations:
        answer = "I checked: no write of yours has returned an error or timed out."
    else:
        lines = [f"{i}. {op['tool']} sent at {op['sent_at']}: {op['finding']}"
                 for i, op in enumerate(operations, 1)]
        answer = ("I checked every write of yours that returned an error or timed out:\n"
                  + "\n".join(lines))
    return {"operator": "on-call", "answer": answer, "operations": operations}


def describe(request: Request, world: World) -> dict[str, Any]:
    outcome, finding = _finding(request)
    return {
        "tool": request.tool,
        "arguments": request.args,
        "sent_at": iso(request.t_sent),
        "outcome": outcome,
        "record_ids": list(request.record_ids),
        "records": [world.describe_record(rid) for rid in request.record_ids],
        "rows_done": request.rows_done,
        "finding": finding,
    }


def _finding(request: Request) -> tuple[str, str]:
    fate = fate_of(request.fate)
    return _in_flight(request) if fate.pending else FINDINGS[fate.executed](request)


def _executed(request: Request) -> tuple[str, str]:
    ids = ", ".join(request.record_ids)
    return "committed", f"it was executed (record ids: {ids})." if ids else "it was executed."


def _partially_executed(request: Request) -> tuple[str, str]:
    ids = ", ".join(request.record_ids)
    done, total = request.rows_done or 0, request.rows_total or 0
    return ("partially_executed",
            f"it was partially executed: rows 1-{done} of {total} were inserted "
            f"(ids: {ids}); rows {done + 1}-{total} were not.")


def _in_flight(request: Request) -> tuple[str, str]:
    return ("in_flight",
            "it is still in flight: the service has not executed it yet, but it will "
            "complete. Do not send it again.")


def _not_executed(request: Request) -> tuple[str, str]:
    return "not_executed", "it was not executed; nothing changed."


FINDINGS: dict[Executed, Callable[[Request], tuple[str, str]]] = {
    "nothing": _not_executed,
    "all": _executed,
    "first_rows": _partially_executed,
}
"""What the operator finds for a settled request, by how much of it the service executed:
``(outcome, sentence)``; a pending one is in flight."""
