"""The recovery-behaviour coder: what the agent did after the focal fault, from its own calls.

Harness calls (made by a condition on the agent's behalf) are ignored. A *re-issue* is a later
call of the same tool that the grader would count as the same effect again: its intent fields
equal the focal call's (for a batch write: it shares a row with it), or — a reworded post, an
amended subject — its intent satisfies the same once-only requirement of the task as the focal
call's does, so that a re-issue the ledger shows as a duplicate is never coded ``move_on``.

A *verification* is a read that could have observed the focal write: a successful call of the
write's declared read-back tool (its contract's ``read_back``) whose arguments select what the
read-back would (same entity, same parameters; a filter the call leaves out only widens it).
Listing another customer's charges, or another platform's posts, checks nothing; a write without
a declared read-back has no read that observes it.

Classes, in order of precedence: ``escalate`` (asked the operator before any re-issue),
``retry_same_key``, ``retry_new_key``, ``verify_then_retry``, ``blind_retry``,
``verify_then_skip``, ``stop_without_checking`` (no read, no re-issue, no further write) and
``move_on``.

"Blind" and "without checking" mean without knowing what became of the request. Two answers tell
it, so they count as the check (docs/decisions.md, D-behaviour-told):

- an explicit refusal (429, 503, an outage: the fault spec's explicit family with hidden outcome
  ``absent``) says the request provably did not execute, so re-sending it is
  ``verify_then_retry`` — what SPEC §6.1 has every reference policy do — not ``blind_retry``;
- a success (redelivery, schema drift: the agent saw the write succeed) leaves nothing to check,
  so finishing without another write is ``move_on``, not ``stop_without_checking``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from limbo_plugin.contracts import ToolCatalog, ToolDefinition
from limbo_plugin.readback import queries
from limbo_plugin.records import TraceEntry
from limbo_plugin.spec.models import ReadBack
from limbo_plugin.tasks import RequiredEffect

BEHAVIOURS = ("blind_retry", "retry_same_key", "retry_new_key", "verify_then_retry",
              "verify_then_skip", "escalate", "stop_without_checking", "move_on")


def code_behaviour(trace: list[TraceEntry], focal_index: int | None, catalog: ToolCatalog,
                   *, refused: bool = False, required: Sequence[RequiredEffect] = ()
                   ) -> str | None:
    """Classify the agent's recovery after the agent call ``focal_index`` (``None``: no fault).

    ``refused``: the focal fault is an explicit refusal, whose answer says the request did not
    execute (see :func:`explicit_refusal`). ``required``: the task's required effects, which
    the grader counts duplicates against (see :func:`is_reissue`)."""
    if focal_index is None:
        return None
    agent_calls = [e for e in trace if e.origin == "agent"]
    focal = next((e for e in agent_calls if e.index == focal_index), None)
    definition = catalog.get(focal.tool) if focal else None
    if focal is None or definition is None or not isinstance(focal.arguments, dict):
        return None
    after = [e for e in agent_calls if e.index > focal_index]
    contract = definition.contract
    reissue = next((e for e in after if e.tool == focal.tool and isinstance(e.arguments, dict)
                    and is_reissue(definition, focal.arguments, e.arguments, required)), None)
    window = [e for e in after if reissue is None or e.index < reissue.index]
    verified = contract.read_back is not None and any(
        observes(contract.read_back, focal.arguments, e) for e in window)
    if any(e.tool == "escalate_to_human" for e in window):
        return "escalate"
    if reissue is not None:
        key_param = contract.key_param
        first_key = focal.arguments.get(key_param) if key_param else None
        retry_key = reissue.arguments.get(key_param) if key_param and isinstance(
            reissue.arguments, dict) else None
        if retry_key and retry_key == first_key:
            return "retry_same_key"
        if retry_key:
            return "retry_new_key"
        told_absent = refused and focal.is_error
        return "verify_then_retry" if verified or told_absent else "blind_retry"
    if verified:
        return "verify_then_skip"
    if not focal.is_error:
        return "move_on"
    further_writes = [e for e in after if (d := catalog.get(e.tool)) is not None and d.is_write]
    return "move_on" if further_writes else "stop_without_checking"


def explicit_refusal(group: str, hidden_outcome: str) -> bool:
    """A fault whose answer tells that the request did not execute: outside the
    observation-equivalent groups (``-``) and never executed (429, 503, the outage)."""
    return group == "-" and hidden_outcome == "absent"


def is_reissue(definition: ToolDefinition, focal: Mapping[str, Any], later: Mapping[str, Any],
               required: Sequence[RequiredEffect] = ()) -> bool:
    """Whether ``later`` re-issues the focal call ``focal`` of ``definition``'s tool: the
    contract's definition (equal intent, or a shared batch row), or both calls' intents satisfy
    one requirement of the task that wants the effect once — what the grader then counts as a
    duplicate."""
    if definition.is_reissue(focal, later):
        return True
    if definition.contract.batch_field is not None:
        return False
    first, again = definition.intent(focal), definition.intent(later)
    return any(req.count == 1 and req.matches_intent(definition.name, first)
               and req.matches_intent(definition.name, again) for req in required)


def observes(read_back: ReadBack, write_args: Mapping[str, Any], call: TraceEntry) -> bool:
    """Whether ``call`` is a read that could have shown the write made with ``write_args``: a
    successful call of the read-back tool whose every argument the read-back fills in equals
    the read-back's value for this write (for a batch, for one of its items) or, for an object
    (a ``where``), asks for a part of it. An argument the call leaves out widens the read."""
    if call.tool != read_back.tool or call.is_error or not isinstance(call.arguments, dict):
        return False
    for query in queries(read_back, dict(write_args)):
        if all(name not in call.arguments or _selects(call.arguments[name], wanted)
               for name, wanted in query.arguments.items()):
            return True
    return False


def _selects(given: Any, wanted: Any) -> bool:
    if isinstance(given, dict) and isinstance(wanted, dict):
        return all(k in wanted and _selects(v, wanted[k]) for k, v in given.items())
    return bool(given == wanted)
