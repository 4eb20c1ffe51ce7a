"""Every started episode leaves exactly one record, the record holds what the world saw, and
nothing an agent does reaches another episode.

The agents here are hostile or careless in the ways seen in the wild: a NaN cost from a price
lookup, arguments edited after the call, a schema cleaner stripping ``pattern`` and
``maxLength`` in place, ``task.required.clear()``, an uncaught ``RuntimeError``, an error
message holding a lone surrogate.
"""

from __future__ import annotations

import math
from typing import Any

import pytest

from limbo_plugin.agents import AgentSession, InfrastructureError
from limbo_plugin.episode import run_episode
from limbo_plugin.records import EpisodeKey, EpisodeRecord, record_line
from limbo_plugin.runconfig import RunConfig
from limbo_plugin.spec.registry import SpecRegistry
from limbo_plugin.store.view import EpisodeView

KEY = EpisodeKey(template="invoice_batch", instance=0, focal_write="charge_1",
                 fault_mode="timeout_post")
BLIND = RunConfig(agent="scripted:blind_retry")


def finish(session: AgentSession, summary: str = "done") -> None:
    session.call("finish", {"status": "completed", "summary": summary,
                            "uncertain_operations": []})


class Scripted:
    """An agent made of one function (a test's hostile behaviour)."""

    name = "test"

    def __init__(self, act: Any) -> None:
        self.act = act

    def run(self, session: AgentSession) -> None:
        self.act(session)


def line_of(record: EpisodeRecord) -> str:
    cleaned, line = record_line(record)
    assert EpisodeRecord.model_validate_json(line).model_dump() == cleaned.model_dump()
    EpisodeView.from_json(line)  # what the controller reads
    return line


@pytest.mark.parametrize("cost", [math.nan, math.inf, -math.inf, -1.0])
def test_a_cost_that_is_not_a_number_is_unknown_and_the_record_reads_back(
        registry: SpecRegistry, cost: float) -> None:
    def act(session: AgentSession) -> None:
        session.usage.add(10, 2, 0.5)
        session.usage.add(1, 1, cost)
        finish(session)

    record = run_episode(KEY, registry=registry, agent=Scripted(act))
    assert record.usage is not None
    assert (record.usage.cost_usd, record.usage.unpriced_calls, record.usage.model_calls) == (
        0.5, 1, 2)
    line_of(record)


def test_a_cost_set_directly_to_nan_is_unknown_too(registry: SpecRegistry) -> None:
    def act(session: AgentSession) -> None:
        session.usage.add(1, 1, 0.1)
        session.usage.cost_usd = math.nan
        finish(session)

    record = run_episode(KEY, registry=registry, agent=Scripted(act))
    assert record.usage is not None and record.usage.cost_usd == 0.0
    assert record.usage.unpriced_calls == 1
    line_of(record)


def test_arguments_edited_after_the_call_reach_neither_world_nor_record(
        registry: SpecRegistry) -> None:
    def act(session: AgentSession) -> None:
        args: dict[str, Any] = {"seconds": 5}
        session.call("wait", args)
        args["seconds"] = 999999
        args["x"] = object()
        finish(session)

    record = run_episode(KEY, registry=registry, agent=Scripted(act))
    assert record.trace[0].arguments == {"seconds": 5}
    assert record.sim_seconds < 1000
    line_of(record)


def test_an_agent_that_edits_its_schemas_and_task_leaves_later_episodes_alone(
        registry: SpecRegistry) -> None:
    before = run_episode(KEY, BLIND, registry=registry)

    def vandal(session: AgentSession) -> None:
        for tool in session.tools:
            for prop in tool.input_schema.get("properties", {}).values():
                prop.pop("pattern", None)
                prop.pop("maxLength", None)
            tool.openai_tool()["function"]["parameters"].clear()
        session.task.required.clear()
        session.task.params.clear()
        # What the world accepts did not change: a currency that is not three letters
        answer = session.call("billing_create_charge", {
            "customer": "cus_x", "amount_cents": 100, "currency": "EURO", "description": "x"})
        assert answer.is_error
        finish(session)

    run_episode(KEY, registry=registry, agent=Scripted(vandal))
    after = run_episode(KEY, BLIND, registry=registry)
    assert after.comparable() == before.comparable()
    assert after.duplicates == before.duplicates > 0
    charge = registry.catalog().get("billing_create_charge")
    assert charge is not None
    schema = charge.input_schema
    assert schema["properties"]["currency"]["pattern"] == "^[a-z]{3}$"


@pytest.mark.parametrize("error", [RuntimeError("boom"), KeyError("k"), SystemExit(3),
                                   ZeroDivisionError()])
def test_an_agent_that_raises_leaves_one_record_with_its_error(
        registry: SpecRegistry, error: BaseException) -> None:
    def act(session: AgentSession) -> None:
        session.call("wait", {"seconds": 1})
        raise error

    record = run_episode(KEY, registry=registry, agent=Scripted(act))
    assert record.error is not None
    assert record.error.startswith(f"agent error: {type(error).__name__}")
    assert len(record.trace) == 1
    line_of(record)


def test_a_lone_surrogate_in_an_error_or_summary_is_escaped_not_lost(
        registry: SpecRegistry) -> None:
    def broken(session: AgentSession) -> None:
        raise InfrastructureError("gateway said \udcff\ud800 and hung up")

    record = run_episode(KEY, registry=registry, agent=Scripted(broken))
    assert record.error is not None and "\\udcff" in record.error
    line_of(record)

    def odd_summary(session: AgentSession) -> None:
        finish(session, summary="all done \udcfe")

    record = run_episode(KEY, registry=registry, agent=Scripted(odd_summary))
    assert record.trace[-1].is_error  # the world refuses text that is not Unicode
    line_of(record)
    # and should any reach a record, it is escaped
    record = record.model_copy(update={"summary": "all done \udcfe"})
    cleaned, line = record_line(record)
    assert cleaned.summary == "all done \\udcfe"
    assert EpisodeRecord.model_validate_json(line).summary == "all done \\udcfe"
