"""Run one episode end to end: build the world, arm the fault, run the agent, grade, record.

An episode is ``agent ∘ conditions ∘ fault transport ∘ world``. The world depends only on the
:class:`~limbo_plugin.records.EpisodeKey`; everything else comes from the
:class:`~limbo_plugin.records.RunConfig`.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from limbo_plugin.agents import (
    Agent,
    AgentOptions,
    AgentSession,
    EpisodeOver,
    InfrastructureError,
    make_agent,
)
from limbo_plugin.agents.base import HarnessTracer, TraceLog
from limbo_plugin.agents.deadline import EpisodeTimeout, wall_clock_limit
from limbo_plugin.conditions import HarnessEnv, find_condition
from limbo_plugin.errors import UsageError
from limbo_plugin.faults import FaultPlan, FaultTransport, expected_failure
from limbo_plugin.grading import code_behaviour, explicit_refusal, grade
from limbo_plugin.records import BASELINE_FOCAL, EpisodeKey, EpisodeRecord, RunContext
from limbo_plugin.runconfig import RunConfig
from limbo_plugin.scrubbing import scrub
from limbo_plugin.spec.registry import SpecRegistry
from limbo_plugin.tasks import TaskInstance
from limbo_plugin.world.seeds import world_seed
from limbo_plugin.world.world import World


def run_episode(key: EpisodeKey, config: RunConfig | None = None, *, registry: SpecRegistry,
                agent: Agent | None = None, agent_options: AgentOptions | None = None,
                time_limit_s: float | None = None,
                on_abandon: Callable[[EpisodeRecord], None] | None = None,
                context: RunContext | None = None) -> EpisodeRecord:
    """Run the episode ``key`` under ``config`` on the specs of ``registry``; return its record.

    ``context`` (the run id, experiment, arm and repeat) goes into the record as it is built:
    the record returned, or handed to ``on_abandon``, is complete.

    ``config`` is a validated :class:`RunConfig`; its names are looked up, not checked again.
    ``time_limit_s`` bounds the agent's wall-clock time (:func:`wall_clock_limit`); running
    over it is an infrastructure error, like a provider that stays down. An agent that will
    not stop is given up: ``on_abandon`` receives its record, then the process ends.
    """
    config = config or RunConfig()
    context = context or RunContext()
    task = registry.template(key.template).instantiate(key.instance)
    mode = registry.fault_mode(key.fault_mode)
    catalog = registry.catalog(config.contract, config.docs)
    seed = world_seed(key.template, key.instance, key.focal_write, key.fault_mode)

    world = World(catalog, task.services, base_seed=task.base_seed,
                  seed_records=task.seed_records, operator=config.operator)
    focal = None
    if mode.name != "none":
        focal = task.focal(key.focal_write)
    elif key.focal_write != BASELINE_FOCAL:
        raise UsageError(f"a fault-free episode uses focal write {BASELINE_FOCAL!r}")
    plan = FaultPlan(mode=mode, trigger=focal.trigger(), world_seed=seed) if focal else None
    transport = FaultTransport(world, plan)
    trace = TraceLog()
    tracer = HarnessTracer(transport, world, trace)
    condition = find_condition(config.condition)
    env = HarnessEnv(tools=dict(world.tools), world=world,
                     ground_truth=world if condition.reads_ground_truth else None)
    caller = condition.build(tracer, env)

    session = AgentSession(
        task=task, instruction=task.instruction(config.instruction),
        tools=list(world.tools.values()), caller=caller, world=world, trace=trace,
        prompt=condition.prompt, fault_fired=lambda: transport.fired, episode_id=key.id,
    )
    agent = agent or make_agent(config.agent, agent_options)

    def record(error: str | None, sim_seconds: float) -> EpisodeRecord:
        final = world.final
        result = grade(task, world.ledger.effects, final.status if final else None,
                       seeded_ids=world.seeded_ids)
        if error is not None:  # no grade for a run that could not finish; its counts stay
            result = result.model_copy(update={"ts": None, "eos": None, "overclaim": None})
        entries = trace.ordered()
        focal_def = catalog.get(focal.tool) if focal else None
        harness = [e for e in entries if e.origin == "harness"]
        return EpisodeRecord(
            run_id=context.run_id, experiment=context.experiment, arm=context.arm,
            repeat=context.repeat,
            episode_id=key.id, template=key.template, instance=key.instance,
            focal_write=key.focal_write, fault_mode=key.fault_mode, family=mode.family,
            fault_class=registry.fault_class(mode.family),
            contract=config.contract, docs=config.docs, instruction=config.instruction,
            condition=config.condition, operator=config.operator, agent=config.agent,
            world_seed=seed, base_seed=task.base_seed,
            focal_tool=focal.tool if focal else None,
            focal_idempotency=focal_def.contract.idempotency if focal_def else None,
            focal_verification=focal_def.contract.verification if focal_def else None,
            focal_accepts_key=focal_def.accepts_key if focal_def else None,
            focal_irreversible=focal_def.contract.irreversible if focal_def else None,
            fired=transport.fired, fault=transport.report.model_copy(),
            **dict(iter(result)),  # not dict(result): its failed `keys` lookup costs more
            final_status=final.status if final else None,
            summary=final.summary if final else None,
            uncertain_operations=final.uncertain_operations if final else [],
            behaviour=code_behaviour(entries, session.focal_call_index, catalog,
                                     refused=explicit_refusal(mode.group, mode.hidden_outcome),
                                     required=task.required),
            tool_calls=session.calls, harness_calls=len(harness),
            harness_seconds=_harness_seconds(caller),
            sim_seconds=sim_seconds, escalations=world.escalations,
            expected_failure=expected_failure(mode, focal_def),
            error=None if error is None else scrub(printable(error) or ""),
            usage=session.usage.finite() if session.usage.model_calls else None,
            harness=session.harness,
            trace=entries, ledger=list(world.ledger.effects),
        )

    def give_up() -> None:
        # The agent would not stop (it swallowed every timeout): record it as it stands,
        # from this watchdog thread, before the process ends.
        assert time_limit_s is not None
        error = (f"infrastructure error: the episode exceeded its wall-clock limit of "
                 f"{time_limit_s:g} s and did not stop (it caught the timeout); its process "
                 "was ended (--limbo-episode-timeout)")
        abandoned = record(error, world.clock.now)
        (on_abandon or _report_abandoned)(abandoned)

    error: str | None = None
    pid = os.getpid()
    try:
        with wall_clock_limit(time_limit_s, give_up):
            try:
                agent.run(session)
            finally:
                _leave_if_forked(pid)
    except EpisodeOver:
        pass
    except InfrastructureError as exc:
        error = f"infrastructure error: {exc}"
    except EpisodeTimeout as exc:  # raised by the alarm, or by the watchdog (no seconds)
        error = f"infrastructure error: {EpisodeTimeout(exc.seconds or time_limit_s)}"
    except (Exception, SystemExit) as exc:  # the agent's own bug: still exactly one record
        error = agent_error(exc)
    sim_seconds = world.clock.now
    world.finish_in_flight()
    return record(error, sim_seconds)


def _leave_if_forked(pid: int) -> None:
    """A child an agent forked that returns (or raises) out of the agent is not the episode's
    process: it ends here, at once, rather than carry on the run and write its records twice.
    (Its own children and threads are the agent's; only the process that ran the episode goes
    on.)"""
    if os.getpid() != pid:
        os._exit(0)


def _report_abandoned(record: EpisodeRecord) -> None:
    import sys

    sys.stderr.write(f"limbo: episode {record.test_id}: {record.error}\n")


MAX_ERROR_CHARS = 2000


def agent_error(exc: BaseException) -> str:
    """An exception the agent's code raised, as the record's error: the episode is excluded
    from the rates, like an infrastructure error, and re-run on resume."""
    text = scrub(" ".join(str(exc).split()))  # before the cut, which could halve a key
    if len(text) > MAX_ERROR_CHARS:
        text = text[:MAX_ERROR_CHARS] + "…"
    return f"agent error: {type(exc).__name__}" + (f": {text}" if text else "")


def printable(text: str | None) -> str | None:
    """``text`` as UTF-8 can hold it: a lone surrogate (from a harness's bytes decoded with
    ``surrogateescape``, an agent's exception) written as its escape, not a lost record."""
    if text is None:
        return None
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-8", "backslashreplace").decode("utf-8")
    return text


def _harness_seconds(caller: Any) -> float:
    return float(getattr(caller, "harness_seconds", 0.0))


def build_world(task: TaskInstance, registry: SpecRegistry, *, contract: str = "native",
                docs: str = "default") -> World:
    """A fresh world for ``task`` with no fault (handy in tests and notebooks)."""
    return World(registry.catalog(contract, docs), task.services, base_seed=task.base_seed,
                 seed_records=task.seed_records)
