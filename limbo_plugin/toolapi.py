"""The tool-call API: the one seam every layer of an episode speaks.

Agents, conditions (middleware) and the fault transport in front of the world
(``agent ∘ conditions ∘ fault transport ∘ world``) all speak it, as must any front end that
serves the tools to an agent outside the process: a :class:`ToolCall` goes in, a
:class:`ToolResult` comes out. Results are plain JSON; their
canonical text (:meth:`ToolResult.text`) is what "byte-identical observations" compares.
"""

from __future__ import annotations

import copy
import json
import math
import re
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, runtime_checkable

CallOrigin = Literal["agent", "harness"]
MAX_ARGUMENT_BYTES = 100_000
MAX_ARGUMENT_DEPTH = 32
"""How deeply an agent's arguments may nest. Every tool takes flat objects or lists of them;
deeper values would only reach code that recurses (copying, rendering) on the agent's terms."""
MAX_RENDERED_CHARS = 20_000
"""How much of a value the trace keeps when it has to render it (see :func:`safe_json`)."""
MAX_PARSED_DEPTH = 200
"""How deeply a JSON text of arguments may nest to be parsed at all. Python's parser recurses,
and on Python 3.11 how deep it gets depends on the caller's own stack (a scaffold's, a
server thread's, an xdist worker's), so the same text, past some 900 levels, would parse in
one run and not in another. Deeper texts are refused as too deep without parsing, the same way
everywhere."""
JSON_TEXT_TOKEN = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"|[\[\]{}]')
"""In a JSON text: a string (skipped whole, as brackets inside it are text), or a bracket."""


_CANONICAL = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False,
                              allow_nan=False)
"""One encoder for every call: ``json.dumps`` with options builds a new one each time, and an
episode encodes some thirty values."""


def canonical_json(value: Any) -> str:
    """Deterministic JSON: sorted keys, no insignificant whitespace, UTF-8 kept as is."""
    return _CANONICAL.encode(value)


@dataclass(frozen=True)
class ToolCall:
    """One call of a tool by name. ``arguments`` is whatever the caller sent: a JSON object
    (dict), a JSON text, or something malformed that the transport must answer with a tool error.
    """

    name: str
    arguments: Any = field(default_factory=dict)
    origin: CallOrigin = "agent"
    call_id: str | None = None
    seq: int | None = None
    """The number of the agent's call this call is (origin ``agent``) or serves (``harness``),
    counted where the agent calls, before any middleware. Record ids derive from it, so a
    harness's own calls never shift the ids of the agent's records (SPEC §1.3). ``None``: the
    world numbers the call itself (a sandbox used by hand)."""


@dataclass(frozen=True)
class RefusedArguments:
    """Arguments judged where they were received, too large to travel further: ``rendering``
    is :func:`safe_json` of what the agent sent (what a trace keeps of it) and ``problem`` what
    :func:`normalize_arguments` found wrong with it. ``limbo mcp`` sends these in place of
    arguments over the sandbox's body limit, so the call is still traced and answered with the
    same ``invalid_arguments`` tool error an in-process agent gets."""

    rendering: Any
    problem: str


@dataclass(frozen=True)
class ToolResult:
    content: dict[str, Any]
    is_error: bool = False

    def text(self) -> str:
        return canonical_json(self.content)

    @property
    def error(self) -> dict[str, Any] | None:
        err = self.content.get("error") if self.is_error else None
        return err if isinstance(err, dict) else None

    @property
    def error_type(self) -> str | None:
        err = self.error
        return None if err is None else str(err.get("type"))

    @property
    def status(self) -> int | None:
        err = self.error
        status = None if err is None else err.get("status")
        return status if isinstance(status, int) else None

    @property
    def retry_after_s(self) -> float | None:
        err = self.error
        value = None if err is None else err.get("retry_after_s")
        return float(value) if isinstance(value, int | float) else None

    @property
    def is_ambiguous(self) -> bool:
        """No answer (:data:`NO_ANSWER_KINDS`) or a 5xx without an explicit retry hint: the
        request may have executed."""
        if self.error_type in NO_ANSWER_KINDS:
            return True
        status = self.status
        return status is not None and status >= 500 and self.retry_after_s is None

    @property
    def is_explicit_refusal(self) -> bool:
        """429/503 with ``retry_after_s``: the service says the request did not execute."""
        return self.status in (429, 503) and self.retry_after_s is not None


NO_ANSWER_KINDS = ("timeout", "connection_closed")
"""Error kinds that say no answer came (the time ran out; the connection closed after the
request was sent): the request may have executed."""


def tool_error(kind: str, message: str, **extra: Any) -> ToolResult:
    return ToolResult({"error": {"type": kind, "message": message, **extra}}, is_error=True)


def parsed_arguments(arguments: Any) -> Any:
    """A JSON-text argument object parsed (so the trace, and the behaviour coder reading it,
    see structured arguments whichever way an agent passed them); anything else unchanged for
    the transport to accept or reject. What an agent session does with every call, and
    ``limbo mcp`` with a call too large to forward, so both record the same."""
    if arguments is None:
        return {}
    if isinstance(arguments, str):
        if text_nests_deeper(arguments, MAX_PARSED_DEPTH):
            return arguments
        try:
            value = json.loads(arguments) if arguments.strip() else {}
        except (ValueError, RecursionError):
            return arguments
        return value if isinstance(value, dict) else arguments
    return arguments


def text_nests_deeper(text: str, limit: int) -> bool:
    """Whether brackets in ``text`` (outside its strings) nest more than ``limit`` levels, read
    without parsing it: the cheap count of brackets first, the scan only when it is over."""
    if text.count("[") + text.count("{") <= limit:
        return False
    depth = 0
    for token in JSON_TEXT_TOKEN.finditer(text):
        bracket = token.group()
        if bracket in ("[", "{"):
            depth += 1
            if depth > limit:
                return True
        elif bracket in ("]", "}"):
            depth -= 1
    return False


def normalize_arguments(arguments: Any) -> tuple[dict[str, Any] | None, str | None]:
    """A detached JSON copy of ``arguments`` as an object, or an error message.

    Accepts a dict or a JSON text (what models emit). Copying through JSON also rejects
    non-JSON values (NaN, objects) and bounds the size, so nothing an agent sends reaches the
    world in a shape it cannot handle.
    """
    if arguments is None:
        arguments = {}
    if isinstance(arguments, RefusedArguments):
        return None, arguments.problem
    if isinstance(arguments, str | bytes):
        text = arguments.decode("utf-8", "replace") if isinstance(arguments, bytes) else arguments
        if len(text) > MAX_ARGUMENT_BYTES:
            return None, f"arguments are too large ({len(text)} bytes; limit {MAX_ARGUMENT_BYTES})"
        if not text.strip():
            arguments = {}
        elif text_nests_deeper(text, MAX_PARSED_DEPTH):
            return None, f"arguments nest more than {MAX_ARGUMENT_DEPTH} levels deep"
        else:
            try:
                arguments = json.loads(text)
            except (ValueError, RecursionError) as exc:
                return None, f"arguments are not valid JSON: {exc}"
    if not isinstance(arguments, dict):
        return None, f"arguments must be a JSON object, not {type(arguments).__name__}"
    if 0 <= plain_json_bound(arguments) <= MAX_ARGUMENT_BYTES:
        return sorted_copy(arguments), None  # what the round trip below gives, without it
    if nesting_exceeds(arguments, MAX_ARGUMENT_DEPTH):
        return None, f"arguments nest more than {MAX_ARGUMENT_DEPTH} levels deep"
    try:
        text = canonical_json(arguments)
    except (TypeError, ValueError, RecursionError) as exc:
        return None, f"arguments are not JSON-serialisable: {exc}"
    try:
        size = len(text.encode())
    except UnicodeEncodeError:  # a lone surrogate ("\ud800") is not text any service accepts
        return None, "arguments contain a string that is not valid Unicode (a lone surrogate)"
    if size > MAX_ARGUMENT_BYTES:
        return None, f"arguments are too large ({size} bytes; limit {MAX_ARGUMENT_BYTES})"
    return json.loads(text), None


def nesting_exceeds(value: Any, limit: int) -> bool:
    """Whether lists and objects in ``value`` nest more than ``limit`` levels (iteratively: a
    hostile value must not exhaust the stack while we measure it). One level at a time, and
    only containers are kept: the leaves, most of any value, are looked at once."""
    level = [value] if isinstance(value, dict | list | tuple) else []
    depth = 1
    while level:
        if depth > limit:
            return True
        nested = []
        for item in level:
            for child in item.values() if isinstance(item, dict) else item:
                if isinstance(child, dict | list | tuple):
                    nested.append(child)
        level = nested
        depth += 1
    return False


_INT_BOUND = 10**18
"""Integers below this in size print in at most 20 characters."""


def plain_json_bound(value: Any, depth: int = 1) -> int:
    """An upper bound on the length of ``value``'s canonical JSON, in characters and in UTF-8
    bytes alike, or -1 when ``value`` is not plain JSON within :data:`MAX_ARGUMENT_DEPTH`.

    Plain: exactly ``dict`` (string keys), ``list``, ``str`` (valid Unicode), ``int`` below
    10**18, finite ``float``, ``bool`` or ``None``; such a value encodes, and at the bound's
    length or less. A bound within a limit therefore decides what :func:`canonical_json`,
    ``encode`` and :func:`nesting_exceeds` would, in one walk; -1 or a bound over the limit
    only means "ask them" (a tuple, an integer subclass, a long string: the slow path decides).
    A character takes at most six (``\\u0000``) in the text and four bytes in UTF-8.
    """
    kind = type(value)
    if kind is str:
        if not value.isascii():
            try:
                value.encode("utf-8")
            except UnicodeEncodeError:
                return -1
        return 6 * len(value) + 2
    if kind is dict:
        if depth > MAX_ARGUMENT_DEPTH:
            return -1
        total = 2 + len(value)  # the braces, and a separator per item (one too many)
        for key, item in value.items():
            if type(key) is not str:
                return -1
            if not key.isascii():
                try:
                    key.encode("utf-8")
                except UnicodeEncodeError:
                    return -1
            size = plain_json_bound(item, depth + 1)
            if size < 0:
                return -1
            total += 6 * len(key) + 3 + size  # quotes and colon
        return total
    if kind is list:
        if depth > MAX_ARGUMENT_DEPTH:
            return -1
        total = 2 + len(value)
        for item in value:
            size = plain_json_bound(item, depth + 1)
            if size < 0:
                return -1
            total += size
        return total
    if kind is int:
        return 20 if -_INT_BOUND < value < _INT_BOUND else -1
    if kind is float:
        return 24 if value - value == 0.0 else -1  # not NaN or infinite; repr fits 24
    if value is None or kind is bool:
        return 5
    return -1


def sorted_copy(value: Any) -> Any:
    """A deep copy of a plain JSON value (:func:`plain_json_bound`) with every object's keys
    in sorted order: what ``json.loads(canonical_json(value))`` returns, built directly."""
    kind = type(value)
    if kind is dict:
        return {key: sorted_copy(value[key]) for key in sorted(value)}
    if kind is list:
        return [sorted_copy(item) for item in value]
    return value


def safe_json(value: Any) -> Any:
    """``value`` if it is JSON a record can hold, else a bounded rendering of it.

    The trace keeps what the agent *sent*, and an agent may send anything: a lone surrogate
    (``"\\ud800"``), NaN, an object nested hundreds deep, megabytes of text. The world answers
    such a call with a tool error, but the trace must still serialise or the episode's record is
    lost. Valid JSON within :data:`MAX_RENDERED_CHARS` and :data:`MAX_ARGUMENT_DEPTH` is kept as
    it is; anything else is rendered — strings with surrogates escaped, non-finite numbers and
    unknown objects as text, depth and length cut with ``…`` — deterministically.
    """
    if type(value) is RefusedArguments:
        return value.rendering
    if type(value) is str and len(value) * 6 + 2 <= MAX_RENDERED_CHARS:
        # A short string (a tool name): its JSON text, at most six characters per character
        # (``\u0000``), is within the limit; only a lone surrogate needs rendering.
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return _render_text(value, [MAX_RENDERED_CHARS])
        return value
    if 0 <= plain_json_bound(value) <= MAX_RENDERED_CHARS:
        return value  # what the checks below conclude, without encoding it
    try:
        text = canonical_json(value)
        text.encode("utf-8")
    except (TypeError, ValueError, RecursionError, UnicodeEncodeError):
        pass
    else:
        if len(text) <= MAX_RENDERED_CHARS and not nesting_exceeds(value, MAX_ARGUMENT_DEPTH):
            return value
    budget = [MAX_RENDERED_CHARS]
    return _render(value, 1, budget)


def _render(value: Any, depth: int, budget: list[int]) -> Any:
    if budget[0] <= 0:
        return "…"
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, int):
        if abs(value) < 10**18:
            return value
        return f"<integer of {value.bit_length()} bits>"
    if isinstance(value, float):
        return value if math.isfinite(value) else repr(value)
    if isinstance(value, str):
        return _render_text(value, budget)
    if depth > MAX_ARGUMENT_DEPTH:
        budget[0] -= 1
        return "…"
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        for key, item in value.items():
            if budget[0] <= 0:
                out["…"] = "…"
                break
            name = key if isinstance(key, str) else f"<{type(key).__name__}>"
            label = _render_text(name, budget)  # the key before its value, as the text reads
            out[label] = _render(item, depth + 1, budget)
        return out
    if isinstance(value, list | tuple):
        items: list[Any] = []
        for item in value:
            if budget[0] <= 0:
                items.append("…")
                break
            items.append(_render(item, depth + 1, budget))
        return items
    return _render_text(f"<{type(value).__name__}>", budget)


def _render_text(text: str, budget: list[int]) -> str:
    cut = text[: max(budget[0], 0)]
    budget[0] -= len(cut) + 2
    safe = cut.encode("utf-8", "backslashreplace").decode("utf-8")
    return safe if len(cut) == len(text) else safe + "…"


@runtime_checkable
class ToolCaller(Protocol):
    """Anything that answers tool calls: the transport, a middleware condition, a session."""

    def call(self, call: ToolCall) -> ToolResult: ...


_ATOMS = (str, int, float, bool, type(None))


def detached(value: Any) -> Any:
    """A deep copy of a JSON value (what services answer), several times faster than
    :func:`copy.deepcopy`, which it falls back to for anything else."""
    kind = type(value)
    if kind is dict:
        return {key: detached(item) for key, item in value.items()}
    if kind is list:
        return [detached(item) for item in value]
    if kind in _ATOMS:
        return value
    return copy.deepcopy(value)
