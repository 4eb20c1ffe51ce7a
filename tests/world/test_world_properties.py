"""Property-based tests: random tool-call sequences against a seeded world with an armed fault.

Calls are drawn from the catalog's JSON schemas (with values biased towards the world's real
ids, tables and columns so that many calls are valid), mutated, or replaced by junk. Whatever
the sequence, the transport must answer every call without raising, and the ledger must stay
consistent.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from worldkit import (
    ALL_SERVICES,
    GROUP_E,
    GROUP_T,
    MODE_TABLE,
    SEED_RECORDS,
    WRITE_CALLS,
    assert_ledger_consistent,
    assert_tool_error,
    make_box,
    write_args,
)

from limbo_plugin.contracts import ToolDefinition
from limbo_plugin.sandbox import Sandbox
from limbo_plugin.spec.registry import SpecRegistry
from limbo_plugin.toolapi import ToolCall, ToolResult

SETTINGS = settings(max_examples=60, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                           HealthCheck.function_scoped_fixture])

WORDS = ["Juniper", "release", "incident", "checkout", "refund", "cache", "ÜNICODE ✓", "a b"]
CUSTOMERS = [c["id"] for c in SEED_RECORDS["billing"]["customers"]]
TABLES = list(SEED_RECORDS["database"]["tables"])
COLUMNS = sorted({c for t in SEED_RECORDS["database"]["tables"].values() for c in t["columns"]})
SEEDED_IDS = ["ch_seed_orig", "ch_seed_dup", "md_seed1", "wb_seed1", "li_seed1", "x_seed1",
              "OPS-1001", "COMMS-1201", "REL-300", "row_seed_m1", "row_seed_f1", "run_seed1"]
JUNK_NAMES = st.one_of(st.text(max_size=12), st.sampled_from(["tickets_delete", "db_drop",
                                                                 "WAIT", "finish "]))
SCALARS = st.one_of(st.sampled_from(WORDS), st.integers(-5, 5), st.booleans(), st.none(),
                    st.text(max_size=8))
JUNK_ARGS = st.one_of(
    st.lists(st.integers(), max_size=3), st.integers(), st.floats(), st.text(max_size=20),
    st.binary(max_size=10), st.none(), st.booleans(),
    st.sampled_from(["{not json", '{"a": NaN}', "[1,", "[" * 3000, '"str"', "{}"]),
    st.dictionaries(st.text(max_size=6), SCALARS, max_size=3),
    st.just({"x": float("nan")}), st.just({"text": "t" * 120_000}),
)


class Ref(int):
    """A placeholder for "the i-th id known so far", resolved when the call is sent, so that the
    strategies can be built once and still refer to records created during the run."""


def resolve(value: Any, ids: list[str]) -> Any:
    if isinstance(value, Ref):
        return ids[int(value) % len(ids)]
    if isinstance(value, dict):
        return {k: resolve(v, ids) for k, v in value.items()}
    if isinstance(value, list):
        return [resolve(v, ids) for v in value]
    return value


ROWS = st.dictionaries(st.sampled_from([*COLUMNS, "bogus"]), SCALARS, min_size=1, max_size=3)
KNOWN = st.integers(0, 1000).map(Ref)


def from_schema(schema: dict[str, Any]) -> st.SearchStrategy[Any]:
    """Values for one JSON-schema property (the subset the service specs use)."""
    if "enum" in schema:
        return st.sampled_from(schema["enum"])
    kind = schema.get("type")
    if kind == "string":
        if "pattern" in schema:
            return st.from_regex(schema["pattern"], fullmatch=True).filter(
                lambda s: len(s) <= schema.get("maxLength", 64))
        return st.text(min_size=schema.get("minLength", 0),
                       max_size=min(schema.get("maxLength", 40), 40))
    if kind == "integer":
        return st.integers(schema.get("minimum", -10), min(schema.get("maximum", 10**6), 10**6))
    if kind == "array":
        return st.lists(from_schema(schema.get("items", {})), min_size=schema.get("minItems", 0),
                        max_size=min(schema.get("maxItems", 5), 5))
    if kind == "object":
        return ROWS
    return SCALARS


SPECIAL: dict[str, st.SearchStrategy[Any]] = {
    "customer_id": st.sampled_from(CUSTOMERS),
    "charge_id": KNOWN, "post_id": KNOWN, "ticket_id": KNOWN, "run_id": KNOWN,
    "ids": st.lists(KNOWN, min_size=1, max_size=3),
    "table": st.sampled_from(TABLES),
    "service": st.sampled_from(["checkout-api", "search-indexer"]),
    "rows": st.lists(ROWS, min_size=1, max_size=5),
    "row": ROWS, "values": ROWS, "where": ROWS,
    "key": st.one_of(st.sampled_from([{"flag": "dark_mode"}, {"flag": "new_flag"}]), ROWS),
    "idempotency_key": st.sampled_from(["k1", "k2"]),
    "seconds": st.integers(1, 400),
    **{name: st.sampled_from(WORDS) for name in ("text", "title", "query", "subject", "body")},
}
"""Values biased towards what exists in the world, so that many calls are valid."""


def value_for(name: str, schema: dict[str, Any]) -> st.SearchStrategy[Any]:
    if name in SPECIAL:
        return st.one_of(SPECIAL[name], SPECIAL[name], from_schema(schema))
    return from_schema(schema)


MUTATION = st.one_of(st.lists(st.integers(), max_size=2), st.floats(),
                     st.dictionaries(st.text(max_size=3), st.integers(), max_size=2))
_ARG_STRATEGIES: dict[str, st.SearchStrategy[dict[str, Any]]] = {}


def args_for(tool: ToolDefinition) -> st.SearchStrategy[dict[str, Any]]:
    """Arguments drawn from the tool's JSON schema (built once per tool)."""
    if tool.name not in _ARG_STRATEGIES:
        properties = tool.input_schema["properties"]
        required = set(tool.input_schema["required"])
        _ARG_STRATEGIES[tool.name] = st.fixed_dictionaries(
            {k: value_for(k, v) for k, v in properties.items() if k in required},
            optional={k: value_for(k, v) for k, v in properties.items() if k not in required})
    return _ARG_STRATEGIES[tool.name]


@st.composite
def tool_call(draw: st.DrawFn, tools: list[ToolDefinition]) -> tuple[Any, Any]:
    """A valid-looking call, a mutated one, or junk (ids still as :class:`Ref`)."""
    kind = draw(st.sampled_from(["schema"] * 6 + ["mutated", "junk_args", "junk_name"]))
    if kind == "junk_name":
        return draw(JUNK_NAMES), draw(st.one_of(JUNK_ARGS, st.just({})))
    tool = draw(st.sampled_from(tools))
    if kind == "junk_args":
        return tool.name, draw(JUNK_ARGS)
    args = dict(draw(args_for(tool)))
    properties = tool.input_schema["properties"]
    if kind == "mutated" and properties:
        field = draw(st.sampled_from(sorted(properties)))
        how = draw(st.sampled_from(["drop", "retype", "extra"]))
        if how == "drop":
            args.pop(field, None)
        elif how == "retype":
            args[field] = draw(MUTATION)
        else:
            args["unexpected_" + field] = 1
    if tool.name == "finish":  # finishing early is covered elsewhere; keep sequences long
        args["status"] = "partial"
    return tool.name, args


def collect_ids(value: Any, into: list[str]) -> None:
    """Every id a response names, so later calls can refer to records the agent created."""
    if isinstance(value, dict):
        for key, item in value.items():
            if key in ("id", "charge_id") and isinstance(item, str) and item not in into:
                into.append(item)
            else:
                collect_ids(item, into)
    elif isinstance(value, list):
        for item in value:
            collect_ids(item, into)


REGISTRY = SpecRegistry.load(Path(__file__).resolve().parents[2] / "specs")
"""Loaded once: hypothesis draws examples outside any fixture."""


def _registry() -> SpecRegistry:
    return REGISTRY


FOCALS = [(mode, tool) for mode in MODE_TABLE for tool in WRITE_CALLS
          if mode != "partial_batch" or tool == "db_insert_rows"]


def run_random(box: Sandbox, data: st.DataObject, steps: int) -> list[ToolResult]:
    """Draw and send ``steps`` calls; each must come back as a well-formed ToolResult."""
    tools = box.list_tools()
    ids = list(SEEDED_IDS)
    results = []
    for _ in range(steps):
        name, args = data.draw(tool_call(tools))
        args = resolve(args, ids)
        before = len(box.ledger.effects)
        now = box.now
        result = box.transport.call(ToolCall(name=name, arguments=args))
        assert isinstance(result, ToolResult)
        result.text()
        if result.is_error:
            assert_tool_error(result)
        assert box.now > now
        if result.is_error and result.error_type in ("invalid_arguments", "unknown_tool"):
            # only scheduled events (late commits, redeliveries) may land meanwhile
            assert all(e.origin in ("late", "redelivery") for e in box.ledger.effects[before:])
        collect_ids(result.content, ids)
        results.append(result)
    return results


@SETTINGS
@given(data=st.data(), focal=st.sampled_from(FOCALS),
       contract=st.sampled_from(["native", "keys_everywhere"]),
       world_seed=st.integers(0, 2**32), steps=st.integers(1, 25))
def test_random_calls_never_raise_and_keep_the_ledger_consistent(
        data: st.DataObject, focal: tuple[str, str], contract: str, world_seed: int,
        steps: int) -> None:
    """Any sequence of calls, valid or not, under any armed fault: no exception escapes the
    transport, and the ledger keeps its invariants, also after in-flight requests complete."""
    mode, tool = focal
    box = make_box(_registry(), mode=mode, tool=tool, contract=contract, world_seed=world_seed)
    if data.draw(st.booleans()):
        box.call(tool, write_args(tool))  # make sure the fault has a chance to fire
    run_random(box, data, steps)
    assert_ledger_consistent(box.ledger, box.now)
    box.world.finish_in_flight()
    assert_ledger_consistent(box.ledger, box.now)
    assert box.world.clock.pending() == []


@settings(max_examples=25, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(data=st.data(), focal=st.sampled_from(FOCALS), steps=st.integers(1, 15))
def test_worlds_are_deterministic(data: st.DataObject, focal: tuple[str, str],
                                  steps: int) -> None:
    """The same calls in two fresh copies of one world give the same answers and ledger."""
    mode, tool = focal
    calls: list[tuple[Any, Any]] = []
    box = make_box(_registry(), mode=mode, tool=tool)
    tools, ids = box.list_tools(), list(SEEDED_IDS)
    answers = []
    for _ in range(steps):
        name, args = data.draw(tool_call(tools))
        args = resolve(args, ids)
        calls.append((name, copy.deepcopy(args) if isinstance(args, dict) else args))
        result = box.transport.call(ToolCall(name=name, arguments=args))
        collect_ids(result.content, ids)
        answers.append((result.text(), box.now))
    twin = make_box(_registry(), mode=mode, tool=tool)
    again = []
    for name, args in calls:
        result = twin.transport.call(ToolCall(name=name, arguments=args))
        again.append((result.text(), twin.now))
    assert again == answers
    assert twin.ledger.to_json() == box.ledger.to_json()


OTHER_SERVICE_TOOLS = {
    tool: [t for t in make_box(_registry()).list_tools()
           if t.service not in (_registry().catalog().service_of(tool), "general")
           or t.name in ("wait", "finish")]
    for tool in WRITE_CALLS
}


@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(data=st.data(), tool=st.sampled_from(list(WRITE_CALLS)),
       group=st.sampled_from(["T", "E"]), steps=st.integers(1, 12))
def test_hidden_outcome_never_leaks_outside_its_service(
        data: st.DataObject, tool: str, group: str, steps: int) -> None:
    """After the focal fault, random calls to the other services (and waits) observe the same
    bytes and the same clock in every world of the group."""
    modes = GROUP_T if group == "T" else (GROUP_E if tool == "db_insert_rows" else GROUP_E[:2])
    ids = list(SEEDED_IDS)
    calls = [(tool, write_args(tool))]
    for _ in range(steps):
        name, args = data.draw(tool_call(OTHER_SERVICE_TOOLS[tool]))
        calls.append((name, resolve(args, ids)))
    seen = []
    for mode in modes:
        box = make_box(_registry(), mode=mode, tool=tool)
        run = []
        for name, args in calls:
            result = box.transport.call(ToolCall(name=name, arguments=copy.deepcopy(args)))
            run.append((result.text(), box.now))
        seen.append(run)
    assert all(run == seen[0] for run in seen[1:])


def test_property_helpers_cover_every_service() -> None:
    """The strategies know every service's tools (a new tool needs no new strategy)."""
    tools = make_box(_registry()).list_tools()
    assert {t.service for t in tools} == {*ALL_SERVICES, "general"}
