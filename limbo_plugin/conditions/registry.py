"""The names of every condition and how to build each one around a transport (SPEC §6.2).

Prompt conditions (``vanilla``, ``aware``, ``reflect``) change only what a model-backed agent is
told, so at the transport level they are the transport itself. Every other condition is
middleware: a :class:`~limbo_plugin.toolapi.ToolCaller` wrapping the one below it.
"""

from __future__ import annotations

from collections.abc import Callable

from limbo_plugin.conditions.base import HarnessEnv
from limbo_plugin.conditions.guard import GUARD_ABLATIONS, ablated_component, build_guard
from limbo_plugin.conditions.oracles import outcome_oracle, state_oracle
from limbo_plugin.conditions.retry import rules, sdk_retry
from limbo_plugin.conditions.vbr import vbr
from limbo_plugin.conditions.wait import WAIT_PATTERN, wait_bound, wait_then_verify
from limbo_plugin.errors import UsageError
from limbo_plugin.toolapi import ToolCaller

PROMPT_CONDITIONS = ("vanilla", "aware", "reflect")
MIDDLEWARE_CONDITIONS = ("sdk_retry", "rules", "vbr", "guard", *GUARD_ABLATIONS)
ORACLE_CONDITIONS = ("state_oracle", "outcome_oracle")
CONDITION_NAMES: tuple[str, ...] = PROMPT_CONDITIONS + MIDDLEWARE_CONDITIONS + ORACLE_CONDITIONS
"""Every fixed condition name; ``wait_<Δ>`` (any whole number of seconds) comes on top."""

__all__ = ["CONDITION_NAMES", "MIDDLEWARE_CONDITIONS", "ORACLE_CONDITIONS",
           "PROMPT_CONDITIONS", "WAIT_PATTERN", "build_condition", "is_prompt_condition",
           "needs_ground_truth", "validate_condition"]

Builder = Callable[[ToolCaller, HarnessEnv], ToolCaller]

_BUILDERS: dict[str, Builder] = {
    "sdk_retry": sdk_retry,
    "rules": rules,
    "vbr": vbr,
    "guard": lambda inner, env: build_guard(inner, env),
    "state_oracle": state_oracle,
    "outcome_oracle": outcome_oracle,
}


def validate_condition(name: str) -> None:
    """Raise :class:`UsageError` naming every valid condition when ``name`` is not one."""
    if name in CONDITION_NAMES or (isinstance(name, str) and wait_bound(name) is not None):
        return
    raise UsageError(f"unknown condition {name!r}; valid: {', '.join(CONDITION_NAMES)}, "
                     "or wait_<seconds> (e.g. wait_90, wait_3600)")


def is_prompt_condition(name: str) -> bool:
    return name in PROMPT_CONDITIONS


def needs_ground_truth(name: str) -> bool:
    """Whether the condition is a reference oracle, the only kind handed the world."""
    return name in ORACLE_CONDITIONS


def build_condition(name: str, transport: ToolCaller, env: HarnessEnv) -> ToolCaller:
    """The caller the agent's calls go through under condition ``name``.

    Middleware built here never receives ground truth unless it is an oracle: ``env`` carries
    the contracts and the clock, and ``env.ground_truth`` is read by the oracles alone.
    """
    validate_condition(name)
    if name in PROMPT_CONDITIONS:
        return transport
    bound = wait_bound(name)
    if bound is not None:
        return wait_then_verify(transport, env, float(bound))
    component = ablated_component(name)
    if component is not None:
        return build_guard(transport, env, without=(component,))
    return _BUILDERS[name](transport, env)
