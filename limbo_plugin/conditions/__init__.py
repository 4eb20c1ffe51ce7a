"""Recovery conditions: prompt-only conditions and middleware wrapping tool execution.

A condition is selected by name (``--condition``); :func:`build_condition` returns the caller the
agent's calls go through. Prompt conditions return the transport unchanged (they change only what
a model-backed agent is told); middleware wraps it. Middleware reads only the tool contracts;
the two oracles alone are handed the world's ground truth.
"""

from __future__ import annotations

from limbo_plugin.conditions.base import HarnessEnv
from limbo_plugin.conditions.registry import CONDITION_NAMES, build_condition, validate_condition

__all__ = ["CONDITION_NAMES", "HarnessEnv", "build_condition", "validate_condition"]
