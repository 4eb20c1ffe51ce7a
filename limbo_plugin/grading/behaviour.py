"""The recovery-behaviour coder: what the agent did after the focal fault, from its own calls.

Harness calls (made by a condition on the agent's behalf) are ignored. A *re-issue* is a later
call of the same tool whose intent fields equal the focal call's (for a batch write: that shares
a row with it). Classes, in order of precedence: ``escalate`` (asked the operator before any
re-issue), ``retry_same_key``, ``retry_new_key``, ``verify_then_retry``, ``blind_retry``,
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

from limbo_plugin.contracts import ToolCatalog
from limbo_plugin.records import TraceEntry

BEHAVIOURS = ("blind_retry", "retry_same_key", "retry_new_key", "verify_then_retry",
              "verify_then_skip", "escalate", "stop_without_checking", "move_on")


def code_behaviour(trace: list[TraceEntry], focal_index: int | None, catalog: ToolCatalog,
                   *, refused: bool = False) -> str | None:
    """Classify the agent's recovery after the agent call ``focal_index`` (``None``: no fault).

    ``refused``: the focal fault is an explicit refusal, whose answer says the request did not
    execute (see :func:`explicit_refusal`)."""
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
                    and definition.is_reissue(focal.arguments, e.arguments)), None)
    window = [e for e in after if reissue is None or e.index < reissue.index]
    read_tools = _verification_tools(definition.service, catalog,
                                     contract.read_back.tool if contract.read_back else None)
    verified = any(e.tool in read_tools for e in window)
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


def _verification_tools(service: str, catalog: ToolCatalog, read_back: str | None
                        ) -> frozenset[str]:
    tools = catalog.reads_of(service)
    return tools | {read_back} if read_back else tools
