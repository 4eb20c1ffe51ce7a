"""Reference conditions that read ground truth: ``state_oracle`` and ``outcome_oracle``.

Both are the guard with its read-back replaced by a look at the world's request log, so they
differ from the guard only in what verification can know:

- the **state oracle** knows exactly which earlier requests of an intent have committed (no lag,
  no missing read-back), but not a request that is still in flight: it is what a perfect
  read-back would tell, and it is not an upper bound under late commits;
- the **outcome oracle** also sees in-flight requests. A re-issue of a write that will commit is
  suppressed: the oracle waits exactly until the in-flight request commits and answers with what
  it created. It is the upper bound of client-side policies; only redelivery of a write without
  key support is beyond it.

No other condition is handed the world; these two read it only here, and a request's fate only
through its flags (:mod:`limbo_plugin.world.fates`): which requests have executed, and which are
pending and when they land, so a fate an extension declares is read like Limbo's own.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from limbo_plugin.conditions.base import Condition, HarnessEnv, Middleware
from limbo_plugin.conditions.guard import build_guard
from limbo_plugin.conditions.intents import PendingWrite
from limbo_plugin.conditions.vbr import Verdict
from limbo_plugin.contracts import ToolDefinition
from limbo_plugin.errors import UsageError
from limbo_plugin.toolapi import ToolCaller
from limbo_plugin.world.fates import fate_of

if TYPE_CHECKING:
    from limbo_plugin.world.world import Request, World


class GroundTruthVerifier:
    """Verify an intent against the world's request log (see the module docstring)."""

    def __init__(self, world: World, *, sees_in_flight: bool) -> None:
        self.world = world
        self.sees_in_flight = sees_in_flight

    def source(self, definition: ToolDefinition) -> str:
        return "the ground truth"

    def verify(self, definition: ToolDefinition, args: dict[str, Any],
               pending: list[PendingWrite], harness: Middleware) -> Verdict:
        found = self._found(definition, args)
        for _ in range(len(self.world.requests) + 1):
            if not self.sees_in_flight or all(hit is not None for hit in found):
                break
            due = [r.due_at for r in self._requests(definition, args)
                   if fate_of(r.fate).pending and r.due_at is not None]
            if not due:
                break
            harness.pause_until(min(due))
            found = self._found(definition, args)
        return Verdict(found=tuple(found))

    # -- internals -----------------------------------------------------------------------------
    def _requests(self, definition: ToolDefinition, args: dict[str, Any]) -> list[Request]:
        return [r for r in self.world.requests
                if r.tool == definition.name and definition.is_reissue(r.args, args)]

    def _found(self, definition: ToolDefinition, args: dict[str, Any]
               ) -> list[dict[str, Any] | None]:
        requests = self._requests(definition, args)
        batch = definition.contract.batch_field
        if batch is None:
            for request in requests:
                if fate_of(request.fate).executed == "all":
                    return [self._record(request, 0)]
            return [None]
        return [self._row(requests, batch, row) for row in args.get(batch) or []]

    def _row(self, requests: list[Request], batch: str, row: Any) -> dict[str, Any] | None:
        for request in requests:
            executed = fate_of(request.fate).executed
            if executed == "nothing":
                continue
            rows = list(request.args.get(batch) or [])
            if executed == "first_rows":
                rows = rows[: request.rows_done or 0]
            if row in rows:
                return self._record(request, rows.index(row))
        return None

    def _record(self, request: Request, index: int) -> dict[str, Any]:
        if index < len(request.record_ids):
            return dict(self.world.describe_record(request.record_ids[index]))
        return {"id": None}


def _world(env: HarnessEnv, name: str) -> World:
    if env.ground_truth is None:
        raise UsageError(f"condition {name!r} reads ground truth, but none was provided")
    return env.ground_truth


def state_oracle(inner: ToolCaller, env: HarnessEnv) -> ToolCaller:
    verifier = GroundTruthVerifier(_world(env, "state_oracle"), sees_in_flight=False)
    return build_guard(inner, env, verifier=verifier)


def outcome_oracle(inner: ToolCaller, env: HarnessEnv) -> ToolCaller:
    verifier = GroundTruthVerifier(_world(env, "outcome_oracle"), sees_in_flight=True)
    return build_guard(inner, env, verifier=verifier)


CONDITIONS = (
    Condition("state_oracle", "the guard verifying against which requests have committed",
              wraps=state_oracle, reads_ground_truth=True),
    Condition("outcome_oracle", "the guard verifying against ground truth, in-flight requests "
              "included", wraps=outcome_oracle, reads_ground_truth=True),
)
