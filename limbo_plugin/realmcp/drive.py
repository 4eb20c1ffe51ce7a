"""Limbo's scripted reference policies, acting on a real MCP server.

The policies (:mod:`~limbo_plugin.agents.scripted`) are the benchmark's reference: their recovery
is predicted exactly by the paper's propositions. Here one runs a short plan of calls against any
server (through ``limbo proxy`` and ``limbo guard``, or directly), reading each tool's contract
from the guard's configuration (the audit, edited), so what the benchmark predicts for a policy
can be checked on a team's own stack::

    python -m limbo_plugin.realmcp.drive --policy blind_retry \\
        --call create_entities '{"entities": […]}' [--config guard.yaml] \\
        -- limbo proxy --inject timeout_post -- mcp-server-memory

A streamable HTTP server is ``--url URL [--header 'Name: value']`` instead of the command, as
for ``limbo audit``. A server that cannot be reached, refuses a request (its HTTP status is
named) or fails a call is one line on stderr and exit status 2.

The general tools of the benchmark are answered here, not by the server: ``finish`` ends the
plan, ``wait`` sleeps, and ``escalate_to_human`` has no operator to reach (the policy then lists
the operation as uncertain).
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, cast

from limbo_plugin.agents.scripted import POLICIES, ScriptedAgent
from limbo_plugin.contracts import ToolDefinition
from limbo_plugin.realmcp.config import ConfigError, GuardConfig, definitions, load_config
from limbo_plugin.realmcp.results import to_tool_result
from limbo_plugin.realmcp.upstream import (
    Upstream,
    UpstreamError,
    call_tool,
    connect,
    list_tools,
)
from limbo_plugin.toolapi import ToolResult, tool_error

if TYPE_CHECKING:
    from limbo_plugin.agents.base import AgentSession


@dataclass(frozen=True)
class Step:
    id: str
    tool: str
    args: dict[str, Any]
    items: None = None


@dataclass(frozen=True)
class Plan:
    plan: list[Step]
    template: str = "drive"
    params: dict[str, Any] = field(default_factory=dict)


@dataclass
class DriveResult:
    """What the policy did: every call with its answer, and what it reported at the end."""

    calls: list[tuple[str, dict[str, Any], ToolResult]] = field(default_factory=list)
    finish: dict[str, Any] | None = None


class ServerSession:
    """What a scripted policy needs of a session, on an MCP client (calls from a worker
    thread into the client's event loop)."""

    def __init__(self, client: Any, upstream: Upstream, tools: dict[str, ToolDefinition],
                 plan: Plan, result: DriveResult) -> None:
        self.shared_task = plan
        self.instruction = ""
        self._client = client
        self._upstream = upstream
        self._tools = tools
        self._result = result

    @property
    def shared_tools(self) -> list[ToolDefinition]:
        return list(self._tools.values())

    def shared_tool(self, name: str) -> ToolDefinition | None:
        return self._tools.get(name)

    def call(self, name: str, arguments: Any = None) -> ToolResult:
        import anyio.from_thread

        arguments = dict(arguments or {})
        if name == "finish":
            self._result.finish = arguments
            answer = ToolResult({"ok": True})
        elif name == "wait":
            time.sleep(float(arguments.get("seconds", 0)))
            answer = ToolResult({"waited_s": arguments.get("seconds")})
        elif name == "escalate_to_human":
            answer = tool_error("unavailable", "no operator can be reached from this server")
        else:
            answer = to_tool_result(anyio.from_thread.run(call_tool, self._client,
                                                          self._upstream, name, arguments))
        self._result.calls.append((name, arguments, answer))
        return answer


async def drive(policy: str, upstream: Upstream, steps: list[tuple[str, dict[str, Any]]],
                config: GuardConfig | None = None) -> DriveResult:
    """Run ``policy`` on a plan of ``steps`` (tool, arguments) against ``upstream``."""
    import anyio.to_thread

    if policy not in POLICIES:
        raise ValueError(f"unknown policy {policy!r}; valid: {', '.join(POLICIES)}")
    result = DriveResult()
    async with connect(upstream) as client:
        listed = await list_tools(client, upstream)
        tools = definitions(listed, config or GuardConfig())
        plan = Plan([Step(f"step{i}", tool, args) for i, (tool, args) in enumerate(steps, 1)])
        session = ServerSession(client, upstream, tools, plan, result)
        agent = ScriptedAgent(policy)
        await anyio.to_thread.run_sync(agent.run, cast("AgentSession", session))
    return result


def main(argv: Sequence[str] | None = None) -> int:
    import anyio

    from limbo_plugin.realmcp.audit import add_server_arguments, command_after_dashes
    from limbo_plugin.realmcp.upstream import upstream_from_args
    from limbo_plugin.usage import OneLineParser

    parser = OneLineParser(prog="python -m limbo_plugin.realmcp.drive",
                           description=__doc__.split("\n\n")[0])
    parser.add_argument("--policy", required=True, choices=POLICIES)
    parser.add_argument("--call", nargs=2, action="append", required=True,
                        metavar=("TOOL", "JSON_ARGS"), help="a plan step (repeatable)")
    parser.add_argument("--config", default=None, help="the guard's config (audit output)")
    add_server_arguments(parser)
    args = parser.parse_args(argv)
    try:
        steps = plan_steps(args.call)
        upstream = upstream_from_args(command_after_dashes(args.server_command), args.url,
                                      args.header)
        done = anyio.run(drive, args.policy, upstream, steps, load_config(args.config))
    except (ValueError, ConfigError) as exc:
        print(f"drive: {exc}", file=sys.stderr)
        return 2
    except UpstreamError as exc:
        print(f"drive: cannot drive {exc}", file=sys.stderr)
        return 2
    for name, arguments, answer in done.calls:
        print(f"{name} {json.dumps(arguments)} -> {answer.text()[:200]}")
    return 0


def plan_steps(calls: Sequence[Sequence[str]]) -> list[tuple[str, dict[str, Any]]]:
    """``--call TOOL JSON_ARGS`` options as plan steps; arguments that are not a JSON object
    are a :class:`ValueError` naming the step."""
    steps = []
    for number, (tool, text) in enumerate(calls, 1):
        try:
            arguments = json.loads(text)
        except ValueError as exc:
            raise ValueError(f"--call number {number} ({tool}): its arguments are not JSON "
                             f"({exc})") from None
        if not isinstance(arguments, dict):
            raise ValueError(f"--call number {number} ({tool}): its arguments must be a JSON "
                             f"object, not {type(arguments).__name__}")
        steps.append((tool, arguments))
    return steps


if __name__ == "__main__":
    sys.exit(main())
