"""Templates are parsed once and rendered many times: the cached parse must render exactly what
parsing on every call rendered, errors included (a plan's arguments are part of every record)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from limbo_plugin.templating import (
    EXPRESSION,
    FILTERS,
    MAX_RENDERED_CHARS,
    TemplateError,
    _as_text,
    render_string,
)

CTX: dict[str, Any] = {
    "name": "Globex", "amount": 12.5, "n": 3, "items": [{"id": "a1"}, {"id": "b2"}],
    "flag": True, "nested": {"deep": {"x": "{literal}"}}, "empty": [], "big": "x" * 40_000,
}


def plain_evaluate(expression: str, ctx: Mapping[str, Any]) -> Any:
    path, *filters = (part.strip() for part in expression.split("|"))
    value: Any = ctx
    for part in path.split("."):
        if isinstance(value, Mapping) and part in value:
            value = value[part]
        elif isinstance(value, list) and part.lstrip("-").isdigit() \
                and -len(value) <= int(part) < len(value):
            value = value[int(part)]
        else:
            raise TemplateError(f"{{{path}}}: nothing named {part!r} here")
    for spec in filters:
        name, _, arg = spec.partition(":")
        function = FILTERS.get(name)
        if function is None:
            raise TemplateError(f"unknown filter {name!r} in {{{expression}}}; "
                                f"valid: {', '.join(sorted(FILTERS))}")
        try:
            value = function(value, arg)
        except (TypeError, ValueError, KeyError, OverflowError) as exc:
            raise TemplateError(f"filter {name!r} failed in {{{expression}}}: {exc}") from None
    return value


def plain_render_string(text: str, ctx: Mapping[str, Any]) -> Any:
    """The definition: match and substitute with the expression pattern on every call."""
    whole = EXPRESSION.fullmatch(text)
    if whole:
        return plain_evaluate(whole.group(1), ctx)
    rendered = EXPRESSION.sub(lambda m: _as_text(plain_evaluate(m.group(1), ctx)), text)
    if len(rendered) > MAX_RENDERED_CHARS:
        raise TemplateError(f"{text[:60]!r} renders to {len(rendered):,} characters; a "
                            f"rendered value is at most {MAX_RENDERED_CHARS:,} (a parameter "
                            "that repeats itself?)")
    return rendered.replace("{{", "{").replace("}}", "}")


def outcome(render: Any, text: str) -> tuple[str, Any]:
    try:
        return "value", render(text, CTX)
    except TemplateError as exc:
        return "error", str(exc)


EXPRESSIONS = st.sampled_from([
    "name", "amount|cents", "amount | dollars", "n|dollars", "items|attr:id|join",
    "items|attr:id|join:;", "items.0.id", "items.-1.id|upper", "items.5.id", "nested.deep.x",
    "flag", "missing", "name|nope", "name|len", "empty|join", "big", "name|title|lower",
    "items|cents", " name ",
])
TEXTS = st.lists(st.one_of(st.text(alphabet="ab {}|.:", max_size=6),
                           EXPRESSIONS.map(lambda e: "{" + e + "}")),
                 max_size=5).map("".join)


@settings(max_examples=800, deadline=None)
@given(TEXTS)
def test_the_cached_parse_renders_what_parsing_each_time_renders(text: str) -> None:
    first = outcome(render_string, text)
    assert first == outcome(plain_render_string, text)
    assert outcome(render_string, text) == first, "a second render (from the cache) differs"


def test_the_cases_that_matter_by_name() -> None:
    assert render_string("{items|attr:id}", CTX) == ["a1", "b2"]
    assert render_string("Invoice {n} for {name}", CTX) == "Invoice 3 for Globex"
    assert render_string("{{literal}} {name}", CTX) == "{literal} Globex"
    assert render_string("{name}}}", CTX) == "{name}}"  # no expression before a brace
    assert render_string("}} only", CTX) == "} only"
    assert outcome(render_string, "{big}{big}{big}")[0] == "error"
    assert re.search("nothing named 'missing'", outcome(render_string, "a {missing} b")[1])
