"""The guard: verify-before-retry plus four contract-driven components (SPEC §6.2).

- ``key``: attach idempotency keys where the contract accepts them and pin one per intent
  (:mod:`~limbo_plugin.conditions.keys`);
- ``consistency``: verify only once the read path's documented lag has passed since the
  unknown request was sent, so an eventually consistent read-back is not trusted while stale;
- ``block``: refuse an unverifiable repeat of a non-idempotent write and ask to escalate;
- ``annotate``: tell the agent when an outcome is unknown and that any identical retry will be
  verified first, as the paper's guard did (§6.5), and why a re-issue was not sent
  (:mod:`~limbo_plugin.conditions.annotate`).

``guard-no-<component>`` switches one off (E4 ablations). ``guard-no-promise`` is a separate
condition, not an ablation: the whole guard, with a note that states the uncertainty and promises
no verification (the paper's §7 recommendation, which the paper did not measure).

The layers, outermost first: annotate → key → verify-before-retry → transport. Keys are
attached above verification so that the verifier sees what is actually sent, and can let a
re-issue carrying the pinned key through unverified. The oracles reuse this assembly with a
ground-truth verifier.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from limbo_plugin.conditions.annotate import Annotate, Note, uncertainty_note, verify_promise_note
from limbo_plugin.conditions.base import Condition, HarnessEnv
from limbo_plugin.conditions.keys import KeyPinning
from limbo_plugin.conditions.vbr import ReadBackVerifier, Verifier, VerifyBeforeRetry
from limbo_plugin.toolapi import ToolCaller

GUARD_COMPONENTS = ("key", "consistency", "block", "annotate")


def build_guard(inner: ToolCaller, env: HarnessEnv, *, without: Iterable[str] = (),
                verifier: Verifier | None = None, note: Note = verify_promise_note,
                vbr: Callable[..., VerifyBeforeRetry] = VerifyBeforeRetry) -> ToolCaller:
    """The guard around ``inner``, minus the components in ``without``; ``note`` is what
    ``annotate`` says on an ambiguous answer (by default the paper's guard's note); ``vbr``
    makes the verify-before-retry layer (a front end in front of a real server words its
    answers for the real world).

    This is the one place the guard is assembled: the conditions below, the oracles and any
    other front end (a proxy in front of a real MCP server) build it here.
    """
    off = set(without)
    unknown = off - set(GUARD_COMPONENTS)
    if unknown:
        raise ValueError(f"unknown guard components: {', '.join(sorted(unknown))}; "
                         f"valid: {', '.join(GUARD_COMPONENTS)}")
    if verifier is None:
        verifier = ReadBackVerifier(env, include_lag="consistency" not in off)
    caller: ToolCaller = vbr(inner, env, verifier, block="block" not in off,
                             explain="annotate" not in off)
    if "key" not in off:
        caller = KeyPinning(caller, env)
    if "annotate" not in off:
        caller = Annotate(caller, env, note=note)
    return caller


def _ablation(component: str) -> Condition:
    def wraps(inner: ToolCaller, env: HarnessEnv) -> ToolCaller:
        return build_guard(inner, env, without=(component,))

    return Condition(f"guard-no-{component}", f"the guard without its {component} component",
                     wraps=wraps)


def _full_guard(inner: ToolCaller, env: HarnessEnv) -> ToolCaller:
    return build_guard(inner, env)


def _guard_without_promise(inner: ToolCaller, env: HarnessEnv) -> ToolCaller:
    return build_guard(inner, env, note=uncertainty_note)


CONDITIONS = (
    Condition("guard", "verify-before-retry with keys, consistency waits, blocking and notes",
              wraps=_full_guard),
    *(_ablation(component) for component in GUARD_COMPONENTS),
    Condition("guard-no-promise", "the guard with a note that states an unknown outcome "
              "without promising verification", wraps=_guard_without_promise),
)
