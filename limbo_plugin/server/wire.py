"""The episode's tools and results as they travel over HTTP and MCP.

One function per direction, shared by the sandbox service (which renders) and the tests (which
compare with the contract): a tool becomes ``{name, description, inputSchema, annotations}``,
the MCP ``Tool`` shape, so the MCP server forwards it field for field; a result becomes its
canonical text plus ``isError``, so the text a harness shows its model is byte for byte the text
the in-process scaffold shows (:meth:`~limbo_plugin.toolapi.ToolResult.text`).
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # kept light: ``limbo mcp`` imports this module at every harness start
    from limbo_plugin.contracts import ToolDefinition
    from limbo_plugin.toolapi import ToolResult

TOOLS_PATH = "/v1/tools"
CALL_PATH = "/v1/tools/call"
HEALTH_PATH = "/healthz"

TOKEN_ENV = "LIMBO_SANDBOX_TOKEN"
"""Environment variable that carries the episode's bearer token to ``limbo mcp`` (so the token
does not show in ``ps``)."""
URL_ENV = "LIMBO_SANDBOX_URL"
"""Environment variable that may carry the sandbox URL to ``limbo mcp``."""
MAX_BODY_BYTES = 1_000_000
"""The largest request body the sandbox service reads. ``limbo mcp`` sends a call that would
exceed it with what the episode keeps of it (:mod:`~limbo_plugin.server.oversized`): a name
as its stand-in, arguments as :class:`~limbo_plugin.toolapi.RefusedArguments` (``refused``)."""
SERVER_NAME = "acme"
"""The MCP server's name: the harness preamble (paper A.2) tells the agent to use only the tools
of the ``acme`` MCP server, so that is what harnesses call it."""


def tool_wire(tool: ToolDefinition) -> dict[str, Any]:
    """One tool as ``tools/list`` shows it: only what an agent may see, never the contract."""
    return {
        "name": tool.name,
        "description": tool.description,
        "inputSchema": tool.input_schema,
        "annotations": tool.annotations(),
    }


def call_body(name: Any, arguments: Any) -> str:
    """A call as ``limbo mcp`` posts it: ``name`` and ``arguments`` as the agent sent them.
    ASCII escapes carry every string an agent can send, a lone surrogate ("\\ud800")
    included, to the episode, which answers it with a tool error: encoding it as UTF-8 would
    fail and leave the MCP request without any answer."""
    return json.dumps({"name": name, "arguments": arguments}, ensure_ascii=True)


def result_wire(result: ToolResult) -> dict[str, Any]:
    """One tool result: its canonical JSON text and whether it is a tool error."""
    return {"text": result.text(), "isError": result.is_error}
