"""Hypothesis strategies for hostile tool calls, and the one property every front end must keep.

A generated call is what an adversarial or broken agent could send: the right tool with wrong
types, missing and extra fields, unicode (lone surrogates included), huge strings and arrays,
NaN and infinities, negative and enormous numbers, unknown ids, an idempotency key reused with
other parameters; raw text that is not JSON; a value that is not an object; a tool that does
not exist. Plausible values are mixed in, so that the calls also reach the services' own
checks and commit effects, not only the schema's rejections.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from serverkit import REGISTRY

from limbo_plugin.contracts import ToolCatalog
from limbo_plugin.toolapi import ToolResult

FUZZ = settings(derandomize=True, deadline=None, database=None, print_blob=True,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                       HealthCheck.large_base_example])
"""Derandomized, and printing a failure's blob for ``@reproduce_failure``: Hypothesis also draws
constants from the project's modules loaded so far, which depends on how xdist spread the tests,
so another run may try other calls; the printed blob replays a failing one anywhere."""

ANY_CHARACTER = st.characters(exclude_categories=())  # lone surrogates included
HUGE_TEXT = st.sampled_from(["x" * 200_000, "é" * 60_000, "\ud800" * 1000, "{" * 5000])
NUMBERS = st.one_of(
    st.integers(min_value=-(10**6), max_value=10**6),
    st.sampled_from([0, -1, 2**31, 2**63, -(2**63), 10**30, -(10**30), 10**400]),
    st.floats(allow_nan=True, allow_infinity=True),
)
PLAUSIBLE_IDS = st.sampled_from([
    "OPS-2001", "OPS-0", "ch_0000", "cus_ada", "cus_grace", "run_1", "post_1", "flag_beta",
    "row_1", "x" * 64, "", " ", "../../etc/passwd", "'; DROP TABLE users; --",
])
KEYS = st.sampled_from(["key-1", "key-2", "", "k" * 300])
"""A small pool: idempotency keys get reused, with the same and with other parameters."""

leaves = st.one_of(st.none(), st.booleans(), NUMBERS, st.text(ANY_CHARACTER, max_size=40),
                   PLAUSIBLE_IDS)
JSON_LIKE = st.recursive(
    leaves,
    lambda children: st.one_of(st.lists(children, max_size=6),
                               st.dictionaries(st.text(ANY_CHARACTER, max_size=12), children,
                                               max_size=6)),
    max_leaves=30)


class Deep(dict[str, Any]):
    """A value nested hundreds of levels deep that reads as how it was made: a failing example
    holding it is printed (and Hypothesis's printer recurses once per level)."""

    depth = 0

    def __repr__(self) -> str:
        return f"deeply_nested({self.depth})"


def deeply_nested(depth: int) -> Any:
    value: Any = "bottom"
    for _ in range(depth):
        value = {"a": [value]}
    outer = Deep(value)
    outer.depth = depth
    return outer


HOSTILE = st.one_of(JSON_LIKE, HUGE_TEXT, st.sampled_from([
    [0] * 50_000, deeply_nested(40), deeply_nested(600), float("nan"), float("-inf"),
    {"$ref": "#"}, [[[[]]]], "\x00", "\u202e", "\ufeff",
]))


_PLAUSIBLE: dict[str, st.SearchStrategy[Any]] = {}


def plausible(schema: Mapping[str, Any]) -> st.SearchStrategy[Any]:
    """A value the schema may well accept (or just miss), from the schema's own type.

    Built once per schema: a draw then only draws. Building (and Hypothesis validating) a fresh
    strategy tree for every field of every call cost more than the calls themselves; the same
    strategy draws the same values, so the calls are what they were."""
    text = json.dumps(schema, sort_keys=True)
    if text not in _PLAUSIBLE:
        _PLAUSIBLE[text] = _plausible(schema)
    return _PLAUSIBLE[text]


def _plausible(schema: Mapping[str, Any]) -> st.SearchStrategy[Any]:
    if "enum" in schema:
        return st.sampled_from(list(schema["enum"]))
    kind = schema.get("type")
    if kind == "integer":
        low, high = schema.get("minimum", -5), schema.get("maximum", 10_000)
        return st.integers(min_value=low - 1, max_value=high + 1)
    if kind == "number":
        return st.floats(min_value=-1, max_value=1e6, allow_nan=False)
    if kind == "boolean":
        return st.booleans()
    if kind == "array":
        items = schema.get("items") or {}
        return st.lists(plausible(items), min_size=0, max_size=4)
    if kind == "object":
        if "properties" in schema:
            return st.fixed_dictionaries({name: plausible(sub) for name, sub in
                                          schema["properties"].items()})
        return st.dictionaries(st.sampled_from(["id", "name", "email", "enabled", "plan"]),
                               leaves, max_size=4)
    if "@" in str(schema.get("pattern", "")):
        return st.sampled_from(["ceo@acme.example", "a@b", "not-an-email", "@@"])
    return st.one_of(PLAUSIBLE_IDS, st.text(max_size=30), KEYS)


SHAPES = st.sampled_from(["object"] * 8 + ["text", "not_object", "hostile"])
NOT_JSON = st.one_of(st.text(ANY_CHARACTER, max_size=60), HUGE_TEXT,
                     st.sampled_from(['{"a":', "{}", "[]", "null", "NaN", '{"x": 1e999}',
                                      "\ufeff{}"]))
NOT_OBJECT = st.one_of(st.lists(leaves, max_size=3), NUMBERS, st.none(), st.booleans())
FIELD_CHOICE = st.sampled_from(["plausible"] * 12 + ["missing", "hostile"])
UNKNOWN_FIELD = st.integers(min_value=0, max_value=5)
FIELD_NAME = st.text(ANY_CHARACTER, min_size=1, max_size=10)
"""The strategies of :func:`arguments_for`, built once (see :func:`plausible`)."""


@st.composite
def arguments_for(draw: st.DrawFn, schema: Mapping[str, Any]) -> Any:
    """Arguments for a tool of ``schema``: mostly an object built from its properties, with
    fields dropped, replaced by hostile values or added; sometimes not an object at all."""
    shape = draw(SHAPES)
    if shape == "text":
        return draw(NOT_JSON)
    if shape == "not_object":
        return draw(NOT_OBJECT)
    if shape == "hostile":
        return draw(HOSTILE)
    properties = dict(schema.get("properties") or {})
    arguments: dict[str, Any] = {}
    for name, sub in properties.items():
        choice = draw(FIELD_CHOICE)
        if choice == "plausible":
            arguments[name] = draw(plausible(sub))
        elif choice == "hostile":
            arguments[name] = draw(HOSTILE)
    if "idempotency_key" in properties and draw(st.booleans()):
        arguments["idempotency_key"] = draw(KEYS)
    if draw(UNKNOWN_FIELD) == 0:  # an unknown field
        arguments[draw(FIELD_NAME)] = draw(leaves)
    return arguments


CATALOG: ToolCatalog = REGISTRY.catalog("keys_everywhere")
"""Every tool, with the optional key the keys_everywhere contract adds to non-idempotent
writes (so keys get reused on every kind of write)."""


UNKNOWN_TOOL = st.integers(min_value=0, max_value=19)
TOOL_NAME = st.one_of(st.text(ANY_CHARACTER, max_size=20),
                      st.sampled_from(["", "tickets_create ", "TICKETS_CREATE", "__init__",
                                       "finish\x00"]))
ARGUMENTS = {name: arguments_for(tool.input_schema) for name, tool in CATALOG.tools.items()}
"""The strategies of :func:`tool_calls`, built once (see :func:`plausible`)."""


@st.composite
def tool_calls(draw: st.DrawFn, tools: tuple[str, ...]) -> tuple[Any, Any]:
    """``(name, arguments)``: a tool of ``tools`` (now and then one that does not exist)."""
    if draw(UNKNOWN_TOOL) == 0:
        name: Any = draw(TOOL_NAME)
        return name, draw(JSON_LIKE)
    name = draw(st.sampled_from(tools))
    return name, draw(ARGUMENTS[name])


def is_rejection(result: ToolResult) -> bool:
    """A call the service refused outright (bad input, unknown tool or record, a conflict, an
    explicit 429/503): it must have changed nothing."""
    kind = result.error_type
    if kind in ("invalid_arguments", "unknown_tool"):
        return True
    status = result.status
    return kind == "http" and status is not None and 400 <= status < 500


def wire_safe(payload: Any) -> str:
    """``payload`` as a JSON text any peer reads: lone surrogates escaped, never bare NaN."""
    return json.dumps(payload, allow_nan=True)
