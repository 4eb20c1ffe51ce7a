"""Everything a package needs to extend Limbo, in one public, typed module.

An extension module (listed in the ``limbo`` entry-point group of its distribution, see
:mod:`limbo_plugin.extensions`) imports from here and nowhere else in Limbo::

    from limbo_plugin.extend import Condition, Middleware, ToolCall, ToolResult

    class Noted(Middleware):
        def call(self, call: ToolCall) -> ToolResult: ...

    CONDITIONS = (Condition("noted", "a note on every tool error", wraps=Noted),)

The names below are the extension surface: the modules they come from may move, these names
stay. Limbo ships ``py.typed``, so an extension is type-checked against them.

* a **condition**: :class:`Condition`, :class:`ConditionPattern`, :class:`PromptChanges`, and
  :class:`Middleware` over :class:`ToolCall` → :class:`ToolResult`;
* a **service**: a :class:`Service` subclass with :func:`handles` (and :func:`validates`)
  methods taking :data:`Args` and an :class:`Execution`, answering a :data:`Body`, its records
  in :class:`VersionedTable`\\ s;
* a **way of executing a fault**: :class:`Executor` over a :class:`Firing`, and a
  :class:`Fate` for each state it leaves a request in that is not Limbo's;
* an **agent kind**: :class:`AgentKind` building an :class:`Agent` that acts through an
  :class:`AgentSession`, configured by :class:`AgentOptions`;
* a **report table**: a function from :class:`EpisodeView` rows (and repeat runs) to a
  :class:`Table` of :class:`Column`\\ s or a :class:`Skipped` (together :data:`Result`), rates in
  :class:`RateCell`\\ s (:func:`rate` with an :class:`IccBook` and a :class:`Measure`), rows
  selected by :mod:`facets <limbo_plugin.report.facets>` labels (:func:`ordered_families`,
  :func:`committed_fault`, …);
* a one-line error for the user: :class:`UsageError`.
"""

from __future__ import annotations

from limbo_plugin.agents.base import Agent, AgentSession
from limbo_plugin.agents.options import AgentOptions
from limbo_plugin.agents.registry import AgentKind, AgentPlan
from limbo_plugin.conditions.base import Condition, ConditionPattern, Middleware, PromptChanges
from limbo_plugin.errors import UsageError
from limbo_plugin.faults import Executor, Firing
from limbo_plugin.report.facets import (
    ambiguous,
    committed_fault,
    contract_class,
    fault_class,
    ordered_families,
    outcome_of,
    unmitigated,
)
from limbo_plugin.report.icc import IccBook, Measure
from limbo_plugin.report.tables.base import Column, RateCell, Result, Skipped, Table, rate
from limbo_plugin.store.view import EpisodeView
from limbo_plugin.toolapi import ToolCall, ToolResult
from limbo_plugin.world.fates import Fate
from limbo_plugin.world.services.base import Args, Body, Execution, Service, handles, validates
from limbo_plugin.world.store import VersionedTable

__all__ = [
    "Agent", "AgentKind", "AgentOptions", "AgentPlan", "AgentSession", "Args", "Body", "Column",
    "Condition", "ConditionPattern", "EpisodeView", "Execution", "Executor", "Fate", "Firing",
    "IccBook", "Measure", "Middleware", "PromptChanges", "RateCell", "Result", "Service",
    "Skipped", "Table", "ToolCall", "ToolResult", "UsageError", "VersionedTable", "ambiguous",
    "committed_fault", "contract_class", "fault_class", "handles", "ordered_families",
    "outcome_of", "rate", "unmitigated", "validates",
]
