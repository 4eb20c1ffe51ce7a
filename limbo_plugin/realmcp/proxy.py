"""``limbo proxy --inject MODE``: the benchmark's transport faults between any MCP client and any
MCP server.

The proxy is an MCP server (stdio, or streamable HTTP on loopback) that lists the upstream's tools
unchanged, forwards every call and relays every other message unchanged
(:mod:`~limbo_plugin.realmcp.relay`). On a write tool (as ``limbo audit`` reads the listing) it
injects one of the paper's ambiguous faults on the first call of an intent (the tool and its
arguments, an idempotency key left out), chosen by a seeded schedule: an intent is faulted when
``random(seed, intent) < rate``, so the same seed faults the same intents in any order.

- ``timeout_pre``: not forwarded; the client gets a timeout;
- ``timeout_post``: forwarded; the server's answer is logged and the client gets a timeout;
- ``timeout_late``: the client gets a timeout at once; the call is forwarded ``--late-delay``
  seconds later (the request was still in flight);
- ``redelivery``: forwarded, answered, and forwarded again ``--redelivery-after`` seconds later
  (an at-least-once transport);
- ``http500_post``: forwarded; the client gets HTTP 500 (the server committed and then failed):
  over streamable HTTP a real HTTP 500 status, over stdio the benchmark's error answer.

A timeout is the benchmark's timeout answer at once; ``--hold`` never answers instead (the
client's own timeout and retry logic run), and over streamable HTTP ``--drop`` closes the
connection half-way through the answer (the client's transport sees a dropped connection).

The fault answers are the texts of ``specs/faults/modes.yaml``, the same bytes an agent sees in
the benchmark. ``--config`` takes the guard's configuration (the audit, edited) where the audit
guessed wrong about writes, keys or read-backs. Every call goes to a JSONL log (``--log``,
default ``limbo-proxy.jsonl``): its first line names the mode, the seed, the write tools, their
keys and read-backs, then one line per call with what was forwarded, when, and what the server
answered. ``limbo proxy report LOG`` reads it.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import hashlib
import json
import random
import sys
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml

from limbo_plugin.realmcp.audit import Auditor, ListedTool, command_after_dashes
from limbo_plugin.realmcp.config import ConfigError, definitions, load_config
from limbo_plugin.realmcp.front import add_no_token_argument, check_front
from limbo_plugin.realmcp.http_faults import HttpFaults
from limbo_plugin.realmcp.relay import Relay
from limbo_plugin.realmcp.results import result_text
from limbo_plugin.realmcp.rules import RulesError, load_rules
from limbo_plugin.realmcp.upstream import (
    Upstream,
    UpstreamError,
    call_tool,
    connect,
    list_tools,
    requesting,
    upstream_from_args,
)
from limbo_plugin.server.serving import (
    add_serving_arguments,
    command_main,
    serve,
)
from limbo_plugin.spec.models import ReadBack
from limbo_plugin.toolapi import canonical_json

MODES = ("timeout_pre", "timeout_post", "timeout_late", "redelivery", "http500_post")
TIMEOUT_MODES = ("timeout_pre", "timeout_post", "timeout_late")
DEFAULT_LOG = "limbo-proxy.jsonl"


def fault_answer(mode: str) -> dict[str, Any] | None:
    """The body the benchmark answers a faulted call with (``None``: the server's own)."""
    from limbo_plugin.spec.registry import default_specs_dir

    modes = yaml.safe_load((default_specs_dir() / "faults" / "modes.yaml").read_text())
    for spec in modes["modes"]:
        if spec["name"] == mode:
            response = spec.get("response")
            return response if isinstance(response, dict) else None
    raise ValueError(f"fault mode {mode!r} is not in specs/faults/modes.yaml")


def intent_of(tool: str, arguments: dict[str, Any], key: str | None) -> str:
    """A stable fingerprint of a call's intent: its tool and arguments, without the key."""
    kept = {k: v for k, v in arguments.items() if k != key}
    text = canonical_json({"tool": tool, "arguments": kept})
    return hashlib.sha256(text.encode()).hexdigest()[:16]


class Schedule:
    """Which intents are faulted: ``random(seed, intent) < rate``, the first call only."""

    def __init__(self, seed: int, rate: float) -> None:
        self.seed, self.rate = seed, rate
        self._seen: set[str] = set()

    def faults(self, intent: str) -> bool:
        first = intent not in self._seen
        self._seen.add(intent)
        draw = random.Random(f"{self.seed}:{intent}").random()
        return first and draw < self.rate


class ProxyLog:
    """The JSONL call log: whole lines, flushed as they are written."""

    def __init__(self, path: Path, header: dict[str, Any]) -> None:
        self.path = path
        self._lock = threading.Lock()
        self._start = time.monotonic()
        self._seq = 0
        self._handle = path.open("w", encoding="utf-8")
        self._write({"proxy": header})

    def entry(self, **fields: Any) -> None:
        with self._lock:
            self._seq += 1
            seq = self._seq
        self._write({"seq": seq, "t": round(time.monotonic() - self._start, 3), **fields})

    def _write(self, record: dict[str, Any]) -> None:
        line = json.dumps(record, sort_keys=True, default=str) + "\n"
        with self._lock:
            self._handle.write(line)
            self._handle.flush()

    def close(self) -> None:
        self._handle.close()


class FaultProxy:
    """Forwards calls to ``client`` and injects ``mode`` on scheduled write intents."""

    def __init__(self, client: Any, tools: list[Any], *, mode: str, schedule: Schedule,
                 log: ProxyLog, late_delay_s: float, redelivery_after_s: float,
                 task_group: Any, writes: dict[str, bool], keys: dict[str, str | None],
                 upstream: Upstream, relay: Relay | None = None,
                 read_backs: dict[str, ReadBack] | None = None, hold: bool = False,
                 drop: bool = False) -> None:
        self.client, self.tools, self.mode = client, tools, mode
        self.upstream, self.relay = upstream, relay
        self.read_backs = read_backs or {}
        self.hold, self.drop = hold, drop
        self._executed: dict[str, int] = {}
        import anyio

        self.client_left = anyio.Event()
        self.schedule, self.log = schedule, log
        self.late_delay_s, self.redelivery_after_s = late_delay_s, redelivery_after_s
        self.task_group = task_group
        self.writes, self.keys = writes, keys
        answer = fault_answer(mode)
        self.answer_text = canonical_json(answer) if answer is not None else None

    def _classify(self, name: str, arguments: dict[str, Any]) -> tuple[dict[str, Any], bool]:
        """The log's fields for a call, and whether the schedule faults it (which it says once
        per intent: its first call)."""
        write = self.writes.get(name, False)
        key = self.keys.get(name)
        intent = intent_of(name, arguments, key)
        faulted = write and self.schedule.faults(intent)
        common = {"tool": name, "write": write, "intent": intent, "arguments": arguments,
                  "key": arguments.get(key) if key else None,
                  "injected": self.mode if faulted else None}
        return common, faulted

    async def over_http(self, name: str, arguments: dict[str, Any]) -> str | None:
        """The fault a streamable-HTTP client gets as HTTP itself, if this call is faulted:
        ``"500"`` (``http500_post``: a real HTTP 500 status) or ``"drop"`` (a timeout mode with
        ``--drop``: the connection closes with the answer half sent); the server's side of the
        fault is done here. None: the call goes on as an MCP message (:meth:`call`)."""
        if self.mode == "http500_post":
            action, saw = "500", "http 500"
        elif self.drop and self.mode in TIMEOUT_MODES:
            action, saw = "drop", "connection closed"
        else:
            return None
        common, faulted = self._classify(name, arguments)
        if not faulted:  # its first call is drawn: call() will not fault it again
            return None
        await self._inject(name, arguments, common, saw)
        return action

    async def call(self, name: str, arguments: dict[str, Any], ctx: Any = None) -> Any:
        import mcp_types as types
        from mcp.shared.exceptions import MCPError

        common, faulted = self._classify(name, arguments)
        if not faulted:
            if self.relay is not None and ctx is not None:  # as sent: progress, _meta and all
                return await self._relayed(ctx, common)
            return await self._forward(name, arguments, common, "original", "server")
        timeout = types.CallToolResult(
            content=[types.TextContent(type="text", text=self.answer_text or "")],
            is_error=True)
        if self.mode == "redelivery":
            async def again() -> None:
                await self._until(self.redelivery_after_s)
                with contextlib.suppress(MCPError):  # logged; nobody awaits its answer
                    await self._forward(name, arguments, common, "redelivery", None)

            self.log.entry(tool=name, intent=common["intent"], scheduled="redelivery")

            try:  # the client sees the first copy's answer, a failure included
                return await self._forward(name, arguments, common, "original", "server")
            finally:  # the transport delivers the second copy whatever the first's answer
                self.task_group.start_soon(again)
        held = "no answer (held)" if self.hold else "timeout"
        await self._inject(name, arguments, common,
                           "http 500" if self.mode == "http500_post" else held)
        return await self._answer(timeout)

    async def _inject(self, name: str, arguments: dict[str, Any], common: dict[str, Any],
                      saw: str) -> None:
        """The server's side of a faulted call (every mode but ``redelivery``), logged with what
        the client ``saw``."""
        from mcp.shared.exceptions import MCPError

        if self.mode == "timeout_pre":
            self.log.entry(**common, forwarded=False, delivery="original", server=None,
                           client_saw=saw)
            return
        if self.mode == "timeout_late":
            async def late() -> None:
                await self._until(self.late_delay_s)
                with contextlib.suppress(MCPError):  # logged; nobody awaits its answer
                    await self._forward(name, arguments, common, "late", None)

            self.log.entry(**common, forwarded=False, delivery="original", server=None,
                           client_saw=f"{saw} (forwarded later)")
            self.log.entry(tool=name, intent=common["intent"], scheduled="late")
            self.task_group.start_soon(late)
            return
        # timeout_post and http500_post: the server's answer is lost, a failure included (the
        # log keeps it); the client sees the injected fault, as the log says it did
        with contextlib.suppress(MCPError):
            await self._forward(name, arguments, common, "original", saw)

    async def _answer(self, timeout: Any) -> Any:
        """The injected fault as the client gets it: the benchmark's timeout answer, or, with
        ``--hold``, no answer at all until the client gives up (its own timeout and retry
        logic run, as they would against a server that stopped answering)."""
        import anyio

        if self.hold and self.mode != "http500_post":
            await anyio.sleep_forever()
        return timeout

    async def _until(self, delay_s: float) -> None:
        """Wait ``delay_s`` before a copy of the proxy's own, or less: once the client has left,
        the process may be stopped at any moment (an SDK client kills its server about 2 s after
        closing), so a copy still pending is sent at once rather than never."""
        import anyio

        with anyio.move_on_after(delay_s):
            await self.client_left.wait()

    async def _relayed(self, ctx: Any, common: dict[str, Any]) -> Any:
        """The client's call relayed unchanged, its raw answer returned unchanged (logged)."""
        import mcp_types as types
        from mcp.shared.exceptions import MCPError
        from mcp_types import INTERNAL_ERROR

        assert self.relay is not None
        try:
            async with requesting(self.client, self.upstream, f"calling {common['tool']}"):
                raw = await self.relay.forward(ctx, "tools/call", ctx.params)
        except UpstreamError as exc:  # one line, as _forward's (a refusal names its status)
            self.log.entry(**common, forwarded=True, delivery="original",
                           server={"is_error": True, "failed": exc.problem},
                           client_saw="server")
            raise MCPError(code=INTERNAL_ERROR, message=exc.problem) from None
        try:
            text = result_text(types.CallToolResult.model_validate(raw, by_name=False))
        except ValueError:
            text = ""
        self.log.entry(**common, forwarded=True, delivery="original",
                       server={"is_error": bool(raw.get("isError")), "text": text[:500]},
                       client_saw="server")
        if not raw.get("isError"):
            await self._executed_once(common)
        return raw

    async def _executed_once(self, common: dict[str, Any]) -> None:
        """Count an execution of a write intent; from its second on, read back what is really
        there (a server may skip or refuse a repeat: re-executed is not duplicated) and log how
        many records each read-back query finds."""
        if not common["write"]:
            return
        intent = common["intent"]
        self._executed[intent] = self._executed.get(intent, 0) + 1
        read_back = self.read_backs.get(common["tool"])
        if self._executed[intent] < 2 or read_back is None:
            return
        from limbo_plugin.readback import extract_items, queries
        from limbo_plugin.realmcp.results import to_tool_result

        counts: list[int | None] = []
        for query in queries(read_back, common["arguments"]):
            try:
                answer = to_tool_result(await call_tool(self.client, self.upstream, query.tool,
                                                        query.arguments))
            except UpstreamError:
                counts.append(None)
                continue
            if answer.is_error:
                counts.append(None)
                continue
            found = [item for item in extract_items(answer.content, query.items)
                     if query.match is None
                     or all(item.get(k) == v for k, v in query.match.items())]
            counts.append(len(found))
        self.log.entry(tool=common["tool"], intent=intent,
                       read_back={"tool": read_back.tool, "found": counts})

    async def _forward(self, name: str, arguments: dict[str, Any], common: dict[str, Any],
                       delivery: str, client_saw: str | None) -> Any:
        from mcp.shared.exceptions import MCPError
        from mcp_types import INTERNAL_ERROR

        try:
            result = await call_tool(self.client, self.upstream, name, arguments)
        except UpstreamError as exc:
            # one line that names an HTTP refusal's status (a token expired mid-session), as
            # the guard's does; without the server's address, which is the operator's
            self.log.entry(**common, forwarded=True, delivery=delivery,
                           server={"is_error": True, "failed": exc.problem},
                           client_saw=client_saw)
            raise MCPError(code=INTERNAL_ERROR, message=exc.problem) from None
        self.log.entry(**common, forwarded=True, delivery=delivery,
                       server={"is_error": bool(result.is_error),
                               "text": result_text(result)[:500]},
                       client_saw=client_saw)
        if not result.is_error:
            await self._executed_once(common)
        return result


async def run_proxy(upstream: Upstream, args: argparse.Namespace) -> None:
    import anyio
    import mcp_types as types
    from mcp.server.lowlevel import Server

    relay = Relay()
    async with connect(upstream, callbacks=relay.client_callbacks()) as client:
        relay.client = client
        tools = await list_tools(client, upstream)
        rows = Auditor([ListedTool.from_mcp(t) for t in tools], load_rules(args.rules)).audit()
        writes = {r.tool: r.writes and not r.idempotent for r in rows}
        keys = {r.tool: r.key for r in rows}
        read_backs = {r.tool: list(r.read_back) for r in rows}
        for entry in load_config(args.config).tools:  # the user's corrections win
            writes[entry.tool] = entry.writes and not entry.idempotent
            keys[entry.tool] = entry.key
            if entry.verify is not None and entry.verify.tool not in read_backs.get(entry.tool,
                                                                                     []):
                read_backs.setdefault(entry.tool, []).insert(0, entry.verify.tool)
        config = load_config(args.config)
        checked = {name: d.contract.read_back
                   for name, d in definitions(tools, config).items()
                   if d.contract.read_back is not None and writes.get(name)}
        header = {"mode": args.inject, "seed": args.seed, "rate": args.rate,
                  "server": upstream.describe(),
                  "writes": sorted(t for t, w in writes.items() if w),
                  "keys": {t: k for t, k in keys.items() if k},
                  "read_backs": {t: r for t, r in read_backs.items() if writes.get(t)},
                  "checked_read_backs": sorted(checked)}
        log = ProxyLog(Path(args.log), header)
        try:
            async with anyio.create_task_group() as group:
                proxy = FaultProxy(client, tools, mode=args.inject,
                                   schedule=Schedule(args.seed, args.rate), log=log,
                                   late_delay_s=args.late_delay, hold=args.hold,
                                   drop=args.drop,
                                   redelivery_after_s=args.redelivery_after,
                                   task_group=group, writes=writes, keys=keys,
                                   upstream=upstream, relay=relay, read_backs=checked)

                async def on_list(ctx: Any, params: Any) -> Any:
                    return types.ListToolsResult(tools=tools)

                async def on_call(ctx: Any, params: Any) -> Any:
                    return await proxy.call(params.name, dict(params.arguments or {}), ctx)

                info = client.server_info
                server = Server(getattr(info, "name", None) or "limbo-proxy",
                                version=getattr(info, "version", None) or "",
                                on_list_tools=on_list, on_call_tool=on_call)
                server.middleware.append(relay.middleware)
                try:
                    await serve(server, args.transport, label="limbo proxy", host=args.host,
                                port=args.port, allow_remote=args.allow_remote,
                                token=args.bearer,
                                wrap=functools.partial(HttpFaults, proxy=proxy,
                                                       token=args.bearer))
                finally:  # the client is gone: pending copies go now, while the proxy lives
                    proxy.client_left.set()
        finally:
            log.close()


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--inject", default=None, choices=MODES, metavar="MODE",
                        help=f"the fault to inject on write tools: {', '.join(MODES)}")
    parser.add_argument("--seed", type=int, default=0, help="the schedule's seed (default 0)")
    parser.add_argument("--rate", type=_rate, default=1.0,
                        help="the share of write intents whose first call is faulted "
                        "(default 1.0: every one)")
    parser.add_argument("--log", default=DEFAULT_LOG, help=f"the call log (default "
                        f"{DEFAULT_LOG})")
    parser.add_argument("--hold", action="store_true",
                        help="timeout modes: never answer the faulted call (the client's own "
                        "timeout fires) instead of answering with the benchmark's timeout")
    parser.add_argument("--drop", action="store_true",
                        help="timeout modes, --transport streamable-http only: close the "
                        "faulted call's connection half-way through its answer (the client's "
                        "transport sees a dropped connection)")
    parser.add_argument("--late-delay", type=_seconds, default=90.0, metavar="SECONDS",
                        help="timeout_late: when the call is forwarded (default 90)")
    parser.add_argument("--redelivery-after", type=_seconds, default=2.0, metavar="SECONDS",
                        help="redelivery: when the second copy is forwarded (default 2)")
    parser.add_argument("--url", default=None, help="a streamable HTTP upstream")
    parser.add_argument("--header", action="append", default=[], metavar="'NAME: VALUE'",
                        help="an HTTP header for --url (repeatable)")
    parser.add_argument("--rules", default=None, help="the audit's evidence rules")
    parser.add_argument("--config", default=None, help="the guard's config (limbo audit "
                        "--json, edited): its writes, keys and read-backs replace the audit's")
    add_serving_arguments(parser, bearer=True)
    add_no_token_argument(parser)
    parser.add_argument("server_command", nargs=argparse.REMAINDER, metavar="-- COMMAND ARGS",
                        help="the stdio server to start (or: report LOG [--json])")


def _rate(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not 0.0 <= value <= 1.0:
        raise argparse.ArgumentTypeError(f"a share between 0 and 1, got {text!r}")
    return value


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {text!r}") from None
    if not 0.0 <= value < 86400:
        raise argparse.ArgumentTypeError(f"seconds between 0 and 86400, got {text!r}")
    return value


def check_transport_faults(args: argparse.Namespace) -> None:
    """``--hold`` and ``--drop``: each a way a timeout mode reaches the client, one at a time;
    ``--drop`` closes an HTTP connection, which stdio has not."""
    for flag in ("hold", "drop"):
        if getattr(args, flag) and args.inject not in TIMEOUT_MODES:
            raise ValueError(f"--{flag} applies to the timeout modes ({', '.join(TIMEOUT_MODES)})"
                             f", not --inject {args.inject}")
    if args.hold and args.drop:
        raise ValueError("give --hold (never answer) or --drop (close the connection), not both")
    if args.drop and args.transport != "streamable-http":
        raise ValueError("--drop closes the faulted call's HTTP connection: it needs "
                         "--transport streamable-http (on stdio, --hold leaves the timeout to "
                         "the client)")


def run(args: argparse.Namespace) -> int:
    import anyio

    if args.server_command[:1] == ["report"]:  # limbo proxy report LOG [--json]
        from limbo_plugin.realmcp import proxy_report

        return proxy_report.main(args.server_command[1:])
    try:
        if args.inject is None:
            raise ValueError(f"--inject MODE is required; valid: {', '.join(MODES)} "
                             "(or: limbo proxy report LOG)")
        check_transport_faults(args)
        load_rules(args.rules)
        load_config(args.config)
        args.bearer = check_front(args, "limbo proxy")
        upstream = upstream_from_args(command_after_dashes(args.server_command), args.url,
                                      args.header)
        Path(args.log).parent.mkdir(parents=True, exist_ok=True)
        anyio.run(run_proxy, upstream, args)
    except (ValueError, RulesError, ConfigError) as exc:
        print(f"limbo proxy: {exc}", file=sys.stderr)
        return 2
    except UpstreamError as exc:
        print(f"limbo proxy: cannot proxy {exc}", file=sys.stderr)
        return 2
    except OSError as exc:
        print(f"limbo proxy: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        pass
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    return command_main("limbo proxy", __doc__, add_arguments, run, argv)


if __name__ == "__main__":
    sys.exit(main())
