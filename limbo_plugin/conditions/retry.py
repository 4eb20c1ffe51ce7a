"""Transparent client-side retries: ``sdk_retry`` and ``rules`` (SPEC §6.2).

``sdk_retry`` mimics common HTTP client defaults: a timeout, any 5xx or a 429 is retried up to
three times with exponential backoff of 1, 2 and 4 simulated seconds, and the agent sees only the
last answer. Because a timeout or a 500 may hide a committed write, every lost acknowledgement of
a key-less non-idempotent write becomes a duplicate before the agent sees anything — which is
what the condition exists to measure.

``rules`` retries only what the service says did not execute and may be retried: 429 and 503.
It waits the longer of the backoff step and the server's ``retry_after_s``, because a rule-based
policy that trusts the status code would trust the retry hint that comes with it; ``sdk_retry``
keeps the plain 1/2/4 schedule of the clients it mimics.
"""

from __future__ import annotations

from collections.abc import Callable

from limbo_plugin.conditions.base import Condition, HarnessEnv, Middleware
from limbo_plugin.toolapi import NO_ANSWER_KINDS, ToolCall, ToolCaller, ToolResult

BACKOFF_S = (1.0, 2.0, 4.0)


def sdk_retryable(result: ToolResult) -> bool:
    """No answer (a timeout, a closed connection), any 5xx, or a 429."""
    if not result.is_error:
        return False
    status = result.status
    return result.error_type in NO_ANSWER_KINDS or (status is not None and (status >= 500
                                                                      or status == 429))


def rules_retryable(result: ToolResult) -> bool:
    """Only 429 and 503: the statuses that say the request was refused, not executed."""
    return result.is_error and result.status in (429, 503)


class RetryMiddleware(Middleware):
    """Retry a tool call the agent made when its answer is ``retryable``, invisibly to it."""

    def __init__(self, inner: ToolCaller, env: HarnessEnv, *,
                 retryable: Callable[[ToolResult], bool],
                 backoff_s: tuple[float, ...] = BACKOFF_S,
                 honour_retry_after: bool = False) -> None:
        super().__init__(inner, env)
        self.retryable = retryable
        self.backoff_s = backoff_s
        self.honour_retry_after = honour_retry_after

    def call(self, call: ToolCall) -> ToolResult:
        result = self.inner.call(call)
        if call.origin != "agent" or self.definition(call) is None:
            return result  # general tools (wait, escalate, finish) are not network calls
        for delay in self.backoff_s:
            if not self.retryable(result):
                break
            hint = result.retry_after_s if self.honour_retry_after else None
            self.pause(max(delay, hint or 0.0))
            result = self.resend(call)
        return result


def sdk_retry(inner: ToolCaller, env: HarnessEnv) -> RetryMiddleware:
    return RetryMiddleware(inner, env, retryable=sdk_retryable)


def rules(inner: ToolCaller, env: HarnessEnv) -> RetryMiddleware:
    return RetryMiddleware(inner, env, retryable=rules_retryable, honour_retry_after=True)


CONDITIONS = (
    Condition("sdk_retry", "transparent retries of timeouts, 5xx and 429, as SDKs do",
              wraps=sdk_retry),
    Condition("rules", "transparent retries of explicit refusals (429, 503) only, after their "
              "retry hint", wraps=rules),
)
