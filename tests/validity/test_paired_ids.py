"""A world is the same world under every condition, contract and documentation variant.

Record ids come from the world's base seed and the agent's own call sequence (SPEC §1.3), so
the calls a harness makes on the agent's behalf (read-backs, transparent retries) never shift
the ids of the agent's records. Here the same agent runs every world of a sweep under every
condition, both contracts and every documentation variant; wherever it made the same calls as in
the reference run (vanilla, native, default docs), the records its own requests created must carry
the same ids.
"""

from __future__ import annotations

from typing import Any

import pytest

from limbo_plugin.conditions import Condition, all_conditions
from limbo_plugin.episode import run_episode
from limbo_plugin.records import EpisodeKey, EpisodeRecord
from limbo_plugin.runconfig import RunConfig
from limbo_plugin.spec.registry import SpecRegistry
from limbo_plugin.toolapi import canonical_json
from limbo_plugin.world.ids import IdFactory

CONDITIONS = (*(c.name for c in all_conditions() if isinstance(c, Condition)),
              "wait_0", "wait_90", "wait_3600")
MODES = ("timeout_pre", "timeout_post", "http500_pre", "http500_post", "redelivery")
VARIANTS = [("native", "default", c) for c in CONDITIONS] + [
    ("keys_everywhere", "default", c) for c in CONDITIONS] + [
    (contract, docs, condition) for contract in ("native", "keys_everywhere")
    for docs in ("no_consistency_docs", "explicit") for condition in ("vanilla", "vbr", "guard")]


def sweep(registry: SpecRegistry) -> list[EpisodeKey]:
    """The first focal write of every template, instance 0, under each mode above."""
    keys = []
    for name in sorted(registry.templates):
        focal = registry.template(name).instantiate(0).focal_writes[0]
        keys += [EpisodeKey(template=name, instance=0, focal_write=focal.id, fault_mode=mode)
                 for mode in MODES]
    return keys


def agent_records(record: EpisodeRecord) -> list[tuple[str, list[str]]]:
    """Per agent call, in order: the call (tool and arguments) and the ids of the records its
    own request created at once (effects of origin ``agent`` committed while it ran)."""
    calls = []
    for entry in (e for e in record.trace if e.origin == "agent"):
        ids = [rid for effect in record.ledger
               if effect.origin == "agent" and effect.tool == entry.tool
               and entry.t_start <= effect.t < entry.t_end and effect.kind == "create"
               for rid in effect.record_ids]
        calls.append((f"{entry.tool} {canonical_json(entry.arguments)}", ids))
    return calls


def differences(reference: list[tuple[str, list[str]]], other: list[tuple[str, list[str]]]
                ) -> tuple[int, list[str]]:
    """How many calls both runs made identically (same prefix) and created records in, and the
    calls among them whose records got different ids."""
    compared, wrong = 0, []
    pairs = zip(reference, other, strict=False)  # a shorter run compares its own calls only
    for k, ((call, ids), (other_call, other_ids)) in enumerate(pairs, 1):
        if call != other_call:
            break
        if ids and other_ids:
            compared += 1
            if ids != other_ids:
                wrong.append(f"call {k} {call[:60]}: {ids} vs {other_ids}")
    return compared, wrong


@pytest.mark.parametrize("agent", ["scripted:blind_retry", "scripted:verify_first"])
def test_record_ids_do_not_depend_on_condition_contract_or_docs(registry: SpecRegistry,
                                                                agent: str) -> None:
    problems: list[str] = []
    compared = 0
    for key in sweep(registry):
        reference = agent_records(run_episode(key, RunConfig(agent=agent), registry=registry))
        for contract, docs, condition in VARIANTS:
            config = RunConfig(agent=agent, contract=contract, docs=docs, condition=condition)
            seen, wrong = differences(
                reference, agent_records(run_episode(key, config, registry=registry)))
            compared += seen
            problems += [f"{key.id} {contract}/{docs}/{condition}: {w}" for w in wrong]
    assert not problems, "\n".join(problems[:20])
    assert compared > 5000  # about three records compared per episode


def test_a_verified_reissue_keeps_the_id_it_has_without_the_harness(
        registry: SpecRegistry) -> None:
    """The reported case: vbr reads back before letting the re-issue through; the ticket the
    re-issue creates has the same number as without vbr."""
    key = EpisodeKey(template="incident_open", instance=0, focal_write="ticket",
                     fault_mode="timeout_pre")

    def ticket(condition: str) -> Any:
        record = run_episode(key, RunConfig(agent="scripted:blind_retry", condition=condition),
                             registry=registry)
        return [e.record_ids for e in record.ledger if e.tool == "tickets_create"]

    # the agent's second call re-issues the lost request: its ticket is numbered by that call
    second_call = IdFactory(registry.template("incident_open").instantiate(0).base_seed).ticket(
        "OPS", 2)
    assert ticket("vbr") == ticket("vanilla") == ticket("guard") == [[second_call]]



def test_harness_requests_get_ids_of_their_own(registry: SpecRegistry) -> None:
    """A transparent retry creates its record in the sub-namespace of the agent call it serves:
    it never takes an id the agent's own later calls would get."""
    key = EpisodeKey(template="incident_open", instance=0, focal_write="ticket",
                     fault_mode="timeout_post")
    record = run_episode(key, RunConfig(agent="scripted:blind_retry", condition="sdk_retry"),
                         registry=registry)
    tickets = [e for e in record.ledger if e.tool == "tickets_create"]
    assert [e.origin for e in tickets] == ["agent", "harness"]
    assert tickets[0].request_seq == tickets[1].request_seq == 1
    assert (tickets[0].request_part, tickets[1].request_part) == (0, 1)
    ids = [rid for e in record.ledger for rid in e.record_ids]
    assert len(ids) == len(set(ids))


def test_a_ticket_a_harness_retry_creates_is_numbered_in_the_agents_sequence(
        registry: SpecRegistry) -> None:
    """Under sdk_retry and rules the ticket a transparent retry created must not stand out (a
    number 10,000 higher told the model that middleware had retried): it lies between the
    numbers of the agent's neighbouring calls."""
    base_seed = registry.template("incident_open").instantiate(0).base_seed
    ids = IdFactory(base_seed)
    for condition, mode in (("sdk_retry", "timeout_post"), ("rules", "http503")):
        key = EpisodeKey(template="incident_open", instance=0, focal_write="ticket",
                         fault_mode=mode)
        record = run_episode(key, RunConfig(agent="scripted:blind_retry", condition=condition),
                             registry=registry)
        harness = [e for e in record.ledger
                   if e.tool == "tickets_create" and e.origin == "harness"]
        assert harness, condition
        for effect in harness:
            number = int(effect.record_ids[0].split("-")[1])
            call = effect.request_seq
            low = int(ids.ticket("OPS", call).split("-")[1])
            high = int(ids.ticket("OPS", call + 1).split("-")[1])
            assert low < number < high, (condition, effect.record_ids, low, high)
            shown = [e for e in record.trace if e.origin == "agent"
                     and e.tool == "tickets_create" and not e.is_error]
            assert any(effect.record_ids[0] in str(e.response) for e in shown)
