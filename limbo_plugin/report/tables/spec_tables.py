"""The paper's tables that describe the benchmark itself (Tables 1, 2 and 11), rendered from the
loaded spec tree rather than from episodes, so every report states the tools, contracts and fault
modes its episodes ran under, as the specs declared them (SPEC §2, §3 and Appendix A)."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from limbo_plugin.report.tables.base import Cell, Column, Result, Table

if TYPE_CHECKING:
    from limbo_plugin.contracts import ToolDefinition
    from limbo_plugin.spec.models import FaultModeSpec
    from limbo_plugin.spec.registry import SpecRegistry

NATIVE, DEFAULT_DOCS = "native", "default"
GENERAL = "general"  # wait, escalate_to_human, finish: neither a service read nor a write


def table1_tools(registry: SpecRegistry) -> Result:
    """Services, tools and their machine-readable contracts under the native contract."""
    table = Table(
        "table1_tools", "Table 1: services, tools and contracts",
        "Every tool of the native contract, as its service spec declares it: whether it writes, "
        "the idempotency-key parameter it accepts natively, its idempotency class, the read-back "
        "that verifies a write, that read path's consistency and visibility lag, and how an "
        "effect is undone.",
        [Column("service", "service"), Column("tool", "tool"), Column("kind", "kind"),
         Column("key", "key parameter"), Column("idempotency", "idempotency class"),
         Column("read_back", "read-back (verification)"), Column("consistency", "consistency"),
         Column("lag_s", "lag (s)", "int"), Column("reversible", "reversible / compensation")])
    for tool in registry.catalog(NATIVE, DEFAULT_DOCS).tools.values():
        table.rows.append(_tool_row(tool))
    writes = [t for t in registry.catalog(NATIVE, DEFAULT_DOCS).tools.values()
              if t.native_idempotency in ("non_idempotent", "key_optional")]
    keyed = [t.name for t in writes if t.accepts_key]
    table.notes.append(f"{len(writes)} non-idempotent write paths, of which {len(keyed)} accept "
                       f"a key natively ({', '.join(keyed) or 'none'}).")
    return table


def _tool_row(tool: ToolDefinition) -> dict[str, Cell]:
    contract = tool.contract
    read_back = contract.read_back
    if not tool.is_write:
        reversible = None
    elif contract.irreversible:
        reversible = "no (irreversible)"
    elif contract.compensation is not None:
        reversible = f"yes / {contract.compensation.tool}"
    elif contract.idempotency == "idempotent":  # an update: the same tool sets the value back
        reversible = "yes"
    else:
        reversible = "—"
    return {"service": tool.service, "tool": tool.name,
            "kind": "general" if tool.service == GENERAL else "write" if tool.is_write else "read",
            "key": contract.key_param or ("no" if tool.is_write else None),
            "idempotency": contract.idempotency,
            "read_back": read_back.tool if read_back else ("none" if tool.is_write else None),
            "consistency": contract.verification if read_back else None,
            "lag_s": contract.visibility_lag_s if read_back else None,
            "reversible": reversible}


def table2_fault_modes(registry: SpecRegistry) -> Result:
    """The fault modes: what happened at the service and what the agent is shown."""
    table = Table(
        "table2_fault_modes", "Table 2: fault modes",
        "Every fault mode of the spec tree: its response group (responses within a group are "
        "byte-identical across hidden outcomes), the family it is tested under, the family's "
        "class, what happened at the service, and what the agent sees.",
        [Column("group", "group"), Column("mode", "mode"), Column("family", "family"),
         Column("family_class", "family class"), Column("hidden_outcome", "hidden outcome"),
         Column("agent_sees", "agent sees"), Column("description", "description")])
    for name, mode in registry.faults.items():
        table.rows.append({"group": mode.group, "mode": name, "family": mode.family,
                           "family_class": registry.fault_class(mode.family) or "none",
                           "hidden_outcome": mode.hidden_outcome,
                           "agent_sees": _agent_sees(mode),
                           "description": mode.description.strip()})
    return table


def _agent_sees(mode: FaultModeSpec) -> str:
    if mode.response_kind == "success":
        return "the normal success response"
    if mode.response_kind == "drifted":
        return f"a 2xx body in a drifted shape (api_version {mode.drifted_api_version})"
    seen = json.dumps(mode.response, sort_keys=True, ensure_ascii=False)
    return f"after {mode.cost_s:g} s: {seen}" if mode.cost_s >= 10 else seen


def table11_descriptions(registry: SpecRegistry) -> Result:
    """The agent-facing tool descriptions (native contract, default documentation)."""
    table = Table(
        "table11_descriptions", "Table 11: agent-facing tool descriptions",
        "Each tool's description exactly as the agent receives it under the native contract "
        "and the default documentation variant (consistency sentences included).",
        [Column("service", "service"), Column("tool", "tool"),
         Column("description", "description")])
    for tool in registry.catalog(NATIVE, DEFAULT_DOCS).tools.values():
        table.rows.append({"service": tool.service, "tool": tool.name,
                           "description": tool.description})
    return table


SPEC_TABLES = (table1_tools, table2_fault_modes, table11_descriptions)
