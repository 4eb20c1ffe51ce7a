"""Emptying what a stdio line nests past the SDK parser's limit (:mod:`deep_lines`)."""

from __future__ import annotations

import json

import pydantic_core
import pytest
from hypothesis import given
from hypothesis import strategies as st

from limbo_plugin.server.deep_lines import LINE_DEPTH, emptied_below, readable_line


def _depth(value: object) -> int:
    """How deep ``value`` nests, without recursion."""
    deepest, level = 0, [value]
    while level:
        deepest += 1
        level = [child for item in level if isinstance(item, list | dict)
                 for child in (item.values() if isinstance(item, dict) else item)]
    return deepest - 1


def test_a_line_within_the_limit_is_passed_on_as_it_is() -> None:
    line = json.dumps({"id": 1, "params": {"a": [[[["x"]]]], "b": "[" * 5000}}) + "\n"
    assert readable_line(line) is line


def test_a_deep_line_is_emptied_below_the_limit_and_parses() -> None:
    line = '{"id": 7, "params": {"arguments": {"x": ' + "[{\"k\": " * 400 + "1" \
        + "}]" * 400 + '}, "name": "wait"}}\n'
    with pytest.raises(ValueError, match="recursion limit"):
        pydantic_core.from_json(line)
    readable = readable_line(line)
    message = pydantic_core.from_json(readable)
    assert message["id"] == 7 and message["params"]["name"] == "wait"
    assert _depth(message) == LINE_DEPTH
    assert _depth(message["params"]["arguments"]) > 32  # still refused as too deep


def test_brackets_in_strings_and_escaped_quotes_are_text() -> None:
    text = '[["a\\"]]][[", [["[", "\\\\"]]], "}{"]'
    assert emptied_below(text, 1) == '[[], "}{"]'
    assert emptied_below(text, 2) == '[["a\\"]]][[", []], "}{"]'
    assert emptied_below(text, 4) == text


def test_a_line_that_is_not_json_is_left_as_it_came() -> None:
    unbalanced = "[" * 300 + "\n"
    assert readable_line(unbalanced) is unbalanced
    junk = "{" * 300 + "not json\n"
    assert readable_line(junk) is junk


@given(value=st.recursive(st.one_of(st.integers(), st.text(alphabet='[]{}"\\ab', max_size=6)),
                          lambda inner: st.lists(inner, max_size=3)
                          | st.dictionaries(st.text(alphabet='[]{}"\\a', max_size=4), inner,
                                            max_size=3), max_leaves=40),
       limit=st.integers(min_value=1, max_value=6))
def test_emptying_keeps_everything_shallower_than_the_limit(value: object, limit: int) -> None:
    emptied = json.loads(emptied_below(json.dumps(value), limit))
    assert _depth(emptied) <= limit
    assert _pruned(emptied, limit) == _pruned(value, limit)
    if _depth(value) <= limit:
        assert emptied == value


def _pruned(value: object, limit: int) -> object:
    """``value`` with each container at depth ``limit`` replaced by its kind."""
    if isinstance(value, list):
        return "list" if limit == 0 else [_pruned(item, limit - 1) for item in value]
    if isinstance(value, dict):
        return "dict" if limit == 0 else {k: _pruned(v, limit - 1) for k, v in value.items()}
    return value
