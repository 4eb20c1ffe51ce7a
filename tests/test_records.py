"""The episode record: typed fault and ledger entries, and JSON that reads back to itself."""

from __future__ import annotations

import json

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


def test_record_json_keeps_its_field_order_and_reads_back_byte_identical(
        registry: SpecRegistry) -> None:
    record = run_episode(LATE, RunConfig(agent="scripted:blind_retry"), registry=registry)
    text = record.model_dump_json()
    data = json.loads(text)
    assert list(data["fault"]) == ["mode", "fired", "t_fired", "request_seq", "origin",
                                   "delay_s", "commit_at", "partial_rows", "batch_rows"]
    assert list(data["ledger"][0]) == ["seq", "t", "service", "tool", "intent", "args",
                                       "record_ids", "key", "origin", "request_seq", "kind",
                                       "targets", "undone_at"]
    assert EpisodeRecord.model_validate_json(text).model_dump_json() == text
