"""The small template language of task specs: ``"{path|filter|filter:arg}"``.

A string that is exactly one expression evaluates to the raw value (a list stays a list, an int
an int); otherwise each expression is substituted as text. ``{{`` and ``}}`` are literal braces.
Paths are dotted and may index lists (``customers.0.id``). Filters:

``cents`` (whole currency units → minor units), ``dollars`` (minor units → ``"12.50"``),
``attr:name`` (map a list of objects to one field), ``join`` / ``join:sep``, ``lower``, ``upper``,
``len``, ``title``.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from functools import lru_cache
from typing import Any

from limbo_plugin.errors import LimboError

EXPRESSION = re.compile(r"(?<!\{)\{([^{}]+)\}(?!\})")


class TemplateError(LimboError):
    """A template refers to something that does not exist or uses an unknown filter."""


def render(value: Any, ctx: Mapping[str, Any]) -> Any:
    """Render every string inside ``value`` (dict values and list items too) against ``ctx``."""
    if isinstance(value, str):
        return render_string(value, ctx)
    if isinstance(value, dict):
        return {k: render(v, ctx) for k, v in value.items()}
    if isinstance(value, list):
        return [render(v, ctx) for v in value]
    return value


def render_string(text: str, ctx: Mapping[str, Any]) -> Any:
    pieces = _pieces(text)
    if type(pieces) is str:  # exactly one expression: its raw value
        return evaluate(pieces, ctx)
    if len(pieces) == 1:  # no expression: only the literal braces to undo
        rendered = pieces[0]
    else:  # literal, expression, literal, …: each expression as text, left to right
        rendered = "".join(piece if i % 2 == 0 else _as_text(evaluate(piece, ctx))
                           for i, piece in enumerate(pieces))
    if len(rendered) > MAX_RENDERED_CHARS:
        raise TemplateError(f"{text[:60]!r} renders to {len(rendered):,} characters; a "
                            f"rendered value is at most {MAX_RENDERED_CHARS:,} (a parameter "
                            "that repeats itself?)")
    return rendered.replace("{{", "{").replace("}}", "}")


@lru_cache(maxsize=8192)
def _pieces(text: str) -> str | tuple[str, ...]:
    """``text`` parsed once: the expression when it is exactly one, else its literal parts and
    expressions alternating (a plan's templates are rendered in every episode)."""
    whole = EXPRESSION.fullmatch(text)
    if whole:
        return whole.group(1)
    return tuple(EXPRESSION.split(text))


def placeholder_roots(value: Any) -> set[str]:
    """The first name of every ``{expression}`` in the strings inside ``value`` (``{item.col |
    cents}`` gives ``item``): what a context must hold for ``value`` to render."""
    if isinstance(value, str):
        pieces = _pieces(value)
        expressions = [pieces] if type(pieces) is str else list(pieces[1::2])
        return {_expression(e)[1][0] for e in expressions}
    if isinstance(value, dict):
        return set().union(*(placeholder_roots(v) for v in value.values()))
    if isinstance(value, list):
        return set().union(*(placeholder_roots(v) for v in value))
    return set()


MAX_RENDERED_CHARS = 100_000
"""The longest text one template string may render to. Each ``{p}{p}`` doubles the text, so
forty such parameters would otherwise ask for a terabyte."""


def evaluate(expression: str, ctx: Mapping[str, Any]) -> Any:
    path, parts, filters = _expression(expression)
    value = _lookup(path, parts, ctx)
    for name, arg in filters:
        function = FILTERS.get(name)
        if function is None:
            raise TemplateError(f"unknown filter {name!r} in {{{expression}}}; "
                                f"valid: {', '.join(sorted(FILTERS))}")
        try:
            value = function(value, arg)
        except (TypeError, ValueError, KeyError, OverflowError) as exc:
            raise TemplateError(f"filter {name!r} failed in {{{expression}}}: {exc}") from None
    return value


@lru_cache(maxsize=8192)
def _expression(expression: str) -> tuple[str, tuple[str, ...], tuple[tuple[str, str], ...]]:
    """An expression parsed once: its path, the path's parts, and each filter's name and
    argument."""
    path, *filters = (part.strip() for part in expression.split("|"))
    named = tuple((name, arg) for name, _, arg in (spec.partition(":") for spec in filters))
    return path, tuple(path.split(".")), named


def lookup(path: str, ctx: Mapping[str, Any]) -> Any:
    return _lookup(path, tuple(path.split(".")), ctx)


def _lookup(path: str, parts: tuple[str, ...], ctx: Mapping[str, Any]) -> Any:
    value: Any = ctx
    for part in parts:
        if isinstance(value, Mapping) and part in value:
            value = value[part]
        elif isinstance(value, list) and part.lstrip("-").isdigit() \
                and -len(value) <= int(part) < len(value):
            value = value[int(part)]
        else:
            raise TemplateError(f"{{{path}}}: nothing named {part!r} here")
    return value


def _as_text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return ", ".join(_as_text(v) for v in value)
    return str(value)


def _join(value: Any, sep: str) -> str:
    return (sep or ", ").join(_as_text(v) for v in value)


MAX_AMOUNT = 10**12
"""The largest amount the money filters take, in either unit: beyond it a value is a typo, and
the minor units it makes would no longer be exact in JSON."""


def _cents(value: Any, _: str) -> int:
    amount = float(value)
    if not math.isfinite(amount) or abs(amount) > MAX_AMOUNT:
        raise ValueError(f"{value!r} is not an amount (at most {MAX_AMOUNT:,})")
    return round(amount * 100)


def _dollars(value: Any, _: str) -> str:
    if isinstance(value, float) and not math.isfinite(value):
        raise ValueError(f"{value!r} is not an amount")
    minor = int(value)
    if abs(minor) > MAX_AMOUNT * 100:
        raise ValueError(f"{value!r} is not an amount (at most {MAX_AMOUNT * 100:,} minor units)")
    return f"{minor / 100:.2f}"


FILTERS: dict[str, Callable[[Any, str], Any]] = {
    "cents": _cents,
    "dollars": _dollars,
    "attr": lambda v, arg: [item[arg] for item in v],
    "join": _join,
    "lower": lambda v, _: str(v).lower(),
    "upper": lambda v, _: str(v).upper(),
    "title": lambda v, _: str(v).title(),
    "len": lambda v, _: len(v),
}
