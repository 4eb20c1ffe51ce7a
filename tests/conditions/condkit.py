"""Shared building blocks of the condition tests: the worlds to sweep, running an episode, and
test-local agents for behaviours no scripted reference policy has.

Worlds are every template × instance 0 × every focal write × the applicable fault modes
(``partial_batch`` only for batch writes), as SPEC §3 generates them. An episode takes a few
milliseconds, so the sweeps stay fast.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from functools import cache
from typing import Any

from limbo_plugin.agents.base import AgentSession
from limbo_plugin.contracts import ToolDefinition
from limbo_plugin.episode import run_episode
from limbo_plugin.readback import unwrap
from limbo_plugin.records import EpisodeKey, EpisodeRecord, RunConfig
from limbo_plugin.spec.registry import get_registry
from limbo_plugin.templating import TemplateError, render
from limbo_plugin.toolapi import ToolResult

FAULT_MODES = (
    "timeout_pre", "timeout_post", "timeout_late", "timeout_late_tail", "http500_pre",
    "http500_post", "partial_batch", "redelivery", "http503", "http429", "outage", "schema_drift",
)
LOST_ACK = ("timeout_post", "http500_post")
LATE = ("timeout_late", "timeout_late_tail")
NON_IDEMPOTENT = ("non_idempotent", "key_optional")


@dataclass(frozen=True)
class World:
    """One world of the sweep, with the focal write's contract under the chosen variant."""

    template: str
    focal: str
    mode: str
    definition: ToolDefinition

    @property
    def key(self) -> EpisodeKey:
        return EpisodeKey(template=self.template, instance=0, focal_write=self.focal,
                          fault_mode=self.mode)

    @property
    def tool(self) -> str:
        return self.definition.name

    @property
    def non_idempotent(self) -> bool:
        """A repeat can duplicate it (key support or not)."""
        return self.definition.contract.idempotency in NON_IDEMPOTENT

    @property
    def verification(self) -> str:
        return self.definition.contract.verification

    def __str__(self) -> str:
        return f"{self.key.id}"


@cache
def worlds(modes: tuple[str, ...] = FAULT_MODES, contract: str = "native") -> tuple[World, ...]:
    registry = get_registry()
    catalog = registry.catalog(contract)
    found = []
    for name in sorted(registry.templates):
        task = registry.template(name).instantiate(0)
        for focal in task.focal_writes:
            definition = catalog.get(focal.tool)
            assert definition is not None
            for mode in modes:
                if mode == "partial_batch" and definition.contract.batch_field is None:
                    continue
                found.append(World(name, focal.id, mode, definition))
    return tuple(found)


def world(template: str, focal: str, mode: str, contract: str = "native") -> World:
    for candidate in worlds(FAULT_MODES, contract):
        if (candidate.template, candidate.focal, candidate.mode) == (template, focal, mode):
            return candidate
    raise KeyError((template, focal, mode))


def run(w: World, condition: str, agent: str = "scripted:blind_retry", *,
        contract: str = "native", agent_obj: Any = None) -> EpisodeRecord:
    config = RunConfig(agent=agent, condition=condition, contract=contract)
    return run_episode(w.key, config, agent=agent_obj)


def agent_calls(record: EpisodeRecord, tool: str) -> list[Any]:
    return [e for e in record.trace if e.origin == "agent" and e.tool == tool]


def focal_calls(record: EpisodeRecord, tool: str) -> list[Any]:
    """The agent's faulted call of ``tool`` (its first error) and every identical later call."""
    calls = agent_calls(record, tool)
    first = next(e for e in calls if e.is_error)
    return [e for e in calls if e.index >= first.index and e.arguments == first.arguments]


def harness_calls(record: EpisodeRecord) -> list[Any]:
    return [e for e in record.trace if e.origin == "harness"]


def failures(records: Iterable[tuple[World, EpisodeRecord]]) -> list[str]:
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


def sweep(ws: Iterable[World], condition: str, agent: str = "scripted:blind_retry", *,
          contract: str = "native") -> Iterator[tuple[World, EpisodeRecord]]:
    for w in ws:
        yield w, run(w, condition, agent, contract=contract)
