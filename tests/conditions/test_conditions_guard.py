"""The guard and its ablations (SPEC §6.2, paper §6.3, §6.5 and E4)."""

from __future__ import annotations

import pytest
from condkit import (
    AMBIGUOUS,
    LATE,
    PlanAgent,
    agent_calls,
    failures,
    faulted_modes,
    harness_calls,
    run,
    sweep,
    world,
)
from condkit import worlds as all_worlds

from limbo_plugin.conditions.vbr import BLOCKED
from limbo_plugin.spec.registry import SpecRegistry

KEYS = "keys_everywhere"


def test_keys_everywhere_guard_is_exactly_once_in_every_world(registry: SpecRegistry) -> None:
    ws = all_worlds(registry, contract=KEYS)
    assert {w.mode for w in ws} == set(faulted_modes(registry))
    bad = [(w, r) for w, r in sweep(ws, "guard", contract=KEYS) if not r.eos]
    assert not bad, failures(bad)


@pytest.mark.parametrize("agent", ["scripted:verify_first", "scripted:same_key",
                                   "scripted:escalate_first"])
def test_keys_everywhere_guard_is_exactly_once_whatever_the_recovery(registry: SpecRegistry,
                                                                     agent: str) -> None:
    # explicit refusals never reach the guard's logic; the blind_retry sweep covers them
    ws = all_worlds(registry, AMBIGUOUS, KEYS)
    bad = [(w, r) for w, r in sweep(ws, "guard", agent, contract=KEYS) if not r.eos]
    assert not bad, failures(bad)


def test_keys_everywhere_guard_holds_when_the_agent_regenerates_its_key(registry: SpecRegistry
                                                                        ) -> None:
    bad, saw_new_keys = [], 0
    for w in all_worlds(registry, contract=KEYS):
        agent = PlanAgent(fresh_keys=True)
        record = run(w, "guard", contract=KEYS, agent_obj=agent)
        saw_new_keys += any(k.endswith("-attempt-2") for k in agent.sent_keys)
        if not record.eos:
            bad.append((w, record))
    assert not bad, failures(bad)
    assert saw_new_keys >= 100  # the agent really did send a new key on its retries


def test_the_pinned_key_replaces_the_regenerated_one(registry: SpecRegistry) -> None:
    w = world(registry, "hotfix_long", "ticket", "timeout_late", KEYS)
    record = run(w, "guard", contract=KEYS, agent_obj=PlanAgent(fresh_keys=True))
    sent = [e.arguments["idempotency_key"] for e in agent_calls(record, "tickets_create")]
    assert sent == ["ticket-attempt-1", "ticket-attempt-2"]
    effects = [e for e in record.ledger if e.tool == "tickets_create"]
    assert [e.key for e in effects] == ["ticket-attempt-1"]
    assert record.eos
    unpinned = run(w, "guard-no-key", contract=KEYS, agent_obj=PlanAgent(fresh_keys=True))
    assert unpinned.duplicates == 1  # in flight under attempt-1, re-issued under attempt-2


def test_native_guard_leaves_only_what_a_client_cannot_see(registry: SpecRegistry) -> None:
    for w, record in sweep(all_worlds(registry), "guard"):
        if record.eos:
            continue
        unseen = w.mode in LATE and w.definition.contract.key_param is None
        assert unseen or record.expected_failure or (
            w.verification == "none" and w.mode in ("timeout_pre", "http500_pre")), w


# -- ablations: each component matters in a world of its own --------------------------------------
def test_key_component_prevents_a_late_commit_duplicate_on_a_keyable_write(registry: SpecRegistry
                                                                           ) -> None:
    w = world(registry, "invoice_batch", "charge_1", "timeout_late")
    full, ablated = run(w, "guard"), run(w, "guard-no-key")
    assert full.eos and not harness_calls(full)  # the pinned key made the re-issue safe
    assert ablated.duplicates == 1 and harness_calls(ablated)  # verified, saw nothing, sent


def test_key_component_makes_redelivery_harmless_where_keys_exist(registry: SpecRegistry) -> None:
    w = world(registry, "cross_post", "post_mastodon", "redelivery")
    assert run(w, "guard").eos
    assert run(w, "guard-no-key").duplicates == 1


def test_consistency_component_waits_out_the_lag_of_an_eventual_read_path(registry: SpecRegistry
                                                                          ) -> None:
    w = world(registry, "hotfix_long", "email", "timeout_post")
    full, ablated = run(w, "guard"), run(w, "guard-no-consistency")
    assert full.eos and ablated.duplicates == 1
    (read,) = harness_calls(full)
    sent = agent_calls(full, "email_send")[0]
    assert read.t_start == pytest.approx(sent.t_start + 120, abs=0.01)
    assert harness_calls(ablated)[0].t_start == sent.t_end  # read at once: stale


def test_block_component_refuses_an_unverifiable_repeat(registry: SpecRegistry) -> None:
    w = world(registry, "cross_post", "post_x", "timeout_post")
    full, ablated = run(w, "guard"), run(w, "guard-no-block")
    _first, repeat = agent_calls(full, "x_publish")
    assert repeat.response["error"]["type"] == BLOCKED
    assert "escalate_to_human" in repeat.response["error"]["message"]
    assert full.eos and full.final_status == "partial" and not full.overclaim
    assert ablated.duplicates == 1


def test_block_lifts_once_the_agent_has_escalated(registry: SpecRegistry) -> None:
    w = world(registry, "cross_post", "post_x", "timeout_pre")
    record = run(w, "guard", "scripted:escalate_first")
    calls = [e.tool for e in record.trace if e.origin == "agent"]
    assert calls[:3] == ["x_publish", "escalate_to_human", "x_publish"]
    assert not any(e.is_error for e in agent_calls(record, "x_publish")[1:])
    assert record.eos


def test_block_costs_completion_when_the_write_never_executed(registry: SpecRegistry) -> None:
    record = run(world(registry, "cross_post", "post_x", "timeout_pre"), "guard")
    assert not record.ts and record.duplicates == 0 and record.final_status == "partial"


def test_annotate_component_tells_the_agent_the_outcome_is_unknown(registry: SpecRegistry) -> None:
    w = world(registry, "incident_open", "email", "timeout_late")
    full, ablated = run(w, "guard"), run(w, "guard-no-annotate")
    note = agent_calls(full, "email_send")[0].response.get("harness_note", "")
    assert "unknown" in note
    assert "harness_note" not in agent_calls(ablated, "email_send")[0].response


def test_the_guards_note_announces_verification_before_any_identical_retry(
        registry: SpecRegistry) -> None:
    """The guard the paper measured (§6.5) announced that it would verify before any identical
    retry; that announcement is what moved a model from escalating to retrying."""
    w = world(registry, "incident_open", "email", "timeout_late")
    note = agent_calls(run(w, "guard"), "email_send")[0].response["harness_note"]
    assert "will verify" in note and "before sending any identical retry" in note.lower()
    for oracle in ("state_oracle", "outcome_oracle"):  # the guard with another verifier
        assert agent_calls(run(w, oracle), "email_send")[0].response["harness_note"] == note


def test_guard_no_promise_differs_from_the_guard_by_the_promise_alone(registry: SpecRegistry
                                                                      ) -> None:
    """The contrast guard / guard-no-promise measures the promise: the no-promise note is the
    guard's note without its one promising sentence — no escalation advice, no in-flight hint —
    and every other answer the agent sees is the same."""
    w = world(registry, "incident_open", "email", "timeout_late")
    promised, plain = run(w, "guard"), run(w, "guard-no-promise")
    note = agent_calls(plain, "email_send")[0].response["harness_note"]
    full = agent_calls(promised, "email_send")[0].response["harness_note"]
    assert "unknown" in note and "verif" not in note
    assert full.startswith(note + " ")
    promise = full[len(note) + 1:]
    assert "will verify" in promise and promise.count(". ") == 0 and promise.endswith(".")
    for word in ("escalat", "flight", "uncertain_operations", "assume"):
        assert word not in note.lower()
    # only the note differs: the same calls, the same answers otherwise, the same outcome
    assert [(e.tool, e.origin, e.arguments) for e in plain.trace] == [
        (e.tool, e.origin, e.arguments) for e in promised.trace]
    strip = [{k: v for k, v in e.response.items() if k != "harness_note"} for e in plain.trace]
    assert strip == [{k: v for k, v in e.response.items() if k != "harness_note"}
                     for e in promised.trace]
    assert (plain.eos, plain.duplicates) == (promised.eos, promised.duplicates)


def test_annotate_component_changes_what_a_heeding_agent_does(registry: SpecRegistry) -> None:
    w = world(registry, "incident_open", "email", "timeout_late")
    full = run(w, "guard", agent_obj=PlanAgent(heed_notes=True))
    ablated = run(w, "guard-no-annotate", agent_obj=PlanAgent(heed_notes=True))
    assert full.behaviour == "move_on" or full.behaviour == "stop_without_checking"
    assert full.eos and full.final_status == "partial"
    assert ablated.behaviour == "blind_retry" and ablated.duplicates == 1


def test_a_suppressed_reissue_is_explained_only_with_annotate(registry: SpecRegistry) -> None:
    w = world(registry, "feature_flags", "publish", "timeout_post")
    full, ablated = run(w, "guard"), run(w, "guard-no-annotate")
    answer = agent_calls(full, "linkedin_publish")[-1].response
    assert not agent_calls(full, "linkedin_publish")[-1].is_error
    assert answer["harness_note"].startswith("Not sent again")
    assert "linkedin_list_posts" in answer["harness_note"]
    assert "harness_note" not in agent_calls(ablated, "linkedin_publish")[-1].response
    assert full.eos and ablated.eos


def test_generated_keys_are_kept_out_of_the_operators_report(registry: SpecRegistry) -> None:
    record = run(world(registry, "invoice_batch", "charge_1", "timeout_pre"), "guard",
                 "scripted:escalate_first")
    answer = next(e for e in record.trace if e.tool == "escalate_to_human").response
    assert answer["operations"] and all("idempotency_key" not in op["arguments"]
                                        for op in answer["operations"])
    assert record.eos
    charged = [e for e in record.ledger if e.tool == "billing_create_charge"]
    assert charged and all(e.key for e in charged)  # yet the service got the key
