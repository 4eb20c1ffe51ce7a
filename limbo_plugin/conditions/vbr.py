"""Verify-before-retry (``vbr``): check whether an unknown-outcome write took effect before
letting an identical re-issue through (SPEC §6.2, after Mansoor et al. 2026).

The middleware remembers every non-idempotent write whose answer was ambiguous (a timeout or a
5xx without a retry hint). When the agent re-issues one (same tool, same intent fields; for a
batch, a shared row), it asks its :class:`Verifier` first:

- present: the re-issue is not sent; the agent is answered with the record that was found, as
  if the write had succeeded (for a batch: the ids of its rows);
- absent: the re-issue is sent;
- some rows of a batch present: only the missing rows are sent, and the answer lists all ids;
- unverifiable (no read-back, or the read-back failed): the re-issue is sent, or, with
  ``block`` (a guard component), refused with a request to escalate, until the agent has
  escalated.

A re-issue that carries the same idempotency key as every unknown predecessor is passed through
unverified: the service deduplicates it, so verifying would only cost time. Idempotent writes are
never intercepted: repeating them cannot duplicate anything.

The verifier decides *what* is known. :class:`ReadBackVerifier` runs the write's declared
read-back from the contract, as the harness (``vbr``, ``wait_<Δ>``, ``guard``); the oracles in
:mod:`limbo_plugin.conditions.oracles` read ground truth instead.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Protocol

from limbo_plugin.conditions.annotate import NOTE_FIELD
from limbo_plugin.conditions.base import Condition, HarnessEnv, Middleware
from limbo_plugin.conditions.intents import (
    PendingWrite,
    UnknownOutcomes,
    describe_error,
    is_non_idempotent_write,
)
from limbo_plugin.contracts import ToolDefinition
from limbo_plugin.readback import queries, unwrap
from limbo_plugin.toolapi import ToolCall, ToolCaller, ToolResult, normalize_arguments
from limbo_plugin.world.clock import iso

SETTLE_S = 0.001
"""How long after a bound a deferred read-back runs. A read at ``t`` on a path with lag ``λ``
sees effects committed strictly before ``t − λ``, so a commit exactly at the bound is seen only
by a read an instant later; 1 ms is the resolution of simulated in-flight delays."""

BLOCKED = "blocked_by_harness"


@dataclass(frozen=True)
class Verdict:
    """What a verifier established about an intent: one entry per read-back query (per row of a
    batch), the found record or ``None``; or why it could not tell."""

    found: tuple[dict[str, Any] | None, ...] = ()
    unverifiable: str | None = None

    @property
    def verified(self) -> bool:
        return self.unverifiable is None

    @property
    def absent(self) -> bool:
        return self.verified and all(hit is None for hit in self.found)

    @property
    def present(self) -> bool:
        return self.verified and all(hit is not None for hit in self.found)


class Verifier(Protocol):
    def verify(self, definition: ToolDefinition, args: dict[str, Any],
               pending: list[PendingWrite], harness: Middleware) -> Verdict:
        """Whether the write ``args`` (a re-issue of ``pending``) has taken effect."""

    def source(self, definition: ToolDefinition) -> str:
        """Where the verdict comes from, for messages to the agent."""


class ReadBackVerifier:
    """Run the write's declared read-back as the harness, from the contract alone.

    ``bound_s`` defers the read until that many seconds after the latest unknown predecessor
    was sent (``wait_<Δ>``: an assumed bound on in-flight requests, which covers each request
    from its own send, so the latest one decides; see :mod:`~limbo_plugin.conditions.wait`);
    ``include_lag`` adds the
    documented visibility lag of the read path (the guard's ``consistency`` component, and part
    of ``wait_<Δ>``). Without either, the read runs at once, as plain ``vbr`` does.
    """

    def __init__(self, env: HarnessEnv, *, bound_s: float = 0.0,
                 include_lag: bool = False) -> None:
        self.env = env
        self.bound_s = bound_s
        self.include_lag = include_lag

    def lag(self, definition: ToolDefinition) -> float:
        """The documented lag of the write's read path (the write's or the read tool's)."""
        contract = definition.contract
        lags = [float(contract.visibility_lag_s)]
        if contract.read_back is not None:
            reader = self.env.tools.get(contract.read_back.tool)
            if reader is not None:
                lags.append(float(reader.contract.visibility_lag_s))
        return max(lags)

    def source(self, definition: ToolDefinition) -> str:
        read_back = definition.contract.read_back
        return f"its read-back {read_back.tool}" if read_back else "no read-back"

    def verify(self, definition: ToolDefinition, args: dict[str, Any],
               pending: list[PendingWrite], harness: Middleware) -> Verdict:
        read_back = definition.contract.read_back
        if read_back is None:
            return Verdict(unverifiable=f"{definition.name} offers no way to read it back")
        delay = self.bound_s + (self.lag(definition) if self.include_lag else 0.0)
        if delay > 0:
            harness.pause_until(max(p.t_sent for p in pending) + delay + SETTLE_S)
        found: list[dict[str, Any] | None] = []
        for query in queries(read_back, args):
            if read_back.match and query.match is None:
                return Verdict(unverifiable=f"its read-back {read_back.tool} cannot be built "
                               "from these arguments")
            result = harness.harness_call(query.tool, query.arguments)
            if result.is_error:
                return Verdict(unverifiable=f"its read-back {query.tool} failed with "
                               f"{describe_error(result)}")
            found.append(query.find(result.content))
        return Verdict(found=tuple(found))


class VerifyBeforeRetry(Middleware):
    """The vbr middleware (see the module docstring); ``block`` and ``explain`` are guard parts.

    ``explain`` adds a note (``harness_note``) to an answer the harness made up from a verification,
    saying that the request was not sent again and why (the guard's ``annotate`` component).
    """

    def __init__(self, inner: ToolCaller, env: HarnessEnv, verifier: Verifier, *,
                 block: bool = False, explain: bool = False) -> None:
        super().__init__(inner, env)
        self.verifier = verifier
        self.block = block
        self.explain = explain
        self.unknown = UnknownOutcomes()
        self.last_escalation: float | None = None

    def call(self, call: ToolCall) -> ToolResult:
        if call.origin != "agent":
            return self.inner.call(call)
        if call.name == "escalate_to_human":  # only an escalation that reached someone counts
            asked = self.env.now
            answer = self.inner.call(call)
            if not answer.is_error:
                self.last_escalation = asked
            return answer
        definition = self.definition(call)
        if definition is None or not is_non_idempotent_write(definition):
            return self.inner.call(call)
        args, _ = normalize_arguments(call.arguments)
        if args is None:
            return self.inner.call(call)
        pending = self.unknown.matching(definition, args)
        if not pending or _deduplicated_by_key(definition, args, pending):
            return self._send(definition, call, args)
        verdict = self.verifier.verify(definition, args, pending, self)
        if (verdict.verified and not verdict.absent and not verdict.present
                and definition.contract.batch_field is None):
            # some rows found, some not, and no batch field to send the missing ones alone:
            # the write cannot be said to have taken effect, nor to be absent
            verdict = Verdict(unverifiable=f"{self.verifier.source(definition)}"
                              " found only some of its rows")
        if not verdict.verified:
            if self.block and not self._escalated_since(pending):
                return self._blocked(definition, pending, verdict)
            return self._send(definition, call, args)
        if verdict.absent:
            return self._send(definition, call, args)
        if definition.contract.batch_field is None:
            self.unknown.resolve(definition, args)
            hit = verdict.found[0]
            assert hit is not None
            return self._answer(definition, dict(hit), pending, "")
        return self._complete_batch(definition, call, args, verdict, pending)

    # -- internals -----------------------------------------------------------------------------
    def _send(self, definition: ToolDefinition, call: ToolCall, args: dict[str, Any]
              ) -> ToolResult:
        t_sent = self.env.now
        result = self.inner.call(call)
        if result.is_ambiguous:
            self.unknown.add(definition, args, t_sent, self.env.now, result)
        elif not result.is_error:
            self.unknown.resolve(definition, args)
        return result

    def _complete_batch(self, definition: ToolDefinition, call: ToolCall, args: dict[str, Any],
                        verdict: Verdict, pending: list[PendingWrite]) -> ToolResult:
        """Send only the rows the verifier did not find; answer with every row's id."""
        batch = definition.contract.batch_field
        assert batch is not None
        rows = list(args[batch])
        missing = [row for row, hit in zip(rows, verdict.found, strict=True) if hit is None]
        new_ids: list[Any] = []
        if missing:
            rest = {**args, batch: missing}
            result = self._send(definition, replace(call, arguments=rest), rest)
            if result.is_error:
                return result
            new_ids = list(unwrap(result.content).get("ids") or [])
        fresh = iter(new_ids)
        ids = [hit.get("id") if hit is not None else next(fresh, None) for hit in verdict.found]
        self.unknown.resolve(definition, args)
        detail = (f" Only the {len(missing)} row(s) it had not inserted were sent now."
                  if missing else "")
        return self._answer(definition, {"inserted": len(ids), "ids": ids}, pending, detail)

    answered_with = "created"
    """What the answer to a write not sent again is, in its note: the world's record it created
    (in front of a real server, what the read-back found)."""

    def _stamp(self, t: float) -> str:
        """A time as the notes show it: the world's simulated clock."""
        return iso(t)

    def _answer(self, definition: ToolDefinition, body: dict[str, Any],
                pending: list[PendingWrite], detail: str) -> ToolResult:
        if self.explain:
            first = pending[0]
            body[NOTE_FIELD] = (
                f"Not sent again: an earlier identical {definition.name} request (sent at "
                f"{self._stamp(first.t_sent)}, answered with {first.error}) did take effect, "
                f"as {self.verifier.source(definition)} shows; this is what it "
                f"{self.answered_with}.{detail}")
        return ToolResult(body)

    def _escalated_since(self, pending: list[PendingWrite]) -> bool:
        latest = max(p.t_answered for p in pending)
        return self.last_escalation is not None and self.last_escalation >= latest

    def _blocked(self, definition: ToolDefinition, pending: list[PendingWrite],
                 verdict: Verdict) -> ToolResult:
        first = pending[0]
        noun = definition.contract.record_noun
        message = (
            f"Not sent: an identical {definition.name} request sent at {iso(first.t_sent)} got "
            f"{first.error}, and whether it took effect cannot be verified "
            f"({verdict.unverifiable}). Sending it again could create a second {noun}. Ask the "
            "on-call operator with escalate_to_human before repeating it, or list the operation "
            "under uncertain_operations when you finish.")
        return ToolResult({"error": {"type": BLOCKED, "message": message}}, is_error=True)


def _deduplicated_by_key(definition: ToolDefinition, args: dict[str, Any],
                         pending: list[PendingWrite]) -> bool:
    key = definition.key_in(args)
    return key is not None and all(definition.key_in(p.args) == key for p in pending)


def vbr(inner: ToolCaller, env: HarnessEnv) -> VerifyBeforeRetry:
    """Plain verify-before-retry: read back at once, send if absent; invisible to the agent."""
    return VerifyBeforeRetry(inner, env, ReadBackVerifier(env))


CONDITIONS = (
    Condition("vbr", "verify before an identical re-issue of an unknown-outcome write",
              wraps=vbr),
)
