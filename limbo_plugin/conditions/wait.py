"""``wait_<Δ>``: verify-before-retry that assumes in-flight requests complete within Δ seconds.

A late commit is invisible to any read-back while it is in flight. If the service documents a
bound Δ on in-flight processing, deferring the read-back until Δ seconds plus the read path's
documented lag after the original request was sent makes verification exact for every delay
δ ≤ Δ (SPEC §6.2, paper §6.3); the price is the wait. Everything else is plain ``vbr``.

"The original request" is read per unknown request: when several identical requests have
unknown outcomes (a lost one, then a re-issue that timed out too), the read-back waits until Δ
plus the lag after *each* was sent, i.e. after the latest. A bound on in-flight time covers a
request only from its own send; reading Δ after the first one could miss a later one still in
flight and let a duplicate through. With one unknown request (every benchmark world) the two
readings coincide. See ``docs/decisions.md``.
"""

from __future__ import annotations

import re

from limbo_plugin.conditions.base import Condition, ConditionPattern, HarnessEnv
from limbo_plugin.conditions.vbr import ReadBackVerifier, VerifyBeforeRetry
from limbo_plugin.errors import UsageError
from limbo_plugin.toolapi import ToolCaller

WAIT_PATTERN = re.compile(r"wait_(0|[1-9][0-9]*)")


def wait_bound(name: str) -> int | None:
    """Δ in seconds for a condition named ``wait_<Δ>``, or ``None`` for any other name."""
    match = WAIT_PATTERN.fullmatch(name)
    return int(match.group(1)) if match else None


def wait_then_verify(inner: ToolCaller, env: HarnessEnv, bound_s: float) -> VerifyBeforeRetry:
    return VerifyBeforeRetry(inner, env, ReadBackVerifier(env, bound_s=bound_s,
                                                          include_lag=True))


MAX_WAIT_S = 30 * 86_400
"""The longest Δ a ``wait_<Δ>`` condition may take: 30 days, the longest simulated duration a
spec may declare; past it the wait is a typo, and its simulated clock would overflow."""


def _wait_condition(name: str) -> Condition | None:
    bound = wait_bound(name)
    if bound is None:
        return None
    if bound > MAX_WAIT_S:
        raise UsageError(f"condition {name[:40]!r}: the wait is at most {MAX_WAIT_S} s (30 "
                         f"days), e.g. wait_90 or wait_3600")

    def wraps(inner: ToolCaller, env: HarnessEnv) -> ToolCaller:
        return wait_then_verify(inner, env, float(bound))

    return Condition(name, f"vbr with the read-back deferred {bound} s past the original",
                     wraps=wraps)


CONDITIONS = (
    ConditionPattern("wait_<seconds>", "vbr assuming in-flight requests complete within the "
                     "given whole number of seconds (e.g. wait_90, wait_3600)",
                     resolve=_wait_condition),
)
