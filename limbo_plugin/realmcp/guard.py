"""``limbo guard``: the paper's guard as an MCP server in front of any MCP server.

It lists the upstream's tools unchanged (less their output schemas, which the guard's own answers
do not follow), relays everything that is not a tool call unchanged
(:mod:`~limbo_plugin.realmcp.relay`), passes the server's answers through unchanged with its note
as one more text block, and passes every call through the very middleware that
``--condition guard`` puts around the benchmark's transport
(:func:`~limbo_plugin.conditions.guard.build_guard`), with its four components:

- ``key``: attach an idempotency key where the tool accepts one and pin one key per intent, so a
  retry of the same intent carries the same key;
- ``consistency``: verify through the tool's read-back only once its documented lag has passed;
- ``block``: refuse an identical retry of a write with neither key nor read-back after an
  ambiguous failure, until the agent has escalated;
- ``annotate``: say on an ambiguous answer that the outcome is unknown (the paper's note).

Which tools write, take keys and can be read back comes from ``limbo audit --json``, edited in
the ``--config`` file where the audit guessed (see :mod:`~limbo_plugin.realmcp.config`). An
ambiguous failure is a timeout or a 5xx in Limbo's error shape (as ``limbo proxy`` and Limbo's
sandbox answer), an HTTP 5xx from a streamable-HTTP upstream, or the upstream not answering
within ``--call-timeout``. In front of a real server it words its answers for the real world
(:mod:`~limbo_plugin.realmcp.wording`). Time passes on the
wall clock; with ``wait_tool`` in the config it passes by calling that upstream tool instead
(Limbo's sandbox, whose clock is simulated). The guard cannot read the upstream's clock, so it
waits a write's whole lag after the retry arrives: never less than the benchmark's guard.
"""

from __future__ import annotations

import argparse
import functools
import math
import sys
import threading
import time
from collections.abc import Mapping, Sequence
from typing import Any, cast

from limbo_plugin.conditions.annotate import NOTE_FIELD
from limbo_plugin.realmcp.audit import command_after_dashes
from limbo_plugin.realmcp.config import ConfigError, GuardConfig, definitions, load_config
from limbo_plugin.realmcp.deep_answers import UNREADABLE_ANSWER
from limbo_plugin.realmcp.front import add_no_token_argument, check_front
from limbo_plugin.realmcp.relay import Relay
from limbo_plugin.realmcp.results import to_mcp_result, to_tool_result
from limbo_plugin.realmcp.upstream import (
    Upstream,
    UpstreamError,
    call_tool,
    connect,
    describe,
    list_tools,
    requesting,
    upstream_from_args,
)
from limbo_plugin.realmcp.wording import (
    ESCALATION_TOOL,
    RealVerifyBeforeRetry,
    real_note,
    wall_stamp,
)
from limbo_plugin.server.serving import (
    add_serving_arguments,
    command_main,
    serve,
)
from limbo_plugin.toolapi import ToolCall, ToolResult, canonical_json, tool_error

DEFAULT_CALL_TIMEOUT_S = 300.0


class WallClock:
    """The guard's clock on a real server: monotonic seconds; time passes by sleeping."""

    def __init__(self) -> None:
        self._start = time.monotonic()
        self.started = time.time()  # the wall time of ``now == 0``, for messages

    @property
    def now(self) -> float:
        return time.monotonic() - self._start

    def advance(self, seconds: float) -> None:
        if seconds > 0:
            time.sleep(seconds)

    def advance_to(self, t: float) -> None:
        self.advance(t - self.now)


class UpstreamWaitClock:
    """Time passes by calling the upstream's ``wait`` tool (whole seconds); ``now`` counts the
    seconds waited, a lower bound of the upstream time that has passed since the guard began."""

    def __init__(self, transport: UpstreamTransport, tool: str) -> None:
        self._transport, self._tool = transport, tool
        self.now = 0.0

    def advance(self, seconds: float) -> None:
        whole = math.ceil(seconds)
        if whole <= 0:
            return
        self._transport.call(ToolCall(name=self._tool, arguments={"seconds": whole},
                                      origin="harness"))
        self.now += whole

    def advance_to(self, t: float) -> None:
        self.advance(t - self.now)


class _ClockHolder:
    """What :class:`HarnessEnv` takes a world for: only its clock."""

    def __init__(self, clock: Any) -> None:
        self.clock = clock


class UpstreamTransport:
    """The innermost caller: each call goes to the upstream server (from the guard's worker
    thread into the event loop that owns the client).

    The upstream's own answer to the client's latest call made in this thread is kept
    (:meth:`answer_for`), so an answer the guard did not make up reaches the client unchanged:
    images, audio, resources and ``structuredContent`` included.
    """

    def __init__(self, client: Any, upstream: Upstream, timeout_s: float,
                 relay: Relay | None = None) -> None:
        self.client, self.upstream, self.timeout_s = client, upstream, timeout_s
        self.relay = relay
        self._answers = threading.local()

    def forget(self, ctx: Any = None) -> None:
        """Start a client call (its request context ``ctx``, to relay it as it was sent): no
        upstream answer is known for it yet."""
        self._answers.last = None
        self._answers.ctx = ctx

    def answer_for(self, result: ToolResult) -> Any | None:
        """The upstream's own MCP answer ``result`` was read from (a note the guard added
        aside), or None when the guard made ``result`` up (a read-back's record, a refusal)."""
        last = getattr(self._answers, "last", None)
        if last is None:
            return None
        read, raw = last
        mine = {k: v for k, v in result.content.items() if k != NOTE_FIELD}
        if result.is_error == read.is_error and mine == read.content:
            return raw
        return None

    def call(self, call: ToolCall) -> ToolResult:
        import anyio.from_thread

        arguments = call.arguments if isinstance(call.arguments, dict) else {}
        ctx = getattr(self._answers, "ctx", None) if call.origin == "agent" else None
        try:
            result = anyio.from_thread.run(self._call, str(call.name), arguments, ctx)
        except TimeoutError:
            return tool_error("timeout", f"the upstream server did not answer within "
                              f"{self.timeout_s:g}s")
        except UpstreamError as exc:  # one line: the call and the status it was refused with
            # without the server's address, which is the operator's (a URL may carry a secret)
            if exc.dropped:  # sent, then no answer: as ambiguous as a timeout
                return tool_error("connection_closed", exc.problem)
            if exc.ambiguous:  # a 5xx: the server may have committed before it failed
                return tool_error("upstream", exc.problem, status=exc.status)
            if UNREADABLE_ANSWER in exc.problem:  # it was forwarded: say what came back
                return tool_error("upstream", exc.problem)
            return tool_error("upstream", f"the call could not be forwarded: {exc.problem}")
        except Exception as exc:
            return tool_error("upstream", f"the call could not be forwarded: {describe(exc)}")
        read = to_tool_result(result)
        if call.origin == "agent":
            self._answers.last = (read, result)
        return read

    async def _call(self, name: str, arguments: dict[str, Any], ctx: Any) -> Any:
        import anyio
        import mcp_types as types

        with anyio.fail_after(self.timeout_s):  # a refusal names its HTTP status (one at a time)
            if self.relay is None or ctx is None or not isinstance(ctx.params, Mapping):
                return await call_tool(self.client, self.upstream, name, arguments)
            # the client's own request, its arguments as the guard sends them (a pinned key):
            # its progress, logs and the server's questions to the client flow as without a guard
            params = {**dict(ctx.params), "name": name, "arguments": arguments}
            async with requesting(self.client, self.upstream, f"calling {name}"):
                raw = await self.relay.forward(ctx, "tools/call", params)
            return types.CallToolResult.model_validate(raw, by_name=False)


def build(client: Any, upstream: Upstream, listed: list[Any], config: GuardConfig, *,
          timeout_s: float, without: Sequence[str] = (), relay: Relay | None = None
          ) -> tuple[Any, UpstreamTransport]:
    """The guard's caller chain over ``client`` (the same assembly as ``--condition guard``),
    and its transport (which keeps the upstream's own answers)."""
    from limbo_plugin.conditions.base import HarnessEnv
    from limbo_plugin.conditions.guard import build_guard

    transport = UpstreamTransport(client, upstream, timeout_s, relay)
    clock: Any = (UpstreamWaitClock(transport, config.wait_tool) if config.wait_tool
                  else WallClock())
    env = HarnessEnv(tools=definitions(listed, config), world=cast(Any, _ClockHolder(clock)))
    if not isinstance(clock, WallClock):  # Limbo's sandbox: the benchmark's own words
        return build_guard(transport, env, without=without), transport
    escalation = ESCALATION_TOOL in {t.name for t in listed}
    vbr = functools.partial(RealVerifyBeforeRetry, stamp=wall_stamp(clock.started),
                            escalation=escalation)
    return build_guard(transport, env, without=without, note=real_note(escalation),
                       vbr=vbr), transport


class IntentLocks:
    """Which calls wait for which: a write waits for an earlier call of the same intent (its
    tool and intent fields), whose outcome the guard must know before it decides on a retry;
    every other call runs at once (a read never waits for a slow write)."""

    def __init__(self, tools: dict[str, Any]) -> None:
        self.tools = tools
        self._guard = threading.Lock()
        self._locks: dict[str, threading.Lock] = {}

    def of(self, name: str, arguments: Any) -> Any:
        import contextlib

        definition = self.tools.get(name)
        if definition is None or not definition.is_write:
            return contextlib.nullcontext()
        fields = definition.contract.intent_fields
        kept = ({k: v for k, v in arguments.items() if k in fields}
                if isinstance(arguments, dict) else arguments)
        intent = canonical_json({"tool": name, "arguments": kept})
        with self._guard:
            return self._locks.setdefault(intent, threading.Lock())


def guarded_listing(tools: list[Any], definitions: dict[str, Any]) -> list[Any]:
    """The upstream's listing as the client gets it: unchanged, but for the output schema of
    the writes the guard acts on. Only there may it make an answer up (a record a read-back
    found, a refusal), which would not follow the schema, and clients reject such answers; a
    tool it only forwards keeps its schema."""
    def acted_on(name: str) -> bool:
        definition = definitions.get(name)
        return definition is not None and definition.is_write

    return [t.model_copy(update={"output_schema": None}) if acted_on(t.name) else t
            for t in tools]


def passed_through(result: ToolResult, transport: UpstreamTransport) -> Any:
    """What the client gets: the upstream's own answer unchanged where the guard did not make
    one up, with the guard's note (if any) as one more text block; else the guard's answer as
    one text block of canonical JSON."""
    import mcp_types as types

    raw = transport.answer_for(result)
    if raw is None:
        return to_mcp_result(result)
    note = result.content.get(NOTE_FIELD)
    if not isinstance(note, str):
        return raw
    block = types.TextContent(type="text", text=canonical_json({NOTE_FIELD: note}))
    return raw.model_copy(update={"content": [*raw.content, block],
                                  "is_error": result.is_error})


async def run_guard(upstream: Upstream, args: argparse.Namespace) -> None:
    import anyio.to_thread
    import mcp_types as types
    from mcp.server.lowlevel import Server

    config = load_config(args.config)
    relay = Relay()
    async with connect(upstream, callbacks=relay.client_callbacks()) as client:
        relay.client = client
        tools = await list_tools(client, upstream)
        names = {t.name for t in tools}
        unknown = [t.tool for t in config.tools if t.tool not in names]
        if config.wait_tool and config.wait_tool not in names:
            unknown.append(config.wait_tool)
        if unknown and not args.allow_missing:
            raise ConfigError(f"{args.config}: names tools the server does not list: "
                              f"{', '.join(unknown[:5])} (--allow-missing to go on)")
        guard, transport = build(client, upstream, tools, config,
                                 timeout_s=args.call_timeout, without=args.without,
                                 relay=relay)
        locks = IntentLocks(guard.env.tools)

        def guarded(name: str, arguments: Any, ctx: Any) -> Any:
            with locks.of(name, arguments):
                transport.forget(ctx)
                result = cast(ToolResult, guard.call(ToolCall(name=name, arguments=arguments)))
                return passed_through(result, transport)

        listing = guarded_listing(tools, guard.env.tools)

        async def on_list(ctx: Any, params: Any) -> Any:
            return types.ListToolsResult(tools=listing)

        async def on_call(ctx: Any, params: Any) -> Any:
            arguments = {} if params.arguments is None else params.arguments
            return await anyio.to_thread.run_sync(guarded, params.name, arguments, ctx)

        info = client.server_info
        server = Server(getattr(info, "name", None) or "limbo-guard",
                        version=getattr(info, "version", None) or "",
                        on_list_tools=on_list, on_call_tool=on_call)
        server.middleware.append(relay.middleware)
        await serve(server, args.transport, label="limbo guard", host=args.host,
                    port=args.port, allow_remote=args.allow_remote,
                    token=args.bearer)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from limbo_plugin.conditions.guard import GUARD_COMPONENTS

    parser.add_argument("--config", "--guard-config", dest="config", default=None,
                        help="limbo audit --json output, edited (default: the audit of the "
                        "live listing); --guard-config where a client's own --config would "
                        "take it (the MCP Inspector CLI)")
    parser.add_argument("--without", action="append", default=[], choices=GUARD_COMPONENTS,
                        metavar="COMPONENT", help="switch a component off (repeatable): "
                        f"{', '.join(GUARD_COMPONENTS)}")
    parser.add_argument("--call-timeout", type=float, default=DEFAULT_CALL_TIMEOUT_S,
                        metavar="SECONDS", help="an upstream call not answered by then is an "
                        f"ambiguous timeout (default {DEFAULT_CALL_TIMEOUT_S:g})")
    parser.add_argument("--allow-missing", action="store_true",
                        help="go on when the config names tools the server does not list")
    parser.add_argument("--url", default=None, help="a streamable HTTP upstream")
    parser.add_argument("--header", action="append", default=[], metavar="'NAME: VALUE'",
                        help="an HTTP header for --url (repeatable)")
    add_serving_arguments(parser, bearer=True)
    add_no_token_argument(parser)
    parser.add_argument("server_command", nargs=argparse.REMAINDER, metavar="-- COMMAND ARGS",
                        help="the stdio server to guard")


def run(args: argparse.Namespace) -> int:
    import anyio

    try:
        load_config(args.config)
        args.bearer = check_front(args, "limbo guard")
        upstream = upstream_from_args(command_after_dashes(args.server_command), args.url,
                                      args.header)
        anyio.run(run_guard, upstream, args)
    except (ValueError, ConfigError) as exc:
        print(f"limbo guard: {exc}", file=sys.stderr)
        return 2
    except UpstreamError as exc:
        print(f"limbo guard: cannot guard {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        pass
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    return command_main("limbo guard", __doc__, add_arguments, run, argv)


if __name__ == "__main__":
    sys.exit(main())
