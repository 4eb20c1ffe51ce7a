"""The effect ledger: the ground truth the grader reads and the agent never sees.

An effect stops *standing* in two ways, and is never removed:

- it is undone: a refund, delete or cancel compensates the record it created (SPEC §1.2);
- it is overwritten field by field: a later committed write to the same record changes a field
  this effect changed to a different value (``resolved`` → ``in_progress``, ``enabled: true`` →
  ``false``). The ledger notes which fields, and by which write (``overwritten``); the grader
  judges a required effect only on the fields that requirement checks, so changing a flag's
  ``cohort`` leaves the ``enabled: true`` the task asked for standing. Once every field an
  effect changed has been overwritten, nothing of it is left and it is marked ``undone_at`` as
  well. Writing a value the record already has changes nothing and overwrites nothing; an update
  that writes several fields records which of them it actually changed (``changed``).
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any, Literal

Origin = Literal["agent", "harness", "late", "redelivery", "batch_resume"]
EffectKind = Literal["create", "update"]


@dataclass
class Effect:
    """One committed effect. Undo marks ``undone_at``; an effect is never removed."""

    seq: int
    t: float
    service: str
    tool: str
    intent: dict[str, Any]
    args: dict[str, Any]
    record_ids: list[str]
    key: str | None
    origin: Origin
    request_seq: int
    request_part: int = 0
    kind: EffectKind = "create"
    targets: list[str] = field(default_factory=list)
    sets: dict[str, Any] | None = None
    """The field values this effect wrote on the records it changed (updates and upserts)."""
    changed: list[str] | None = None
    """The fields among ``sets`` whose value this write changed (``None``: all of them); a
    field it wrote with the value the record already had is not part of its effect."""
    overwritten: dict[str, int] = field(default_factory=dict)
    """Field name → ``seq`` of the later write that changed that field of the record again."""
    undone_at: float | None = None
    undone_by: int | None = None
    """``seq`` of the effect that undid this one, or overwrote the last field it changed."""

    @property
    def written(self) -> list[str]:
        """The records whose fields this effect wrote: its targets, else the records it made."""
        return self.targets or self.record_ids

    @property
    def changed_fields(self) -> list[str]:
        """The fields this effect changed (empty for an effect that writes no fields)."""
        if not self.sets:
            return []
        return list(self.sets) if self.changed is None else list(self.changed)

    def to_json(self) -> dict[str, Any]:
        """A snapshot of this effect as a dict (the episode record holds the effects themselves).

        Shallow on purpose: args and intent are detached JSON copies nothing mutates later.
        """
        return {f.name: getattr(self, f.name) for f in fields(self)}


class Ledger:
    """Append-only list of effects, indexed by the records they created."""

    def __init__(self) -> None:
        self.effects: list[Effect] = []
        self._creator: dict[str, Effect] = {}
        self._writers: dict[str, list[Effect]] = {}

    def commit(self, *, t: float, service: str, tool: str, intent: dict[str, Any],
               args: dict[str, Any], record_ids: list[str], key: str | None, origin: Origin,
               request_seq: int, request_part: int = 0, kind: EffectKind = "create",
               targets: list[str] | None = None, sets: dict[str, Any] | None = None,
               changed: list[str] | None = None) -> Effect:
        effect = Effect(
            seq=len(self.effects) + 1, t=t, service=service, tool=tool, intent=intent, args=args,
            record_ids=list(record_ids), key=key, origin=origin, request_seq=request_seq,
            request_part=request_part, kind=kind, targets=list(targets or []),
            sets=dict(sets) if sets else None,
            changed=list(changed) if changed is not None and sets else None,
        )
        self.effects.append(effect)
        if kind == "create":
            for record_id in record_ids:
                self._creator[record_id] = effect
        if effect.sets:
            for record_id in effect.written:
                self._supersede(record_id, effect)
                self._writers.setdefault(record_id, []).append(effect)
        return effect

    def _supersede(self, record_id: str, new: Effect) -> None:
        """Note every field of an earlier standing write to ``record_id`` that ``new`` changes
        to another value; an earlier write with no field of its own left is undone."""
        assert new.sets is not None
        fresh = set(new.changed_fields)
        for old in self._writers.get(record_id, ()):
            if old.undone_at is not None or not old.sets:
                continue
            mine = old.changed_fields
            for name in mine:
                if (name in fresh and name not in old.overwritten
                        and new.sets[name] != old.sets[name]):
                    old.overwritten[name] = new.seq
            if mine and all(name in old.overwritten for name in mine):
                old.undone_at, old.undone_by = new.t, new.seq

    def creator_of(self, record_id: str) -> Effect | None:
        return self._creator.get(record_id)

    def mark_undone(self, record_id: str, t: float, by: int | None = None) -> None:
        """Mark the effect that created ``record_id``, and every standing write of its fields,
        as undone (compensated) at ``t`` by effect ``by``."""
        for effect in (self._creator.get(record_id), *self._writers.get(record_id, ())):
            if effect is not None and effect.undone_at is None and effect.seq != by:
                effect.undone_at, effect.undone_by = t, by

    def to_json(self) -> list[dict[str, Any]]:
        return [e.to_json() for e in self.effects]
