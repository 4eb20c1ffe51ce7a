"""MCP tool results as Limbo's :class:`~limbo_plugin.toolapi.ToolResult` and back.

Limbo's middleware reads a result as a JSON object: its error type and status say whether a
failure is ambiguous (a timeout, a 5xx). A real server's result is read as its structured content,
else its text parsed as JSON, else ``{"text": …}``; a real server's error text becomes
``{"error": {"type": "tool_error", "message": …}}`` (not ambiguous: the server answered).
An answer in several text blocks that are each a JSON object (a guard's note added to the
server's answer as one more block) is read as those objects merged. Going back, a result the
middleware made up (a verified answer, a refusal, a note) becomes one
text block of canonical JSON, the way ``limbo mcp`` writes every result.
"""

from __future__ import annotations

import json
from typing import Any

from limbo_plugin.toolapi import ToolResult


def result_text(result: Any) -> str:
    return "\n".join(block.text for block in result.content
                     if getattr(block, "type", "") == "text")


def to_tool_result(result: Any) -> ToolResult:
    is_error = bool(result.is_error)
    text = result_text(result)
    content: Any = result.structured_content if not is_error else None
    if not isinstance(content, dict):
        content = _json_of(result, text)
    if isinstance(content, list):
        content = {"items": content}
    if not isinstance(content, dict) or (is_error and not isinstance(content.get("error"),
                                                                     dict)):
        content = ({"error": {"type": "tool_error", "message": text[:2000]}} if is_error
                   else {"text": text})
    return ToolResult(content, is_error=is_error)


def _json_of(result: Any, text: str) -> Any:
    """The answer's text as JSON: the whole text, else its text blocks as JSON objects merged
    (an answer with a note a guard added as one more block), else None."""
    try:
        return json.loads(text)
    except ValueError:
        pass
    merged: dict[str, Any] = {}
    for block in result.content:
        if getattr(block, "type", "") != "text":
            continue
        try:
            part = json.loads(block.text)
        except ValueError:
            return None
        if not isinstance(part, dict):
            return None
        merged.update(part)
    return merged or None


def to_mcp_result(result: ToolResult) -> Any:
    import mcp_types as types

    return types.CallToolResult(content=[types.TextContent(type="text", text=result.text())],
                                is_error=result.is_error)
