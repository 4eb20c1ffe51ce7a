"""Emptying what a stdio line nests past the SDK parser's limit (:mod:`deep_lines`)."""

from __future__ import annotations

import json
from typing import Any

import pydantic_core
import pytest
from hypothesis import given
from hypothesis import strategies as st

from limbo_plugin.server.deep_lines import (
    LINE_DEPTH,
    READ_BODY_BYTES,
    UNREADABLE,
    ReadableBodies,
    emptied_below,
    readable_line,
)


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


def _through(body_chunks: list[bytes], declared: int | None, method: str = "POST"
             ) -> tuple[bytes, dict[bytes, bytes]]:
    """What an app behind :class:`ReadableBodies` receives of a request sent in chunks."""
    import anyio

    seen: dict[str, Any] = {}

    async def app(scope: Any, receive: Any, send: Any) -> None:
        body, more = b"", True
        while more:
            message = await receive()
            body += message.get("body", b"")
            more = message.get("more_body", False)
        seen["body"], seen["headers"] = body, dict(scope["headers"])

    pending = [{"type": "http.request", "body": chunk, "more_body": n < len(body_chunks) - 1}
               for n, chunk in enumerate(body_chunks)]

    async def receive() -> Any:
        return pending.pop(0)

    headers = [] if declared is None else [(b"content-length", str(declared).encode())]
    scope = {"type": "http", "method": method, "headers": headers}
    anyio.run(ReadableBodies(app, empty=True), scope, receive, None)
    return seen["body"], seen["headers"]


DEEP_BODY = ('{"id": 1, "params": {"x": ' + "[" * 300 + "]" * 300 + "}}").encode()


def test_a_deep_body_reaches_the_app_readable_with_its_new_length() -> None:
    body, headers = _through([DEEP_BODY[:100], DEEP_BODY[100:]], len(DEEP_BODY))
    assert pydantic_core.from_json(body)["id"] == 1
    assert headers[b"content-length"] == str(len(body)).encode() and len(body) < len(DEEP_BODY)


def test_bodies_not_read_here_reach_the_app_whole_and_untouched() -> None:
    assert _through([DEEP_BODY], None)[0] == DEEP_BODY  # no Content-Length
    assert _through([DEEP_BODY], len(DEEP_BODY), method="GET")[0] == DEEP_BODY
    big = [DEEP_BODY, b" " * READ_BODY_BYTES, b" " * 10]  # longer than it said
    body, headers = _through(big, len(DEEP_BODY))
    assert body == b"".join(big) and headers[b"content-length"] == str(len(DEEP_BODY)).encode()


def test_refusing_puts_a_request_of_the_same_id_and_method_in_place_of_a_deep_one() -> None:
    deep = "[" * 300 + "]" * 300
    request = '{"jsonrpc": "2.0", "id": "a-1", "method": "tools/call", "params": ' + deep + "}\n"
    stand_in = json.loads(readable_line(request, empty=False))
    assert (stand_in["id"], stand_in["method"]) == ("a-1", "tools/call")
    assert "not forwarded" in stand_in["params"]["_meta"][UNREADABLE]
    assert deep not in json.dumps(stand_in)
    for unanswerable in ('{"jsonrpc": "2.0", "method": "notifications/x", "params": ' + deep + "}",
                         '{"jsonrpc": "2.0", "id": 3, "result": ' + deep + "}",
                         '{"jsonrpc": "2.0", "id": true, "method": "m", "params": ' + deep + "}"):
        assert readable_line(unanswerable, empty=False) is unanswerable
