"""Recovery conditions: prompt-only conditions and middleware wrapping tool execution (SPEC §6.2).

A condition is selected by name (``--condition``). Each module declares the conditions it
provides in a ``CONDITIONS`` tuple (:class:`~limbo_plugin.conditions.base.Condition`: its name,
what it wraps around the transport, whether it reads ground truth, its prompt changes), and
:func:`~limbo_plugin.conditions.registry.find_condition` finds them:

- :mod:`~limbo_plugin.conditions.prompts`: ``vanilla``, ``aware``, ``reflect`` (prompt only);
- :mod:`~limbo_plugin.conditions.wording`: ``paraphrase_1`` … ``paraphrase_3``, the system
  prompt reworded (prompt only; E4);
- :mod:`~limbo_plugin.conditions.retry`: ``sdk_retry`` and ``rules`` (transparent retries);
- :mod:`~limbo_plugin.conditions.vbr`: ``vbr`` (verify before an identical re-issue);
- :mod:`~limbo_plugin.conditions.wait`: ``wait_<Δ>`` (vbr with the read-back deferred);
- :mod:`~limbo_plugin.conditions.guard`: ``guard`` and ``guard-no-<component>``, assembled from
  vbr, :mod:`~limbo_plugin.conditions.keys` and :mod:`~limbo_plugin.conditions.annotate`;
- :mod:`~limbo_plugin.conditions.oracles`: ``state_oracle`` and ``outcome_oracle``.

Middleware reads only the tool contracts and the clock (:class:`HarnessEnv`); the two oracles
alone are handed the world's ground truth.
"""

from __future__ import annotations

from limbo_plugin.conditions.base import (
    Condition,
    ConditionPattern,
    HarnessEnv,
    Middleware,
    PromptChanges,
)
from limbo_plugin.conditions.registry import all_conditions, condition_forms, find_condition

__all__ = ["Condition", "ConditionPattern", "HarnessEnv", "Middleware", "PromptChanges",
           "all_conditions", "condition_forms", "find_condition"]
