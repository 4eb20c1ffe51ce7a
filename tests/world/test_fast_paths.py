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


# -- plain JSON walked once: normalize_arguments and safe_json without encoding -------------------
def deep(levels: int) -> Any:
    value: Any = 1
    for _ in range(levels):
        value = {"a": [value]} if levels % 2 else [value]
    return value


HOSTILE_LEAVES = st.sampled_from([
    float("nan"), float("inf"), -0.0, 1e308, 2.2250738585072014e-308, 10**18 - 1, -(10**18),
    10**40, True, False, None, "\ud800", "a\udfffb", "é", "\x00\"\\", "x" * 3400, "\x00" * 3334,
    "€" * 17_000, (1, 2), object(), deep(31), deep(32), deep(33),
])
ANY_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text() | HOSTILE_LEAVES,
    lambda inner: st.lists(inner, max_size=4) | st.tuples(inner, inner)
    | st.dictionaries(st.text(max_size=5) | st.sampled_from(["\udc80", "é"]), inner, max_size=4)
    | st.dictionaries(st.integers(), inner, max_size=2),
    max_leaves=40)


def normalize_by_round_trip(arguments: dict[str, Any]) -> tuple[Any, str | None]:
    """The plain definition for an object: check depth, encode, bound the size, decode."""
    from limbo_plugin.toolapi import MAX_ARGUMENT_BYTES

    if nesting_exceeds(arguments, MAX_ARGUMENT_DEPTH):
        return None, f"arguments nest more than {MAX_ARGUMENT_DEPTH} levels deep"
    try:
        text = canonical_json(arguments)
    except (TypeError, ValueError, RecursionError) as exc:
        return None, f"arguments are not JSON-serialisable: {exc}"
    try:
        size = len(text.encode())
    except UnicodeEncodeError:
        return None, "arguments contain a string that is not valid Unicode (a lone surrogate)"
    if size > MAX_ARGUMENT_BYTES:
        return None, f"arguments are too large ({size} bytes; limit {MAX_ARGUMENT_BYTES})"
    return json.loads(text), None


def safe_json_by_encoding(value: Any) -> Any:
    """The plain definition of the trace's rule: keep what encodes within the limits."""
    try:
        text = canonical_json(value)
        text.encode("utf-8")
    except (TypeError, ValueError, RecursionError, UnicodeEncodeError):
        pass
    else:
        if len(text) <= MAX_RENDERED_CHARS and not nesting_exceeds(value, MAX_ARGUMENT_DEPTH):
            return value
    return _render(value, 1, [MAX_RENDERED_CHARS])


def exact(value: Any) -> str:
    """Key order, types and all: what a record line would hold."""
    return repr(value)


@settings(max_examples=600, deadline=None)
@given(ANY_VALUES)
def test_the_plain_bound_never_accepts_what_encoding_would_refuse(value: Any) -> None:
    from limbo_plugin.toolapi import plain_json_bound, sorted_copy

    bound = plain_json_bound(value)
    if bound < 0:
        return
    text = canonical_json(value)
    assert len(text) <= bound and len(text.encode("utf-8")) <= bound
    assert not nesting_exceeds(value, MAX_ARGUMENT_DEPTH)
    assert exact(sorted_copy(value)) == exact(json.loads(text))


@settings(max_examples=600, deadline=None)
@given(st.dictionaries(st.text(max_size=5) | st.sampled_from(["\udc80"]), ANY_VALUES,
                       max_size=5))
def test_normalize_arguments_is_the_round_trip(arguments: dict[str, Any]) -> None:
    from limbo_plugin.toolapi import normalize_arguments

    got, expected = normalize_arguments(arguments), normalize_by_round_trip(arguments)
    assert exact(got) == exact(expected)


@settings(max_examples=600, deadline=None)
@given(ANY_VALUES)
def test_safe_json_is_the_encoding_rule(value: Any) -> None:
    assert exact(safe_json(value)) == exact(safe_json_by_encoding(value))


def test_the_plain_bound_at_the_limits() -> None:
    from limbo_plugin.toolapi import MAX_ARGUMENT_BYTES, normalize_arguments, plain_json_bound

    assert plain_json_bound(deep(32)) > 0 and plain_json_bound(deep(33)) == -1
    assert plain_json_bound([float("nan")]) == plain_json_bound({"a": "\ud800"}) == -1
    assert plain_json_bound((1,)) == plain_json_bound({1: 2}) == plain_json_bound(10**18) == -1
    # over the bound, the exact rule decides: a long ASCII string is kept, a longer one cut
    assert safe_json("a" * 19_998) == "a" * 19_998
    assert safe_json({"t": "a" * 19_992}) == {"t": "a" * 19_992}  # 20,000 characters
    assert safe_json({"t": "a" * 20_010}) == safe_json_by_encoding({"t": "a" * 20_010}) != {
        "t": "a" * 20_010}
    text = "b" * (MAX_ARGUMENT_BYTES - 8)
    assert normalize_arguments({"t": text}) == ({"t": text}, None)
    assert normalize_arguments({"t": text + "b"})[1] == (
        f"arguments are too large ({MAX_ARGUMENT_BYTES + 1} bytes; limit {MAX_ARGUMENT_BYTES})")


def test_an_oversized_value_keeps_its_key() -> None:
    # The key is rendered before its value: a value that spends the budget must not turn the
    # key that names it into "…" (an assignment evaluates its right side first).
    kept = safe_json({"title": "a" * 20_010, "n": 1})
    assert list(kept) == ["title", "…"]  # the budget ends inside the title; the rest is cut
    assert kept["title"].endswith("…") and len(kept["title"]) < 20_010
    nested = safe_json({"outer": {"inner": "b" * 30_000}})
    assert list(nested) == ["outer"] and list(nested["outer"]) == ["inner"]
