"""Observation equivalence within fault groups T and E (SPEC §3) and record ids (SPEC §1.3).

The same call sequence runs in every world of a group. Every observation (response bytes and
clock) up to the first read that can see the hidden effect must be identical; that read itself
must tell the worlds apart, or the comparison would prove nothing.
"""

from __future__ import annotations

from typing import Any

import pytest
from worldkit import (
    GROUP_E,
    GROUP_T,
    READ_BACKS,
    WRITE_CALLS,
    created_ids,
    ledger_snapshot,
    make_box,
    observe,
    write_args,
)

from limbo_plugin.spec.registry import SpecRegistry

Step = tuple[str, dict[str, Any]]


def scenario(tool: str) -> tuple[list[Step], int | None]:
    """Focal write, lagged reads that cannot see it yet, a blind re-issue, then the first read
    that can see the original. Returns the steps and the index of that seeing read."""
    focal: Step = (tool, write_args(tool))
    back = READ_BACKS[tool]
    steps: list[Step] = [focal]
    if back is None:
        steps += [("wait", {"seconds": 20}), focal, ("wait", {"seconds": 600}), focal]
        return steps, None
    read: Step = (back[0], back[1])
    lag = back[2]
    if lag:
        steps += [read, ("wait", {"seconds": 5}), read]
    steps += [("wait", {"seconds": 5}), focal]
    if lag:
        steps += [read, ("wait", {"seconds": lag})]
    steps.append(read)
    return steps, len(steps) - 1


def _groups() -> list[tuple[str, list[str], str]]:
    cases = []
    for tool in WRITE_CALLS:
        cases.append(("T", GROUP_T, tool))
        cases.append(("E", GROUP_E if tool == "db_insert_rows" else GROUP_E[:2], tool))
    return cases


GROUPS = _groups()


@pytest.mark.parametrize(("group", "modes", "tool"), GROUPS,
                         ids=[f"{g}-{t}" for g, _, t in GROUPS])
def test_group_is_observation_equivalent(registry: SpecRegistry, group: str, modes: list[str],
                                         tool: str) -> None:
    """Byte-identical responses and identical clocks across hidden outcomes, up to the first
    read that can see the effect; the hidden outcomes differ in the ledger."""
    steps, seeing = scenario(tool)
    runs = {}
    ledgers = {}
    for mode in modes:
        box = make_box(registry, mode=mode, tool=tool)
        runs[mode] = observe(box, steps)
        box.world.finish_in_flight()
        ledgers[mode] = ledger_snapshot(box)
    blind = len(steps) if seeing is None else seeing
    reference = runs[modes[0]][:blind]
    for mode in modes[1:]:
        assert runs[mode][:blind] == reference, f"{mode} differs from {modes[0]}"
    pre, post = modes[0], modes[1]  # the not-executed and the committed world
    assert pre.endswith("_pre") and post.endswith("_post")
    if seeing is not None:
        assert runs[pre][seeing] != runs[post][seeing], "the read-back cannot see the effect"
    assert len(ledgers[post]) > len(ledgers[pre])


def test_focal_response_and_cost_are_identical_per_group(registry: SpecRegistry) -> None:
    """The faulted call itself: one body and one clock advance per group."""
    for modes in (GROUP_T, GROUP_E):
        seen = set()
        for mode in modes:
            box = make_box(registry, mode=mode, tool="db_insert_rows")
            seen.add(observe(box, [("db_insert_rows", write_args("db_insert_rows"))])[0])
        assert len(seen) == 1, seen


def test_late_worlds_match_until_the_late_commit_is_visible(registry: SpecRegistry) -> None:
    """timeout_pre and timeout_late look alike until t_sent + 90 + λ, and then differ."""
    steps: list[Step] = [("weibo_publish", write_args("weibo_publish"))]
    steps += [("weibo_list_posts", {}), ("wait", {"seconds": 60})] * 3
    seen = {}
    for mode in ("timeout_pre", "timeout_late"):
        seen[mode] = observe(make_box(registry, mode=mode, tool="weibo_publish"), steps)
    times = [t for _, t in seen["timeout_pre"]]
    for i, (pre, late) in enumerate(zip(seen["timeout_pre"], seen["timeout_late"], strict=True)):
        read_at = times[i - 1] if i else 0.0
        if steps[i][0] == "weibo_list_posts" and read_at > 90 + 120:
            assert pre != late
        else:
            assert pre == late, (i, steps[i])


# -- record ids --------------------------------------------------------------------------------
@pytest.mark.parametrize("tool", list(WRITE_CALLS))
def test_reissue_gets_the_same_id_whether_or_not_the_original_committed(
        registry: SpecRegistry, tool: str) -> None:
    """Ids derive from (base seed, request seq): the re-issue after timeout_pre and after
    timeout_post gets the same id, which differs from the hidden original's."""
    reissue_ids = {}
    for mode in ("timeout_pre", "timeout_post", "http500_pre", "http500_post"):
        box = make_box(registry, mode=mode, tool=tool)
        box.call(tool, write_args(tool))
        reissue = box.call(tool, write_args(tool))
        ids = reissue.content.get("ids") or [reissue.content["id"]]
        reissue_ids[mode] = ids
        assert created_ids(box)[-len(ids):] == ids
        if mode.endswith("_post"):
            assert set(created_ids(box)[: len(ids)]).isdisjoint(ids)
    assert len({tuple(v) for v in reissue_ids.values()}) == 1


def test_ids_do_not_depend_on_how_many_records_exist(registry: SpecRegistry) -> None:
    """Extra pre-existing records change no id."""
    noise = {"social": {"posts": [{"id": f"md_noise{i}", "platform": "mastodon",
                                   "text": f"noise {i}"} for i in range(7)]},
             "tickets": {"tickets": [{"id": f"OPS-{50 + i}", "project": "OPS", "title": "n"}
                                     for i in range(5)]}}
    outputs = []
    for extra in (None, noise):
        box = make_box(registry, extra_records=extra)
        outputs.append([box.call(tool, write_args(tool)).text()
                        for tool in ("mastodon_publish", "tickets_create", "db_insert_rows")])
    assert outputs[0] == outputs[1]


def test_ids_depend_on_base_seed_and_request_seq_only(registry: SpecRegistry) -> None:
    """Another world seed (fault mode, focal write) keeps the ids; another base seed or another
    position in the request sequence changes them."""
    def first_id(**kwargs: Any) -> str:
        box = make_box(registry, **kwargs)
        return box.call("mastodon_publish", write_args("mastodon_publish")).content["id"]

    base = first_id(base_seed=1)
    assert first_id(base_seed=1, mode="schema_drift", tool="x_publish", world_seed=99) == base
    assert first_id(base_seed=2) != base
    box = make_box(registry, base_seed=1)
    box.call("mastodon_list_posts", {})
    assert box.call("mastodon_publish", write_args("mastodon_publish")).content["id"] != base


def test_requests_are_numbered_by_the_agent_call_they_serve(registry: SpecRegistry) -> None:
    """The agent's own request is part 0 of its call even when a harness's read-back reached
    the service first; the harness's requests are parts 1, 2, …; ids follow the numbers."""
    from limbo_plugin.toolapi import ToolCall

    def created(calls: list[ToolCall]) -> list[tuple[int, int, str]]:
        box = make_box(registry, base_seed=7)
        for call in calls:
            box.transport.call(call)
        return [(r.seq, r.part, r.record_ids[0]) for r in box.world.requests if r.record_ids]

    publish = ("mastodon_publish", write_args("mastodon_publish"))
    agent = ToolCall(*publish, origin="agent", seq=3)
    plain = created([agent])
    with_reads = created([ToolCall("mastodon_list_posts", {}, origin="harness", seq=3), agent,
                          ToolCall(*publish, origin="harness", seq=3)])
    assert plain == [(3, 0, plain[0][2])]
    assert with_reads[0] == plain[0], "the harness's read-back did not shift the agent's id"
    assert with_reads[1][:2] == (3, 2) and with_reads[1][2] != plain[0][2]
