"""Everything ``limbo proxy`` and ``limbo guard`` do not act on, relayed unchanged.

Both sit between a client and a server they did not write, and act on tool calls only. Every
other message must pass as if they were not there: resources, prompts, completion, logging,
pings, the client's notifications (cancellation, roots), the server's notifications (progress,
log messages, list and resource updates) and the server's own requests to the client
(sampling, elicitation, roots). A :class:`Relay` does that at the JSON-RPC level, on the raw
params and results, so nothing a newer protocol adds is lost in a model that does not know it:

- :meth:`Relay.middleware` (server middleware on the side the client talks to) sends each request
  or notification it does not leave to a handler to the upstream and returns its raw answer, and
  answers ``initialize`` with the upstream's capabilities;
- the client callbacks (:meth:`Relay.client_callbacks`, given to the upstream's client) pass the
  server's requests and notifications to the client, on the stream of the client's request in
  flight where there is one (a tool's progress, logs and sampling belong to its call).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

HANDLED = frozenset({"initialize", "notifications/initialized", "tools/call", "tools/list",
                     "server/discover"})
"""Methods the proxy or guard answer through the SDK's own handlers (``initialize`` with the
upstream's capabilities put in); every other one is relayed."""


def for_client(ctx: Any, result: dict[str, Any]) -> dict[str, Any]:
    """An upstream's raw result as the client's protocol version wants it: a client on a
    revision where ``resultType`` is required gets ``complete`` where an older server sent
    none (the one field that revision requires of every result)."""
    from mcp_types.version import MODERN_PROTOCOL_VERSIONS

    version = getattr(ctx.session, "protocol_version", None)
    if version in MODERN_PROTOCOL_VERSIONS and "resultType" not in result:
        return {**result, "resultType": "complete"}
    return result


def _raw_result() -> Any:
    """A result type that keeps the upstream's result as it came (a dict)."""
    from pydantic import TypeAdapter

    return TypeAdapter(dict[str, Any])


class Relay:
    """Relays between the client of this server and the upstream's client (see the module)."""

    def __init__(self, handled: frozenset[str] = HANDLED) -> None:
        self.handled = handled
        self.client: Any = None
        self._active: list[Any] = []
        self._last: Any = None

    # -- the side the client talks to ------------------------------------------------------------
    async def middleware(self, ctx: Any, call_next: Any) -> Any:
        from limbo_plugin.server.deep_lines import refuse_unreadable

        async def relayed(ctx: Any) -> Any:  # a line too deep to read is answered, not relayed
            return await self._relay(ctx, call_next)

        return await refuse_unreadable(ctx, relayed)

    async def _relay(self, ctx: Any, call_next: Any) -> Any:
        self._last = ctx.session
        if ctx.method == "initialize":
            result = await call_next(ctx)
            capabilities = self.capabilities()
            if isinstance(result, dict) and capabilities is not None:
                result = {**result, "capabilities": capabilities}
            return result
        if ctx.method in self.handled or self.client is None:
            self._active.append(ctx)
            try:
                return await call_next(ctx)
            finally:
                self._active.remove(ctx)
        params = dict(ctx.params) if isinstance(ctx.params, Mapping) else None
        if ctx.request_id is None:  # a notification: nothing to answer
            await self._notify(ctx.method, params)
            return None
        self._active.append(ctx)
        try:
            return for_client(ctx, await self._request(ctx.method, params))
        finally:
            self._active.remove(ctx)

    async def _request(self, method: str, params: dict[str, Any] | None) -> dict[str, Any]:
        """``method`` sent through the upstream client's own session, as any of its requests:
        stamped as the negotiated protocol wants (its ``_meta`` and, over streamable HTTP, the
        ``Mcp-Method``/``Mcp-Name`` headers a server checks against the body), its raw result
        returned."""
        import mcp_types as types

        request = types.Request[dict[str, Any] | None, str](method=method, params=params)
        result: dict[str, Any] = await self.client.session.send_request(request, _raw_result())
        return result

    async def _notify(self, method: str, params: dict[str, Any] | None) -> None:
        import mcp_types as types

        notification = types.Notification[dict[str, Any] | None, str](method=method,
                                                                       params=params)
        await self.client.session.send_notification(notification)

    async def forward(self, ctx: Any, method: str, params: Mapping[str, Any] | None
                      ) -> dict[str, Any]:
        """``method`` sent to the upstream as the client sent it; its raw result."""
        result = await self._request(method, dict(params) if params is not None else None)
        return for_client(ctx, result)

    def capabilities(self) -> dict[str, Any] | None:
        """The upstream's declared capabilities, as they were on the wire."""
        found = getattr(self.client, "server_capabilities", None) if self.client else None
        if found is None:
            return None
        dumped: dict[str, Any] = found.model_dump(by_alias=True, mode="json", exclude_none=True)
        return dumped

    # -- the side the upstream talks to ----------------------------------------------------------
    def client_callbacks(self) -> dict[str, Any]:
        """The upstream client's callbacks: every server request and notification relayed."""
        return {"sampling_callback": self._sampling, "elicitation_callback": self._elicitation,
                "list_roots_callback": self._roots, "message_handler": self._notification}

    def _outbound(self, *, scoped: bool = True) -> Any:
        """Where a message to the client goes: the stream of its request in flight, else the
        connection's own stream."""
        if scoped and self._active:
            return self._active[-1].session._request_outbound
        session = self._active[-1].session if self._active else self._last
        if session is None:
            return None
        return session._connection.outbound

    async def _ask(self, method: str, params: Any) -> dict[str, Any]:
        from mcp.shared.exceptions import MCPError
        from mcp_types import INTERNAL_ERROR

        outbound = self._outbound()
        if outbound is None:
            raise MCPError(INTERNAL_ERROR, f"no client connected to relay {method} to")
        raw = params.model_dump(by_alias=True, mode="json", exclude_none=True) if params else None
        answer: dict[str, Any] = await outbound.send_raw_request(method, raw, None)
        return answer

    async def _sampling(self, context: Any, params: Any) -> Any:
        import mcp_types as types
        from mcp.shared.exceptions import MCPError

        try:
            raw = await self._ask("sampling/createMessage", params)
        except MCPError as exc:
            return exc.error
        if isinstance(raw.get("content"), list):
            return types.CreateMessageResultWithTools.model_validate(raw, by_name=False)
        return types.CreateMessageResult.model_validate(raw, by_name=False)

    async def _elicitation(self, context: Any, params: Any) -> Any:
        import mcp_types as types
        from mcp.shared.exceptions import MCPError

        try:
            raw = await self._ask("elicitation/create", params)
        except MCPError as exc:
            return exc.error
        return types.ElicitResult.model_validate(raw, by_name=False)

    async def _roots(self, context: Any) -> Any:
        import mcp_types as types
        from mcp.shared.exceptions import MCPError

        try:
            raw = await self._ask("roots/list", None)
        except MCPError as exc:
            return exc.error
        return types.ListRootsResult.model_validate(raw, by_name=False)

    async def _notification(self, message: Any) -> None:
        if isinstance(message, Exception):
            return
        data = message.model_dump(by_alias=True, mode="json", exclude_none=True)
        method, params = data.get("method"), data.get("params")
        if not isinstance(method, str):
            return
        scoped = method in ("notifications/progress", "notifications/message")
        outbound = self._outbound(scoped=scoped)
        if outbound is not None:
            await outbound.notify(method, params)
