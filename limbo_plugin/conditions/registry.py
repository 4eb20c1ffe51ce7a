"""The names of every condition and how to build each one around a transport."""

from __future__ import annotations

import re

from limbo_plugin.conditions.base import HarnessEnv
from limbo_plugin.errors import UsageError
from limbo_plugin.toolapi import ToolCaller

PROMPT_CONDITIONS = ("vanilla", "aware", "reflect")
CONDITION_NAMES: tuple[str, ...] = PROMPT_CONDITIONS
WAIT_PATTERN = re.compile(r"^wait_(\d+)$")


def validate_condition(name: str) -> None:
    if name in CONDITION_NAMES or WAIT_PATTERN.match(name):
        return
    raise UsageError(f"unknown condition {name!r}; valid: {', '.join(CONDITION_NAMES)}, "
                     "wait_<seconds>")


def needs_ground_truth(name: str) -> bool:
    return name in ("state_oracle", "outcome_oracle")


def build_condition(name: str, transport: ToolCaller, env: HarnessEnv) -> ToolCaller:
    validate_condition(name)
    if name in PROMPT_CONDITIONS:
        return transport
    raise UsageError(f"condition {name!r} is not available")
