"""The effect ledger: the ground truth the grader reads and the agent never sees."""

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
    kind: EffectKind = "create"
    targets: list[str] = field(default_factory=list)
    undone_at: float | None = None

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

    def commit(self, *, t: float, service: str, tool: str, intent: dict[str, Any],
               args: dict[str, Any], record_ids: list[str], key: str | None, origin: Origin,
               request_seq: int, kind: EffectKind = "create",
               targets: list[str] | None = None) -> Effect:
        effect = Effect(
            seq=len(self.effects) + 1, t=t, service=service, tool=tool, intent=intent, args=args,
            record_ids=list(record_ids), key=key, origin=origin, request_seq=request_seq,
            kind=kind, targets=list(targets or []),
        )
        self.effects.append(effect)
        if kind == "create":
            for record_id in record_ids:
                self._creator[record_id] = effect
        return effect

    def creator_of(self, record_id: str) -> Effect | None:
        return self._creator.get(record_id)

    def mark_undone(self, record_id: str, t: float) -> None:
        """Mark the effect that created ``record_id`` as undone (compensated) at ``t``."""
        effect = self._creator.get(record_id)
        if effect is not None and effect.undone_at is None:
            effect.undone_at = t

    def to_json(self) -> list[dict[str, Any]]:
        return [e.to_json() for e in self.effects]
