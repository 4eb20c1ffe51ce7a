"""The per-call fast paths of the tool API and the clock give exactly what the plain
definitions give: the depth limit, the trace's bounded rendering and the ISO time an agent sees
are part of every record, so a faster form must not change one byte of them."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from limbo_plugin.toolapi import (
    MAX_ARGUMENT_DEPTH,
    MAX_RENDERED_CHARS,
    _render,
    canonical_json,
    nesting_exceeds,
    safe_json,
)
from limbo_plugin.world.clock import EPOCH, iso

JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.tuples(inner, inner)
    | st.dictionaries(st.text(max_size=5), inner, max_size=4),
    max_leaves=60)


def depth(value: Any) -> int:
    """The plain definition: how many containers nest at the deepest point."""
    if isinstance(value, dict):
        return 1 + max((depth(v) for v in value.values()), default=0)
    if isinstance(value, list | tuple):
        return 1 + max((depth(v) for v in value), default=0)
    return 0


@settings(max_examples=300, deadline=None)
@given(JSON_VALUES, st.integers(min_value=0, max_value=8))
def test_nesting_exceeds_is_depth_over_the_limit(value: Any, limit: int) -> None:
    assert nesting_exceeds(value, limit) == (depth(value) > limit)


def test_nesting_exceeds_a_hostile_depth_without_recursion() -> None:
    value: Any = 1
    for _ in range(100_000):
        value = [value]
    assert nesting_exceeds(value, MAX_ARGUMENT_DEPTH)
    assert not nesting_exceeds([[1], {"a": [2]}], 3)
    assert nesting_exceeds([[1], {"a": [[2]]}], 3)


@settings(max_examples=300, deadline=None)
@given(JSON_VALUES)
def test_canonical_json_is_sorted_compact_and_unescaped(value: Any) -> None:
    assert canonical_json(value) == json.dumps(value, sort_keys=True, separators=(",", ":"),
                                               ensure_ascii=False, allow_nan=False)


def test_canonical_json_refuses_what_is_not_json() -> None:
    for value in (float("nan"), float("inf"), {"a": [float("-inf")]}, object()):
        try:
            canonical_json(value)
        except (ValueError, TypeError):
            continue
        raise AssertionError(f"{value!r} was encoded")


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=50) | st.sampled_from(["\ud800", "a\udfffb", "x" * 3400, "\x00" * 3333,
                                                "\x00" * 3334, "é" * 25_000]))
def test_safe_json_of_a_string_as_the_general_rule(value: str) -> None:
    try:
        text = canonical_json(value)
        text.encode("utf-8")
        kept = len(text) <= MAX_RENDERED_CHARS
    except UnicodeEncodeError:
        kept = False
    expected = value if kept else _render(value, 1, [MAX_RENDERED_CHARS])
    assert safe_json(value) == expected


@settings(max_examples=500, deadline=None)
@given(st.floats(min_value=0, max_value=10**8, allow_nan=False)
       | st.integers(min_value=0, max_value=10**8).map(float)
       | st.sampled_from([0.0, 0.0004, 0.0019, 59.9999, 1e-6, 1.5, 90.0]))
def test_iso_renders_seconds_and_cut_milliseconds(seconds: float) -> None:
    moment = EPOCH + timedelta(seconds=seconds)
    expected = (moment.strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z" if moment.microsecond
                else moment.strftime("%Y-%m-%dT%H:%M:%SZ"))
    assert iso(seconds) == expected
    assert datetime.fromisoformat(iso(seconds)).tzinfo == UTC
