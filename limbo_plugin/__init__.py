"""Limbo: measure duplicate side effects of tool-using agents under ambiguous tool failures.

The package is layered as ``agent ∘ conditions ∘ fault transport ∘ world``; the tool-call API in
:mod:`limbo_plugin.toolapi` is the one seam every layer shares, and
:class:`limbo_plugin.records.EpisodeRecord` is the one record every reporter reads.

The public API, for evaluating your own agent (``--agent python:<module>:<callable>``) or
driving episodes from Python::

    from limbo_plugin import Agent, AgentSession, ToolResult, EpisodeKey, RunConfig, run_episode

- :class:`Agent` — the protocol: a ``name`` and ``run(session)``;
- :class:`AgentSession` — one episode as an agent sees it: ``instruction``, ``tools``
  (:class:`ToolDefinition`: ``name``, ``description``, ``input_schema``, ``openai_tool()``),
  ``call(name, arguments) -> ToolResult``, ``usage`` (add your tokens), ``over``;
- :class:`ToolResult` — ``content`` (JSON), ``is_error``, ``text()`` (what to show a model);
- :class:`EpisodeOver` — raised by ``call`` once the episode has ended (let it propagate);
- :class:`InfrastructureError` — raise it when your agent could not run (provider down): the
  episode is excluded and re-run on ``--limbo-resume``;
- :class:`EpisodeKey`, :class:`RunConfig`, :func:`run_episode` (with a :class:`RunContext`:
  the run id, experiment, arm and repeat its record carries), :class:`EpisodeRecord`,
  :class:`Usage`, :class:`TraceEntry` — run one episode and read its graded record;
- :class:`Sandbox` — a world behind its fault transport, to call tools by hand;
- :class:`SpecRegistry` — the loaded spec tree (``SpecRegistry.load("specs")``), which
  :func:`run_episode` and :class:`Sandbox` take;
- :func:`read_records`, :func:`summarize`, :func:`compare_runs`, :func:`load_gate` and
  :func:`run_gate`, :func:`make_report` — what ``limbo summary``, ``compare``, ``gate`` and
  ``report`` do, on records you hold.

The API reference is built from these docstrings with pdoc
(``python -m pdoc -d restructuredtext limbo_plugin``; ``.ci/run`` builds it, warnings failing).

Names are imported on first use, so ``import limbo_plugin`` stays cheap (the pytest plugin and
``limbo mcp`` import this package at every start).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from limbo_plugin._rewriting import skip_pytest_assertion_rewriting

skip_pytest_assertion_rewriting()  # before any other module of the package is imported

from limbo_plugin._lazy import lazy_exports  # noqa: E402
from limbo_plugin._version import __version__  # noqa: E402

_EXPORTS = {
    "Agent": "limbo_plugin.agents.base",
    "AgentSession": "limbo_plugin.agents.base",
    "EpisodeOver": "limbo_plugin.errors",
    "InfrastructureError": "limbo_plugin.agents.base",
    "ToolCall": "limbo_plugin.toolapi",
    "ToolResult": "limbo_plugin.toolapi",
    "ToolDefinition": "limbo_plugin.contracts",
    "EpisodeKey": "limbo_plugin.records",
    "EpisodeRecord": "limbo_plugin.records",
    "HarnessRun": "limbo_plugin.records",
    "RunConfig": "limbo_plugin.runconfig",
    "RunContext": "limbo_plugin.records",
    "AgentOptions": "limbo_plugin.agents.options",
    "TraceEntry": "limbo_plugin.records",
    "Usage": "limbo_plugin.records",
    "run_episode": "limbo_plugin.episode",
    "Sandbox": "limbo_plugin.sandbox",
    "SpecRegistry": "limbo_plugin.spec.registry",
    "make_report": "limbo_plugin.report.build",
    "summarize": "limbo_plugin.report.aggregate",
    "compare_runs": "limbo_plugin.report.compare",
    "read_records": "limbo_plugin.store.read",
    "load_gate": "limbo_plugin.report.gate",
    "run_gate": "limbo_plugin.report.gate",
}
__all__ = [
    "Agent", "AgentOptions", "AgentSession", "EpisodeKey", "EpisodeOver", "EpisodeRecord",
    "HarnessRun", "InfrastructureError", "RunConfig", "RunContext", "Sandbox", "SpecRegistry",
    "ToolCall", "ToolDefinition", "ToolResult", "TraceEntry", "Usage", "__version__",
    "compare_runs", "load_gate", "make_report", "read_records", "run_episode", "run_gate",
    "summarize",
]

if TYPE_CHECKING:
    from limbo_plugin.agents.base import Agent, AgentSession, InfrastructureError
    from limbo_plugin.agents.options import AgentOptions
    from limbo_plugin.contracts import ToolDefinition
    from limbo_plugin.episode import run_episode
    from limbo_plugin.errors import EpisodeOver
    from limbo_plugin.records import (
        EpisodeKey,
        EpisodeRecord,
        HarnessRun,
        RunContext,
        TraceEntry,
        Usage,
    )
    from limbo_plugin.report.aggregate import summarize
    from limbo_plugin.report.build import make_report
    from limbo_plugin.report.compare import compare_runs
    from limbo_plugin.report.gate import load_gate, run_gate
    from limbo_plugin.runconfig import RunConfig
    from limbo_plugin.sandbox import Sandbox
    from limbo_plugin.spec.registry import SpecRegistry
    from limbo_plugin.store.read import read_records
    from limbo_plugin.toolapi import ToolCall, ToolResult


__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())
