"""A record with an infrastructure error carries no grade, keeps what had committed, and the
summary neither loses a duplicate committed before the error nor asks to re-run what a resumed
run already re-ran."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from limbo_plugin.agents.base import AgentSession
from limbo_plugin.episode import run_episode
from limbo_plugin.records import EpisodeKey, EpisodeRecord
from limbo_plugin.report.aggregate import summarize
from limbo_plugin.report.summary import render_markdown, render_text
from limbo_plugin.runconfig import RunConfig
from limbo_plugin.spec.registry import SpecRegistry
from limbo_plugin.store.view import EpisodeView

KEY = EpisodeKey(template="incident_open", instance=0, focal_write="baseline", fault_mode="none")


def _ticket(session: AgentSession) -> dict[str, str]:
    """The incident ticket the task asks for (its title names the service)."""
    params = session.task.params
    return {"project": "OPS", "title": str(params["title"]), "description": "First report."}


class DuplicateThenHang:
    """Creates the incident ticket twice, then hangs (never finishes)."""

    name = "test:duplicate_then_hang"

    def run(self, session: AgentSession) -> None:
        session.call("tickets_create", _ticket(session))
        session.call("tickets_create", _ticket(session))
        threading.Event().wait(60)  # the wall-clock limit ends this


class DuplicateThenFinish:
    name = "test:duplicate_then_finish"

    def run(self, session: AgentSession) -> None:
        session.call("tickets_create", _ticket(session))
        session.call("tickets_create", _ticket(session))
        session.call("finish", {"status": "completed", "summary": "done"})


def _hung(registry: SpecRegistry) -> EpisodeRecord:
    return run_episode(KEY, RunConfig(), registry=registry, agent=DuplicateThenHang(),
                       time_limit_s=1.0)


def test_an_infrastructure_error_record_carries_no_grade(registry: SpecRegistry) -> None:
    record = _hung(registry)
    assert record.error is not None and "wall-clock limit" in record.error
    assert (record.ts, record.eos, record.overclaim) == (None, None, None)
    assert not record.passed
    line = record.model_dump_json()
    assert '"ts":null' in line and '"eos":null' in line
    assert EpisodeView.from_json(line).eos is None  # the summary's reader takes it


def test_a_duplicate_committed_before_a_hang_is_kept(registry: SpecRegistry) -> None:
    record = _hung(registry)
    assert record.duplicates == 1  # what committed before the timeout is counted
    ticket = next(e for e in record.effects if e.id == "ticket")
    assert (ticket.committed, ticket.standing) == (2, 2)


def _outcome(record: EpisodeRecord) -> EpisodeView:
    return EpisodeView.from_json(record.model_dump_json())


def test_the_summary_shows_a_duplicate_committed_before_an_error(registry: SpecRegistry
                                                                 ) -> None:
    hung = _outcome(_hung(registry))
    summary = summarize([hung], family_order=registry.family_order)
    assert summary.errors == 1 and summary.duplicates_before_error == [hung.episode_id]
    text = "\n".join(render_text(summary))
    assert "had committed a duplicate before their infrastructure error" in text
    assert hung.episode_id in text and hung.episode_id in render_markdown(summary)
    assert summary.to_json()["duplicates_before_error"] == [hung.episode_id]


def test_after_a_successful_resume_the_summary_asks_for_no_re_run(registry: SpecRegistry
                                                                  ) -> None:
    hung = _outcome(_hung(registry))
    rerun = _outcome(run_episode(KEY, RunConfig(), registry=registry,
                                 agent=DuplicateThenFinish()))
    assert hung.identity == rerun.identity
    summary = summarize([hung, rerun], family_order=registry.family_order)
    assert summary.errors == 0 and summary.rerun == 1 and summary.total == 1
    text = "\n".join(render_text(summary))
    assert "--limbo-resume" not in text
    assert "re-run successfully" in text
    # the earlier run's duplicate is still shown, not dropped with the error it came with
    assert summary.duplicates_before_error == [hung.episode_id]


@pytest.mark.parametrize("field", ["ts", "eos", "overclaim"])
def test_a_graded_record_still_has_every_grade(registry: SpecRegistry, field: Any) -> None:
    record = run_episode(KEY, RunConfig(), registry=registry, agent=DuplicateThenFinish())
    assert isinstance(getattr(record, field), bool)
