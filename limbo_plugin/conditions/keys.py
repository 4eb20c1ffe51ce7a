"""The guard's ``key`` component: attach idempotency keys and pin one key per intent.

Wherever the effective contract accepts a key, every write the agent sends carries one: the
agent's own on the first call of an intent, or one the harness derives from the intent. A
re-issue of the same intent (same tool, same intent fields) always carries the pinned key, even
when the agent sent none or regenerated its own (paper §6.3: keys protect only when they are
stable across retries). The service then deduplicates the original, an in-flight copy, a
redelivered copy and every re-issue, which no read-back can do. The pin is per intent, not per
exact request: a re-issue that changes only a non-intent argument (an email's body) is refused by
the service as key reuse if the original took effect, which is the truth — that email went out.

Keys are attached silently. The operator behind ``escalate_to_human`` reports each uncertain
request with the arguments the service received; a key the harness generated is removed from
that report, so the agent recognises its own request there.
"""

from __future__ import annotations

from dataclasses import replace

from limbo_plugin.conditions.base import HarnessEnv, Middleware
from limbo_plugin.toolapi import ToolCall, ToolCaller, ToolResult, normalize_arguments

KEY_PREFIX = "harness-"


class KeyPinning(Middleware):
    """Attach and pin idempotency keys (see the module docstring)."""

    def __init__(self, inner: ToolCaller, env: HarnessEnv) -> None:
        super().__init__(inner, env)
        self.pins: dict[str, str] = {}
        self.generated: set[str] = set()

    def call(self, call: ToolCall) -> ToolResult:
        if call.origin == "agent" and call.name == "escalate_to_human":
            return self._own_requests(self.inner.call(call))
        definition = self.definition(call)
        if (call.origin != "agent" or definition is None or not definition.is_write
                or definition.contract.key_param is None):
            return self.inner.call(call)
        args, _ = normalize_arguments(call.arguments)
        if args is None:
            return self.inner.call(call)
        digest = definition.intent_digest(args)
        agent_key = definition.key_in(args)
        pinned = self.pins.get(digest)
        new_pin = pinned is None
        if pinned is None:
            pinned = agent_key or KEY_PREFIX + digest[:32]
            self.pins[digest] = pinned
            if agent_key is None:
                self.generated.add(pinned)
        sent = call if agent_key == pinned else replace(
            call, arguments={**args, definition.contract.key_param: pinned})
        result = self.inner.call(sent)
        if new_pin and _rejected(result):
            del self.pins[digest]  # a rejected request did nothing; its key protects nothing
        return result

    def _own_requests(self, result: ToolResult) -> ToolResult:
        """The operator's answer with the keys this harness generated taken out again."""
        operations = result.content.get("operations")
        if result.is_error or not isinstance(operations, list) or not self.generated:
            return result
        cleaned = []
        for operation in operations:
            definition = self.env.tools.get(str(operation.get("tool")))
            param = definition.contract.key_param if definition else None
            arguments = operation.get("arguments")
            if (param and isinstance(arguments, dict)
                    and arguments.get(param) in self.generated):
                operation = {**operation,
                             "arguments": {k: v for k, v in arguments.items() if k != param}}
            cleaned.append(operation)
        return ToolResult({**result.content, "operations": cleaned})


def _rejected(result: ToolResult) -> bool:
    status = result.status
    return status is not None and 400 <= status < 500
