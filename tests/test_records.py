"""The episode record: typed fault and ledger entries, and JSON that reads back to itself."""

from __future__ import annotations

import json
from dataclasses import fields
from typing import Any

import pydantic
import pytest

from limbo_plugin.episode import run_episode
from limbo_plugin.records import EpisodeKey, EpisodeRecord, FaultReport
from limbo_plugin.runconfig import RunConfig
from limbo_plugin.spec.registry import SpecRegistry
from limbo_plugin.world.ledger import Effect

LATE = EpisodeKey(template="invoice_batch", instance=0, focal_write="charge_1",
                  fault_mode="timeout_late")


def test_fault_and_ledger_are_the_typed_ground_truth(registry: SpecRegistry) -> None:
    record = run_episode(LATE, RunConfig(agent="scripted:blind_retry"), registry=registry)
    assert isinstance(record.fault, FaultReport) and record.fault.fired
    assert record.fault.delay_s == 90.0 and record.fault.commit_at is not None
    assert all(isinstance(effect, Effect) for effect in record.ledger)
    late = [e for e in record.ledger if e.origin == "late"]
    assert [e.t for e in late] == [record.fault.commit_at]


class UntypedRecord(EpisodeRecord):
    """The record as it was before its fault and ledger had types: plain JSON objects."""

    fault: dict[str, Any]  # type: ignore[assignment]
    ledger: list[dict[str, Any]]  # type: ignore[assignment]


def test_typed_entries_serialise_exactly_as_plain_json_objects_did(
        registry: SpecRegistry) -> None:
    record = run_episode(LATE, RunConfig(agent="scripted:blind_retry"), registry=registry)
    text = record.model_dump_json()
    data = json.loads(text)
    assert list(data["fault"]) == list(FaultReport.model_fields)
    assert list(data["ledger"][0]) == [f.name for f in fields(Effect)]
    untyped = UntypedRecord.model_validate({
        **record.__dict__, "fault": dict(record.fault.__dict__),
        "ledger": [effect.to_json() for effect in record.ledger]})  # the Python values as made
    assert untyped.model_dump_json() == text
    assert EpisodeRecord.model_validate_json(text).model_dump_json() == text



def test_a_record_is_frozen_once_built(registry: SpecRegistry) -> None:
    """``run_episode`` builds a record whole, with its run's context; nothing changes it after
    (the plugin used to set fields on it after it returned)."""
    key = EpisodeKey(template="invoice_batch", instance=0, focal_write="charge_1",
                     fault_mode="timeout_late")
    record = run_episode(key, RunConfig(agent="scripted:blind_retry"), registry=registry)
    with pytest.raises(pydantic.ValidationError, match="frozen"):
        record.duplicates = 3  # type: ignore[misc]
    assert record.model_copy(update={"duplicates": 3}).duplicates == 3
