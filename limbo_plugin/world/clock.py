"""A virtual clock with scheduled events that fire in time order as the clock passes them."""

from __future__ import annotations

import heapq
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

EPOCH = datetime(2026, 9, 15, 9, 0, 0, tzinfo=UTC)
"""Simulated second 0 of every episode, as shown to the agent."""
_NAIVE_EPOCH = EPOCH.replace(tzinfo=None)
""":data:`EPOCH` without its zone, so ``isoformat`` (C, unlike ``strftime``'s format parsing)
renders it without an offset; the ``Z`` is added."""


def iso(t: float) -> str:
    """Render simulated seconds as ISO-8601 UTC (``2026-09-15T09:01:30Z``; milliseconds, cut
    rather than rounded, when the time has a fraction)."""
    moment = _NAIVE_EPOCH + timedelta(seconds=t)
    if moment.microsecond:
        return moment.isoformat(timespec="milliseconds") + "Z"
    return moment.isoformat(timespec="seconds") + "Z"


@dataclass(order=True)
class ScheduledEvent:
    at: float
    order: int
    label: str = field(compare=False)
    action: Callable[[], None] = field(compare=False, repr=False)
    cancelled: bool = field(default=False, compare=False)


class VirtualClock:
    """Simulated seconds since episode start.

    Events scheduled for time ``t`` fire when the clock reaches ``t``, with ``now`` set to ``t``
    while they run, so an effect they commit carries its true commit time. Events at the same time
    fire in the order they were scheduled.
    """

    def __init__(self) -> None:
        self.now: float = 0.0
        self._events: list[ScheduledEvent] = []
        self._order = 0

    def schedule(self, at: float, action: Callable[[], None], label: str) -> ScheduledEvent:
        if at < self.now:
            raise ValueError(f"cannot schedule {label!r} in the past ({at} < {self.now})")
        self._order += 1
        event = ScheduledEvent(at=at, order=self._order, label=label, action=action)
        heapq.heappush(self._events, event)
        return event

    def advance(self, seconds: float) -> None:
        if seconds < 0:
            raise ValueError("the clock cannot go backwards")
        self.advance_to(self.now + seconds)

    def advance_to(self, t: float) -> None:
        while self._events and self._events[0].at <= t:
            event = heapq.heappop(self._events)
            if event.cancelled:
                continue
            self.now = max(self.now, event.at)
            event.action()
        self.now = max(self.now, t)

    def drain(self) -> None:
        """Fire every pending event in time order (in-flight requests complete at episode end)."""
        while self._events:
            self.advance_to(self._events[0].at)

    def pending(self) -> list[ScheduledEvent]:
        return sorted(e for e in self._events if not e.cancelled)
