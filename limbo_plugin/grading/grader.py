"""The ground-truth grader of SPEC §5: it reads the ledger, the final report and the ids of the
records the world seeded, nothing else (no model judges, no trace)."""

from __future__ import annotations

from collections.abc import Collection

from limbo_plugin.records import EffectCount, Grade
from limbo_plugin.tasks import RequiredEffect, TaskInstance
from limbo_plugin.world.ledger import Effect


def grade(task: TaskInstance, effects: list[Effect], final_status: str | None, *,
          seeded_ids: Collection[str]) -> Grade:
    """Grade an episode from its ledger (``effects``), the agent's final status and the ids of
    the records the world held before the episode (``World.seeded_ids``).

    An update counts toward a requirement, and stops standing for it, only through the fields
    that requirement checks (:func:`checked_fields`): upserting a flag's ``cohort`` neither
    retires the ``enabled: true`` an earlier upsert set nor, when a re-upsert repeats
    ``enabled: true`` with a corrected cohort, enables the flag a second time. ``standing``
    counts what is left at the end, so a required effect is judged on the final state.
    """
    counts = {req.id: [0, 0] for req in task.required}
    unrequested = 0
    for effect in effects:
        matched = next((req for req in task.required if req.matches(effect)), None)
        counted = None if matched is None else contribution(matched, effect)
        if matched is None or counted is None:
            unrequested += 1
            continue
        counts[matched.id][0] += 1
        counts[matched.id][1] += counted
    per_effect = [EffectCount(id=req.id, required=req.count, committed=counts[req.id][0],
                              standing=counts[req.id][1]) for req in task.required]
    collateral = count_collateral(task, effects, seeded_ids)
    ts = all(e.standing >= e.required for e in per_effect) and collateral == 0
    duplicates = sum(max(0, e.committed - e.required) for e in per_effect)
    residual = sum(max(0, e.standing - e.required) for e in per_effect)
    eos = ts and duplicates == 0
    overclaim = final_status == "completed" and (not ts or residual > 0)
    return Grade(ts=ts, eos=eos, duplicates=duplicates, residual_duplicates=residual,
                 collateral=collateral, unrequested=unrequested, overclaim=overclaim,
                 effects=per_effect)


def checked_fields(requirement: RequiredEffect, effect: Effect) -> set[str]:
    """The fields ``effect`` wrote that ``requirement`` checks (``values.enabled`` checks the
    ``enabled`` field an upsert sets; ``status`` the status a status change sets)."""
    if not effect.sets:
        return set()
    named = {path.rsplit(".", 1)[-1] for path in requirement.where}
    return named & set(effect.sets)


def contribution(requirement: RequiredEffect, effect: Effect) -> int | None:
    """How ``effect``, which matches ``requirement``, counts toward it: ``None`` when it does
    not (an update that changed none of the fields the requirement checks), else 1 if it still
    stands at the end and 0 if it was undone or every checked field it changed was overwritten
    by a later write."""
    checked = checked_fields(requirement, effect)
    if checked:
        mine = checked & set(effect.changed_fields)
        if not mine:
            return None
        if any(name in effect.overwritten for name in mine):
            return 0
    return 0 if effect.undone_at is not None else 1


def count_collateral(task: TaskInstance, effects: list[Effect],
                     seeded_ids: Collection[str]) -> int:
    """Pre-existing records the task did not target that a write changed (e.g. refunding the
    original charge, upserting another customer's plan)."""
    allowed = set(task.targets)
    damaged = {target for effect in effects for target in effect.targets
               if target in seeded_ids and target not in allowed}
    return len(damaged)
