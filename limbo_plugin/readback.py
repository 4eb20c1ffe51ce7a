"""Run a write's declared read-back and recognise its effect, from the tool contract alone.

Shared by the scripted reference policies and the middleware conditions (vbr, wait, guard): both
may read only the contract, never the ledger.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from limbo_plugin.spec.models import ReadBack
from limbo_plugin.templating import TemplateError, render


@dataclass(frozen=True)
class ReadBackQuery:
    """One read call and how to recognise the effect in its result."""

    tool: str
    arguments: dict[str, Any]
    items: str | None
    match: dict[str, Any] | None
    item: Any = None

    def find(self, content: dict[str, Any]) -> dict[str, Any] | None:
        """The first listed item that matches, or ``None``."""
        for candidate in extract_items(content, self.items):
            if self.match is None or all(candidate.get(k) == v for k, v in self.match.items()):
                return candidate
        return None


def queries(read_back: ReadBack, write_args: dict[str, Any]) -> list[ReadBackQuery]:
    """The read calls that verify a write made with ``write_args`` (one per batch item)."""
    if read_back.per_item:
        items = write_args.get(read_back.per_item) or []
        return [_query(read_back, {**write_args, "item": item}, item) for item in items]
    return [_query(read_back, write_args, None)]


def _query(read_back: ReadBack, ctx: dict[str, Any], item: Any) -> ReadBackQuery:
    try:
        arguments = render(read_back.args, ctx)
        match = render(read_back.match, ctx) if read_back.match else None
    except TemplateError:
        arguments, match = dict(read_back.args), None
    if match is not None and not isinstance(match, dict):
        match = None
    return ReadBackQuery(tool=read_back.tool, arguments=arguments, items=read_back.items,
                         match=match, item=item)


ANY_LIST = "*"
"""``items: "*"``: every object in any list at the top of the result, for a read-back whose
result shape is not declared (what ``limbo audit`` proposes for a third-party server)."""


def extract_items(content: dict[str, Any], path: str | None) -> list[dict[str, Any]]:
    """The list at dotted ``path`` in a result (a single object counts as a list of one)."""
    value: Any = unwrap(content)
    if path == ANY_LIST and isinstance(value, dict):
        return [v for field in value.values() if isinstance(field, list)
                for v in field if isinstance(v, dict)]
    for part in (path or "").split(".") if path else []:
        value = value.get(part) if isinstance(value, dict) else None
    if isinstance(value, dict):
        return [value]
    if isinstance(value, list):
        return [v for v in value if isinstance(v, dict)]
    return []


def unwrap(content: dict[str, Any]) -> dict[str, Any]:
    """Read a drifted, versioned body (``{"object", "data", "api_version"}``) as its payload."""
    if isinstance(content, dict) and "api_version" in content and isinstance(
            content.get("data"), dict):
        data: dict[str, Any] = content["data"]
        return data
    return content
