"""Which regular expressions of a spec could make Python's ``re`` backtrack for ever.

Tool schemas are validated with Python's ``re`` (through ``jsonschema`` and
``fastjsonschema``), a backtracking engine: ``^(a+)+$`` against ``"aaaa…ab"`` tries every way to
split the ``a``\\ s between the two loops, exponentially many, and one hostile tool call wedges
the world until the episode's time limit. The shape of that danger is a repetition inside a
repetition, whose iterations can share out the same text in many ways.

Not every nested repetition is ambiguous, though. In ``^(\\d+\\.)*\\d+$`` (a version number)
each iteration of the outer loop ends with a ``.`` that the inner ``\\d+`` cannot match, so
the text splits into iterations in exactly one way, and a failing match costs polynomial time.
:func:`nested_repeat` accepts that shape — an outer repetition whose body is one repeated
character class and single characters, with a first or last character that class cannot match
— and refuses every other repetition inside a repetition.
"""

from __future__ import annotations

import re
from functools import cache
from typing import Any

try:  # the parser of Python's own regular expressions (re._parser since 3.11)
    import re._parser as re_parser  # type: ignore[import-not-found,unused-ignore]
except ImportError:  # pragma: no cover
    import sre_parse as re_parser  # type: ignore[no-redef,unused-ignore]

REPEATS = ("MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT")
SINGLES = ("LITERAL", "NOT_LITERAL", "IN", "ANY")
"""Items that match exactly one character."""
CATEGORIES = {"CATEGORY_DIGIT": r"\d", "CATEGORY_NOT_DIGIT": r"\D",
              "CATEGORY_SPACE": r"\s", "CATEGORY_NOT_SPACE": r"\S",
              "CATEGORY_WORD": r"\w", "CATEGORY_NOT_WORD": r"\W"}


def nested_repeat(pattern: str) -> bool:
    """Whether ``pattern`` puts an unbounded-ish quantifier inside another (``(a+)+``,
    ``(\\w*)*``, ``(x{1,9}){1,99}``) in a way that lets the iterations share out the text,
    the shape of catastrophic backtracking (see the module docstring)."""
    try:
        parsed = re_parser.parse(pattern)
    except (re.error, RecursionError, OverflowError):
        return False  # reported as an invalid expression by the schema check
    flags = int(parsed.state.flags) & re.IGNORECASE
    return _repeats_inside(list(parsed), inside_repeat=False, flags=flags)


def _repeats_inside(items: list[Any], *, inside_repeat: bool, flags: int) -> bool:
    for op, argument in items:
        name = str(op)
        if name in REPEATS:
            _, high, sub = argument
            repeats = high is re_parser.MAXREPEAT or high > 1
            if repeats and inside_repeat:
                return True
            if repeats and _delimited(list(sub), flags):
                continue  # one way to split the text into iterations
            if _repeats_inside(list(sub), inside_repeat=inside_repeat or repeats, flags=flags):
                return True
        elif name == "BRANCH":
            if any(_repeats_inside(list(branch), inside_repeat=inside_repeat, flags=flags)
                   for branch in argument[1]):
                return True
        elif name in ("SUBPATTERN", "ASSERT", "ASSERT_NOT") and _repeats_inside(
                list(argument[-1]), inside_repeat=inside_repeat, flags=flags):
            return True
    return False


def _delimited(body: list[Any], flags: int) -> bool:
    """Whether a repeated ``body`` is one repeated character class among single characters,
    the first or the last of them a character that class cannot match: each iteration then
    begins (or ends) at a character no other part of it consumes."""
    items = _inline_groups(body)
    if items is None or len(items) < 2:
        return False
    repeated = [item for item in items if str(item[0]) in REPEATS]
    others = [item for item in items if str(item[0]) not in REPEATS]
    if len(repeated) != 1 or any(str(op) not in SINGLES for op, _ in others):
        return False
    sub = _inline_groups(list(repeated[0][1][2]))
    if sub is None or len(sub) != 1 or str(sub[0][0]) not in SINGLES:
        return False
    inner = _char_class(sub[0])
    for edge in (items[0], items[-1]):
        if str(edge[0]) in SINGLES:
            outer = _char_class(edge)
            if inner is not None and outer is not None and _disjoint(inner, outer, flags):
                return True
    return False


def _inline_groups(items: list[Any]) -> list[Any] | None:
    """``items`` with plain groups replaced by their content; ``None`` for a group that
    changes flags (its characters would be judged under other rules)."""
    flat: list[Any] = []
    for op, argument in items:
        if str(op) == "SUBPATTERN":
            _, add_flags, del_flags, sub = argument
            if add_flags or del_flags:
                return None
            inner = _inline_groups(list(sub))
            if inner is None:
                return None
            flat += inner
        else:
            flat.append((op, argument))
    return flat


def _char_class(item: Any) -> str | None:
    """The one-character item as a regular expression of its own; ``None`` if unsure."""
    op, argument = item
    name = str(op)
    if name == "LITERAL":
        return re.escape(chr(argument))
    if name == "NOT_LITERAL":
        return f"[^{re.escape(chr(argument))}]"
    if name == "ANY":
        return "(?s:.)"  # as if DOTALL: more characters is the safe side
    parts: list[str] = []
    for part_op, value in argument:
        part = str(part_op)
        if part == "NEGATE":
            parts.insert(0, "^")
        elif part == "LITERAL":
            parts.append(re.escape(chr(value)))
        elif part == "RANGE":
            parts.append(f"{re.escape(chr(value[0]))}-{re.escape(chr(value[1]))}")
        elif part == "CATEGORY" and str(value) in CATEGORIES:
            parts.append(CATEGORIES[str(value)])
        else:
            return None
    return "[" + "".join(parts) + "]"


def _every_character() -> str:
    return "".join(map(chr, range(0x110000)))


@cache
def _disjoint(first: str, second: str, flags: int) -> bool:
    """Whether no character matches both classes (tried on every code point)."""
    both = re.compile(f"(?={first}){second}", flags)
    return both.search(_every_character()) is None
