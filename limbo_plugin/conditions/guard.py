"""The guard: verify-before-retry plus four contract-driven components (SPEC §6.2).

- ``key``: attach idempotency keys where the contract accepts them and pin one per intent
  (:mod:`~limbo_plugin.conditions.keys`);
- ``consistency``: verify only once the read path's documented lag has passed since the
  unknown request was sent, so an eventually consistent read-back is not trusted while stale;
- ``block``: refuse an unverifiable repeat of a non-idempotent write and ask to escalate;
- ``annotate``: tell the agent when an outcome is unknown, and why a re-issue was not sent
  (:mod:`~limbo_plugin.conditions.annotate`).

``guard-no-<component>`` switches one off (E4 ablations). The layers, outermost first:
annotate → key → verify-before-retry → transport. Keys are attached above verification so that
the verifier sees what is actually sent, and can let a re-issue carrying the pinned key through
unverified. The oracles reuse this assembly with a ground-truth verifier.
"""

from __future__ import annotations

from collections.abc import Iterable

from limbo_plugin.conditions.annotate import Annotate
from limbo_plugin.conditions.base import Condition, HarnessEnv
from limbo_plugin.conditions.keys import KeyPinning
from limbo_plugin.conditions.vbr import ReadBackVerifier, Verifier, VerifyBeforeRetry
from limbo_plugin.toolapi import ToolCaller

GUARD_COMPONENTS = ("key", "consistency", "block", "annotate")


def build_guard(inner: ToolCaller, env: HarnessEnv, *, without: Iterable[str] = (),
                verifier: Verifier | None = None) -> ToolCaller:
    """The guard around ``inner``, minus the components in ``without``."""
    off = set(without)
    unknown = off - set(GUARD_COMPONENTS)
    if unknown:
        raise ValueError(f"unknown guard components: {', '.join(sorted(unknown))}; "
                         f"valid: {', '.join(GUARD_COMPONENTS)}")
    if verifier is None:
        verifier = ReadBackVerifier(env, include_lag="consistency" not in off)
    caller: ToolCaller = VerifyBeforeRetry(inner, env, verifier, block="block" not in off,
                                           explain="annotate" not in off)
    if "key" not in off:
        caller = KeyPinning(caller, env)
    if "annotate" not in off:
        caller = Annotate(caller, env)
    return caller


def _ablation(component: str) -> Condition:
    def wraps(inner: ToolCaller, env: HarnessEnv) -> ToolCaller:
        return build_guard(inner, env, without=(component,))

    return Condition(f"guard-no-{component}", f"the guard without its {component} component",
                     wraps=wraps)


def _full_guard(inner: ToolCaller, env: HarnessEnv) -> ToolCaller:
    return build_guard(inner, env)


CONDITIONS = (
    Condition("guard", "verify-before-retry with keys, consistency waits, blocking and notes",
              wraps=_full_guard),
    *(_ablation(component) for component in GUARD_COMPONENTS),
)
