"""Recovery conditions: prompt-only conditions and middleware wrapping tool execution (SPEC §6.2).

A condition is selected by name (``--condition``); :func:`build_condition` returns the caller the
agent's calls go through. Prompt conditions return the transport unchanged (they change only what
a model-backed agent is told); middleware wraps it, one small module per job:

- :mod:`~limbo_plugin.conditions.retry`: ``sdk_retry`` and ``rules`` (transparent retries);
- :mod:`~limbo_plugin.conditions.vbr`: ``vbr`` (verify before an identical re-issue);
- :mod:`~limbo_plugin.conditions.wait`: ``wait_<Δ>`` (vbr with the read-back deferred);
- :mod:`~limbo_plugin.conditions.keys` and :mod:`~limbo_plugin.conditions.annotate`: guard
  components, assembled with vbr by :mod:`~limbo_plugin.conditions.guard` (``guard``,
  ``guard-no-<component>``);
- :mod:`~limbo_plugin.conditions.oracles`: ``state_oracle`` and ``outcome_oracle``.

Middleware reads only the tool contracts and the clock (:class:`HarnessEnv`); the two oracles
alone are handed the world's ground truth.
"""

from __future__ import annotations

from limbo_plugin.conditions.base import HarnessEnv, Middleware
from limbo_plugin.conditions.registry import CONDITION_NAMES, build_condition, validate_condition

__all__ = ["CONDITION_NAMES", "HarnessEnv", "Middleware", "build_condition",
           "validate_condition"]
