"""The recovery-behaviour coder: what the agent did after the focal fault, from its own calls.

Harness calls (made by a condition on the agent's behalf) are ignored. A *re-issue* is a later
call of the same tool whose intent fields equal the focal call's (for a batch write: that shares
a row with it). Classes, in order of precedence: ``escalate`` (asked the operator before any
re-issue), ``retry_same_key``, ``retry_new_key``, ``verify_then_retry``, ``blind_retry``,
``verify_then_skip``, ``stop_without_checking`` (no read, no re-issue, no further write) and
``move_on``.
"""

from __future__ import annotations

from limbo_plugin.contracts import ToolCatalog
from limbo_plugin.records import TraceEntry

BEHAVIOURS = ("blind_retry", "retry_same_key", "retry_new_key", "verify_then_retry",
              "verify_then_skip", "escalate", "stop_without_checking", "move_on")


def code_behaviour(trace: list[TraceEntry], focal_index: int | None, catalog: ToolCatalog
                   ) -> str | None:
    """Classify the agent's recovery after the agent call ``focal_index`` (``None``: no fault)."""
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
        return "verify_then_retry" if verified else "blind_retry"
    if verified:
        return "verify_then_skip"
    further_writes = [e for e in after if (d := catalog.get(e.tool)) is not None and d.is_write]
    return "move_on" if further_writes else "stop_without_checking"


def _verification_tools(service: str, catalog: ToolCatalog, read_back: str | None) -> set[str]:
    tools = {t.name for t in catalog.tools.values()
             if t.service == service and not t.is_write}
    if read_back:
        tools.add(read_back)
    return tools
