"""``mcp:<policy>``: a scripted reference policy whose calls travel the whole harness path.

The policy is the same code as ``scripted:<policy>`` and still reads the task and the tool
contracts from the registry — it is the reference. Only its calls change route: each goes over
a real stdio MCP connection (the official SDK's client) to a real ``limbo mcp`` process, from
there over HTTP to the sandbox service, and into the episode's session, exactly the way a
production harness's calls do. So CI exercises the harness path end to end without a model, and
any difference from the in-process policy — a lost field, a reordered call, a re-encoded
result — shows up as a different outcome or trace.
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Callable
from typing import Any

from limbo_plugin.agents.base import AgentSession, InfrastructureError
from limbo_plugin.agents.scripted import POLICIES, ScriptedAgent
from limbo_plugin.contracts import ToolDefinition
from limbo_plugin.errors import EpisodeOver
from limbo_plugin.server.launch import episode_launch
from limbo_plugin.server.sandbox_http import SandboxServer, shared_sandbox
from limbo_plugin.toolapi import ToolResult

CALL_TIMEOUT_S = 120.0


class McpPolicyAgent:
    """Scripted policy ``policy`` acting through ``limbo mcp`` over stdio."""

    def __init__(self, policy: str, *, sandbox: SandboxServer | None = None) -> None:
        if policy not in POLICIES:
            raise ValueError(f"unknown scripted policy {policy!r}; valid: {', '.join(POLICIES)}")
        self.policy = policy
        self.name = f"mcp:{policy}"
        self._sandbox = sandbox

    def run(self, session: AgentSession) -> None:
        sandbox = self._sandbox or shared_sandbox()
        with sandbox.episode(session) as lease, tempfile.TemporaryFile("w+") as errlog:
            launch = episode_launch(lease.url, lease.token)
            outcome = _drive(launch.command, list(launch.args), launch.env, errlog,
                             lambda remote: ScriptedAgent(self.policy).run(remote),
                             session)
        if lease.failure is not None:
            raise lease.failure
        if isinstance(outcome, BaseException):
            raise outcome


def _drive(command: str, args: list[str], env: dict[str, str], errlog: Any,
           policy: Callable[[Any], None], session: AgentSession) -> BaseException | None:
    """Connect to the MCP server, run ``policy`` against it in a worker thread, and return
    what stopped it (``EpisodeOver``, or whatever the policy itself raised, unchanged) or
    ``None``; failures of the MCP connection become :class:`InfrastructureError`."""
    import anyio
    import anyio.to_thread
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters, stdio_client

    stopped: list[BaseException] = []

    async def main() -> None:
        parameters = StdioServerParameters(command=command, args=args, env=env)
        transport = stdio_client(parameters, errlog=errlog)
        async with Client(transport, read_timeout_seconds=CALL_TIMEOUT_S) as client:
            listed = (await client.list_tools()).tools
            remote = RemoteSession(session, {t.name for t in listed}, client)

            def act() -> None:
                try:
                    policy(remote)
                except Exception as exc:  # EpisodeOver, or a bug that must not pass for
                    stopped.append(exc)   # an infrastructure error

            await anyio.to_thread.run_sync(act)

    try:
        anyio.run(main)
    except Exception as exc:  # MCP connection, protocol or process failures
        return InfrastructureError(f"the MCP path failed: {_describe(exc)}"
                                   f"{_tail(errlog)}")
    return stopped[0] if stopped else None


class RemoteSession:
    """What a scripted policy needs from a session (``task``, ``tool``, ``call``), with calls
    sent over MCP. Only tools the server listed are known to the policy."""

    def __init__(self, session: AgentSession, listed: set[str], client: Any) -> None:
        self.shared_task = session.shared_task
        self.instruction = session.instruction
        self._tools = {t.name: t for t in session.shared_tools if t.name in listed}
        self._client = client

    @property
    def tools(self) -> list[ToolDefinition]:
        return list(self._tools.values())

    def shared_tool(self, name: str) -> ToolDefinition | None:
        return self._tools.get(name)

    def call(self, name: str, arguments: Any = None, *, call_id: str | None = None
             ) -> ToolResult:
        import anyio.from_thread

        arguments = {} if arguments is None else arguments
        result = anyio.from_thread.run(self._client.call_tool, name, arguments)
        return to_tool_result(result)


def to_tool_result(result: Any) -> ToolResult:
    """A ``CallToolResult`` back into the :class:`ToolResult` it was made from: its text
    blocks, each a JSON object, merged (one, unless a guard in between added its note).

    ``episode_over`` is the service's answer once the episode has ended; in process the session
    raises :class:`EpisodeOver` instead, and so does this.
    """
    texts = [block.text for block in result.content if getattr(block, "type", "") == "text"]
    if not texts:
        raise InfrastructureError("expected a text block in a tool result, got none")
    content: dict[str, Any] = {}
    for text in texts:  # a guard in between adds its note as one more JSON object
        try:
            part = json.loads(text)
        except ValueError:
            raise InfrastructureError(f"a tool result is not JSON: {text[:200]!r}") from None
        if not isinstance(part, dict):
            raise InfrastructureError(f"a tool result is not a JSON object: {text[:200]!r}")
        content.update(part)
    tool_result = ToolResult(content, is_error=bool(result.is_error))
    if tool_result.error_type == "episode_over":
        raise EpisodeOver("episode over")
    return tool_result


def _describe(exc: BaseException) -> str:
    while isinstance(exc, BaseExceptionGroup) and len(exc.exceptions) == 1:
        exc = exc.exceptions[0]
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0]}" if text else type(exc).__name__


def _tail(errlog: Any, limit: int = 600) -> str:
    try:
        errlog.flush()
        errlog.seek(0)
        text = errlog.read().strip()
    except (OSError, ValueError):
        return ""
    if not text:
        return ""
    return f" (server stderr: …{text[-limit:]})" if len(text) > limit else \
        f" (server stderr: {text})"
