"""The compiled argument check never accepts what ``jsonschema`` rejects.

A call the fast check passes reaches the service without ``jsonschema`` looking at it, so on
every tool of every contract and documentation variant the two must agree on what is valid
(the fast check may only be stricter, and then ``jsonschema`` decides and words the message).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from limbo_plugin.contracts import ToolDefinition, compile_fast_check
from limbo_plugin.spec.registry import SpecRegistry

REGISTRY = SpecRegistry.load(Path(__file__).resolve().parents[2] / "specs")
TOOLS: list[ToolDefinition] = sorted(
    {(t.name, json.dumps(t.input_schema, sort_keys=True)): t
     for contract in REGISTRY.contracts for docs in REGISTRY.docs
     for t in REGISTRY.catalog(contract, docs).tools.values()}.values(),
    key=lambda t: t.name)

JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner,
                                                                max_size=3),
    max_leaves=6)


def value_for(schema: dict[str, Any]) -> st.SearchStrategy[Any]:
    """Values near the edges of ``schema``, mixed with arbitrary JSON."""
    options: list[st.SearchStrategy[Any]] = [JSON_VALUES]
    if "enum" in schema:
        options.append(st.sampled_from(schema["enum"]))
    kind = schema.get("type")
    if kind == "string":
        low, high = schema.get("minLength", 0), schema.get("maxLength", 20)
        options.append(st.text(min_size=max(0, low - 1), max_size=min(high + 1, 40)))
        if "pattern" in schema:
            matching = st.from_regex(schema["pattern"], fullmatch=True)
            options += [matching, matching.map(lambda s: s + "\n"),
                        matching.map(lambda s: s[:-1] if s else "x")]
    elif kind in ("integer", "number"):
        low, high = schema.get("minimum", -5), schema.get("maximum", 5)
        options += [st.integers(low - 2, low + 2), st.integers(high - 2, high + 2),
                    st.integers(low, high).map(float)]
    elif kind == "array":
        item = value_for(schema.get("items", {}))
        options.append(st.lists(item, min_size=max(0, schema.get("minItems", 0) - 1),
                                max_size=schema.get("maxItems", 3) + 1))
    elif kind == "object" and "properties" in schema:
        options.append(arguments_for(schema))
    return st.one_of(options)


def arguments_for(schema: dict[str, Any]) -> st.SearchStrategy[dict[str, Any]]:
    """Objects with some of the schema's properties (required ones usually), maybe an extra."""
    properties: dict[str, Any] = schema.get("properties", {})
    required = set(schema.get("required", []))

    @st.composite
    def build(draw: Any) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for name, sub in properties.items():
            if draw(st.integers(0, 9)) < (9 if name in required else 5):
                out[name] = draw(value_for(sub))
        if draw(st.integers(0, 9)) == 0:
            out[draw(st.text(min_size=1, max_size=6))] = draw(JSON_VALUES)
        return out

    return build()


@pytest.mark.parametrize("tool", TOOLS, ids=[t.name for t in TOOLS])
@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_the_fast_check_never_accepts_what_jsonschema_rejects(tool: ToolDefinition,
                                                              data: st.DataObject) -> None:
    assert tool.accepts is not None, f"{tool.name}: every spec'd schema has a fast check"
    arguments = json.loads(json.dumps(data.draw(arguments_for(tool.input_schema))))
    if tool.accepts(arguments):
        assert tool.validator.is_valid(arguments), arguments
    assert (tool.schema_error(arguments) is None) == tool.validator.is_valid(arguments)


def test_valid_arguments_pass_the_fast_check() -> None:
    charge = REGISTRY.catalog().tools["billing_create_charge"]
    assert charge.accepts is not None
    assert charge.accepts({"customer_id": "cus_1", "amount_cents": 1200, "currency": "usd",
                           "description": "Invoice INV-1"})


@pytest.mark.parametrize("schema", [
    {"type": "object", "properties": {"a": {"$ref": "#/$defs/x"}}, "$defs": {"x": {}}},
    {"type": "array", "prefixItems": [{"type": "string"}]},
    {"type": "object", "unevaluatedProperties": False},
    {"type": "array", "items": [{"type": "string"}]},
    {"type": "object", "properties": {"a": {"type": "object", "dependentRequired": {}}}},
])
def test_keywords_that_differ_between_drafts_get_no_fast_check(schema: dict[str, Any]) -> None:
    assert compile_fast_check(schema) is None


def test_the_newline_before_the_end_is_left_to_jsonschema() -> None:
    """Python's ``$`` matches before a final newline; ``jsonschema`` accepts ``"usd\\n"``."""
    charge = REGISTRY.catalog().tools["billing_create_charge"]
    arguments = {"customer_id": "cus_1", "amount_cents": 1, "currency": "usd\n",
                 "description": "x"}
    assert charge.accepts is not None and not charge.accepts(arguments)
    assert charge.schema_error(arguments) is None
