"""The guard's ``annotate`` component: tell the agent when the outcome of a write is unknown.

Two notes exist, because what the note says changes what a model does (paper §6.5, §7):

- :func:`verify_promise_note`, the note of the guard the paper evaluated (``guard``): the
  outcome is unknown and the harness will verify before sending any identical retry. In the
  paper this announcement moved a strong model from escalating to verify-then-retry, and since
  the read-back cannot see an in-flight request either, late-commit duplicates rose (50 % →
  71 % for gpt-6-sol); measuring the guard means measuring that note.
- :func:`uncertainty_note`, the note the paper's discussion recommends instead (§7: "stating
  uncertainty without claiming to resolve it"): the same statement that the outcome is unknown,
  and no promise of verification. It is the separate condition ``guard-no-promise``, and it
  differs from ``guard`` by the promise alone — no advice on escalating, no hint that the
  request may still be in flight — so that the contrast of the two measures the promise and
  nothing else.
"""

from __future__ import annotations

from collections.abc import Callable

from limbo_plugin.conditions.base import HarnessEnv, Middleware
from limbo_plugin.contracts import ToolDefinition
from limbo_plugin.toolapi import ToolCall, ToolCaller, ToolResult

NOTE_FIELD = "harness_note"

Note = Callable[[ToolDefinition], str]
"""The text of the note on an ambiguous answer to a write of the given tool."""


PROMISE = ("Before sending any identical retry, the harness will verify whether the earlier "
           "request took effect.")
"""The one sentence ``guard`` says and ``guard-no-promise`` does not."""


def uncertainty_note(definition: ToolDefinition) -> str:
    """States the uncertainty and nothing else: no promise, no advice."""
    return (f"The outcome of this {definition.name} request is unknown: it may or may not have "
            "taken effect.")


def verify_promise_note(definition: ToolDefinition) -> str:
    """The paper's guard: the outcome is unknown, and any identical retry is verified first."""
    return f"{uncertainty_note(definition)} {PROMISE}"


class Annotate(Middleware):
    """Add a ``harness_note`` to every ambiguous answer to one of the agent's writes."""

    def __init__(self, inner: ToolCaller, env: HarnessEnv, *,
                 note: Note = verify_promise_note) -> None:
        super().__init__(inner, env)
        self.note = note

    def call(self, call: ToolCall) -> ToolResult:
        result = self.inner.call(call)
        definition = self.definition(call)
        if (call.origin != "agent" or definition is None or not definition.is_write
                or not result.is_ambiguous):
            return result
        return ToolResult({**result.content, NOTE_FIELD: self.note(definition)}, is_error=True)
