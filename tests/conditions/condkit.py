"""Shared building blocks of the condition tests: the worlds to sweep, running an episode, and
test-local agents for behaviours no scripted reference policy has.

The sweep is every template × instance 0 × every focal write × the applicable fault modes,
expanded by the product's own :func:`~limbo_plugin.experiments.iter_worlds` (so a mode that
applies only to batch writes is swept only there, as SPEC §3 generates them). An episode takes a
few milliseconds, so the sweeps stay fast. Every function takes the spec registry the test got
from its ``registry`` fixture.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any, NamedTuple

from limbo_plugin.agents.base import AgentSession
from limbo_plugin.conditions.intents import is_non_idempotent_write
from limbo_plugin.contracts import ToolDefinition
from limbo_plugin.episode import run_episode
from limbo_plugin.experiments import iter_worlds
from limbo_plugin.readback import unwrap
from limbo_plugin.records import BASELINE_FOCAL, EpisodeKey, EpisodeRecord
from limbo_plugin.runconfig import RunConfig
from limbo_plugin.spec.models import FaultModeSpec, Verification
from limbo_plugin.spec.registry import SpecRegistry
from limbo_plugin.templating import TemplateError, render
from limbo_plugin.toolapi import ToolResult


def _modes(test: Callable[[FaultModeSpec], bool]) -> tuple[str, ...]:
    """The fault modes of the project's fault spec whose labels pass ``test``."""
    return tuple(name for name, mode in SpecRegistry.load(SPECS).faults.items() if test(mode))


SPECS = Path(__file__).resolve().parents[2] / "specs"
LOST_ACK = _modes(lambda m: m.hidden_outcome == "committed" and m.group in ("T", "E"))
"""The request committed behind an error answer (timeout_post, http500_post)."""
LATE = _modes(lambda m: m.hidden_outcome == "late")
"""The request is still in flight when the error is answered (the late commits)."""
AMBIGUOUS = _modes(lambda m: m.group in ("T", "E", "S"))
"""Every mode whose answer hides what happened: errors of groups T and E, redelivery's success."""


class Case(NamedTuple):
    """One world of the sweep: its key, the focal write's definition under the chosen contract
    variant, and the registry it comes from; ``str(case)`` is the episode id."""

    key: EpisodeKey
    definition: ToolDefinition
    registry: SpecRegistry

    @property
    def mode(self) -> str:
        return self.key.fault_mode

    @property
    def tool(self) -> str:
        return self.definition.name

    @property
    def non_idempotent(self) -> bool:
        """A repeat can duplicate it (key support or not)."""
        return is_non_idempotent_write(self.definition)

    @property
    def verification(self) -> Verification:
        return self.definition.contract.verification

    def __str__(self) -> str:
        return self.key.id


def faulted_modes(registry: SpecRegistry) -> tuple[str, ...]:
    """Every fault mode of the spec but the fault-free one."""
    return tuple(name for name, mode in registry.faults.items() if mode.family != "none")


def worlds(registry: SpecRegistry, modes: Sequence[str] | None = None,
           contract: str = "native") -> tuple[Case, ...]:
    """The sweep under ``contract``: instance 0 of every template, every focal write, ``modes``
    (default: every faulted mode) wherever they apply."""
    catalog = registry.catalog(contract)
    found = []
    for key in iter_worlds(registry, sorted(registry.templates), [0], "all",
                           list(modes or faulted_modes(registry))):
        if key.focal_write == BASELINE_FOCAL:
            continue
        task = registry.template(key.template).instantiate(key.instance)
        definition = catalog.get(task.focal(key.focal_write).tool)
        assert definition is not None
        found.append(Case(key, definition, registry))
    return tuple(found)


def world(registry: SpecRegistry, template: str, focal: str, mode: str,
          contract: str = "native") -> Case:
    for candidate in worlds(registry, [mode], contract):
        if (candidate.key.template, candidate.key.focal_write) == (template, focal):
            return candidate
    raise KeyError((template, focal, mode))


def run(w: Case, condition: str, agent: str = "scripted:blind_retry", *,
        contract: str = "native", agent_obj: Any = None) -> EpisodeRecord:
    config = RunConfig(agent=agent, condition=condition, contract=contract)
    return run_episode(w.key, config, registry=w.registry, agent=agent_obj)


def agent_calls(record: EpisodeRecord, tool: str) -> list[Any]:
    return [e for e in record.trace if e.origin == "agent" and e.tool == tool]


def focal_calls(record: EpisodeRecord, tool: str) -> list[Any]:
    """The agent's faulted call of ``tool`` (its first error) and every identical later call."""
    calls = agent_calls(record, tool)
    first = next(e for e in calls if e.is_error)
    return [e for e in calls if e.index >= first.index and e.arguments == first.arguments]


def harness_calls(record: EpisodeRecord) -> list[Any]:
    return [e for e in record.trace if e.origin == "harness"]


def failures(records: Iterable[tuple[Case, EpisodeRecord]]) -> list[str]:
    """A readable line per failing world, for assertion messages."""
    return [f"{w}: eos={r.eos} dup={r.duplicates} ts={r.ts} status={r.final_status}"
            for w, r in records]


class PlanAgent:
    """A test-local agent following the template's reference plan.

    It re-issues the identical request on an ambiguous error (like ``blind_retry``) and waits
    out explicit refusals. Two switches give it behaviours the scripted policies lack:
    ``fresh_keys`` sends every keyable write with a new key on each attempt (a model that
    regenerates its key on a retry); ``heed_notes`` stops retrying when the harness says the
    outcome is unknown (a model that takes the guard's annotation seriously).
    """

    def __init__(self, *, fresh_keys: bool = False, heed_notes: bool = False) -> None:
        self.fresh_keys = fresh_keys
        self.heed_notes = heed_notes
        self.name = "test:plan_agent"
        self.sent_keys: list[str] = []

    def run(self, session: AgentSession) -> None:
        results: dict[str, Any] = {}
        uncertain: list[str] = []
        for step in session.task.plan:
            base = {**session.task.params, "steps": results}
            if step.items is None:
                results[step.id] = self._step(session, step.id, step.tool, step.args, base,
                                              uncertain)
            else:
                results[step.id] = [
                    self._step(session, f"{step.id}[{i}]", step.tool, step.args,
                               {**base, "item": item, "index": i}, uncertain)
                    for i, item in enumerate(step.items, 1)
                ]
        session.call("finish", {"status": "partial" if uncertain else "completed",
                                "summary": "Followed the plan.",
                                "uncertain_operations": uncertain})

    def _step(self, session: AgentSession, label: str, tool_template: str,
              args_template: dict[str, Any], ctx: dict[str, Any], uncertain: list[str]) -> Any:
        try:
            tool = str(render(tool_template, ctx))
            args = dict(render(args_template, ctx))
        except (TemplateError, KeyError, TypeError):
            uncertain.append(f"{label}: depends on an earlier step that failed")
            return None
        definition = session.tool(tool)
        assert definition is not None
        for attempt in range(1, 9):
            sent = dict(args)
            param = definition.contract.key_param
            if self.fresh_keys and definition.is_write and param is not None:
                sent[param] = f"{label}-attempt-{attempt}"
                self.sent_keys.append(sent[param])
            result = session.call(tool, sent)
            if not result.is_error:
                return unwrap(result.content)
            if result.is_explicit_refusal:
                session.call("wait", {"seconds": int(result.retry_after_s or 30)})
                continue
            if result.is_ambiguous and not (self.heed_notes and _noted(result)):
                continue
            uncertain.append(f"{label}: {tool} outcome unknown or refused")
            return None
        uncertain.append(f"{label}: {tool} did not succeed")
        return None


def _noted(result: ToolResult) -> bool:
    return "harness_note" in result.content


def sweep(ws: Iterable[Case], condition: str, agent: str = "scripted:blind_retry", *,
          contract: str = "native") -> Iterator[tuple[Case, EpisodeRecord]]:
    for w in ws:
        yield w, run(w, condition, agent, contract=contract)
