"""The live progress line of a run: episodes done of the total, ETA, the running duplicate
rate of each family seen so far, model cost against ``--limbo-cost-limit``, and
infrastructure errors.

A model run takes hours and pytest shows only dots (under ``-n``, not even which episodes). The
controller, which receives every record also under xdist, prints one status line through
pytest's terminal reporter every ``--limbo-progress`` seconds: ``write_line`` starts it on a line
of its own, so pytest's dots and the line never overwrite each other, and the line holds no
control characters (no carriage returns, no colours) — a CI log or a file reads it as it
reads any other line. Nothing is printed under ``-q`` or with ``--limbo-progress off``.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pluggy import HookimplMarker

from limbo_plugin.errors import UsageError
from limbo_plugin.store.view import EpisodeView

hookimpl = HookimplMarker("pytest")
"""pytest's hook marker, from pluggy: the plugin module alone imports pytest; pytest's objects
are typed ``Any`` here."""

DEFAULT_INTERVAL_TTY = 10.0
DEFAULT_INTERVAL_PIPE = 60.0
"""Seconds between lines on a terminal, and in a log (where every line stays)."""


def parse_interval(raw: str | None, *, tty: bool) -> float | None:
    """``--limbo-progress``: seconds between lines, ``0`` after every episode, ``off`` none."""
    if raw is None:
        return DEFAULT_INTERVAL_TTY if tty else DEFAULT_INTERVAL_PIPE
    if raw.strip().lower() in ("off", "no", "none"):
        return None
    try:
        value = float(raw)
    except ValueError:
        raise UsageError(f"--limbo-progress expects seconds between lines (0: every episode) "
                         f"or 'off', got {raw!r}") from None
    if not value >= 0 or value == float("inf"):
        raise UsageError(f"--limbo-progress must be 0 or more seconds, or 'off', got {raw!r}")
    return value


def _duration(seconds: float) -> str:
    whole = round(seconds)
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours}h{minutes:02d}m"
    return f"{minutes}m{secs:02d}s" if minutes else f"{secs}s"


@dataclass
class FamilyCount:
    fired: int = 0
    duplicated: int = 0


@dataclass
class Progress:
    """What the line shows, updated as records arrive (on the controller)."""

    total: int | None = None
    done: int = 0
    errors: int = 0
    cost_usd: float = 0.0
    unpriced: int = 0
    families: dict[str, FamilyCount] = field(default_factory=dict)

    def add(self, outcome: EpisodeView) -> None:
        if outcome.error is not None:
            self.errors += 1
        elif outcome.fired and outcome.family != "none":
            count = self.families.setdefault(outcome.family, FamilyCount())
            count.fired += 1
            count.duplicated += outcome.duplicates > 0
        if outcome.usage is not None:
            self.cost_usd += outcome.usage.cost_usd
            self.unpriced += outcome.usage.unpriced_calls

    def line(self, elapsed: float, cost_limit: float | None, order: Mapping[str, int],
             per_episode: float | None = None) -> str:
        """The status line; ``per_episode``: seconds per episode since the first one ended
        (start-up, the workers' above all, is not a cost of the episodes still to run)."""
        parts = []
        if self.total:
            share = 100 * self.done / self.total
            head = f"{self.done}/{self.total} episodes ({share:.0f}%), {_duration(elapsed)}"
            if per_episode is not None and self.done < self.total:
                head += f", ETA {_duration(per_episode * (self.total - self.done))}"
        else:
            head = f"{self.done} episodes, {_duration(elapsed)}"
        parts.append(head)
        if self.families:
            shown = sorted(self.families, key=lambda f: (order.get(f, len(order)), f))
            counts = self.families
            rates = ", ".join(f"{f} {100 * counts[f].duplicated / counts[f].fired:.1f}% of "
                              f"{counts[f].fired}" for f in shown)
            parts.append(f"duplicate rate {rates}")
        if self.cost_usd or self.unpriced or cost_limit is not None:
            cost = f"cost ${self.cost_usd:.2f}"
            if self.unpriced:
                cost += "+ (some calls unpriced)"
            if cost_limit is not None:
                cost += f" of ${cost_limit:g} limit"
            parts.append(cost)
        parts.append(f"{self.errors} infrastructure error{'s' if self.errors != 1 else ''}")
        return "limbo: " + " | ".join(parts)


def is_episode(nodeid: str) -> bool:
    return Path(nodeid.split("::", 1)[0]).parent.name == "experiments" and "::" in nodeid


class LiveProgress:
    """Controller plugin: counts finished episodes and prints the line every ``interval``
    seconds (and at the last episode)."""

    def __init__(self, config: Any, outcomes: dict[Any, EpisodeView], *,
                 interval: float, cost_limit: float | None,
                 family_order: Callable[[], tuple[str, ...]],
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.config = config
        self.outcomes = outcomes
        self.interval = interval
        self.cost_limit = cost_limit
        self.family_order = family_order
        self.clock = clock
        self.progress = Progress()
        self.started = clock()
        self.last_line = self.started
        self.seen = 0
        self.first_done: float | None = None
        self.default_interval = False
        """No interval was given: a terminal gets a line more often than a log."""

    def pytest_sessionstart(self, session: Any) -> None:
        reporter = self.config.pluginmanager.get_plugin("terminalreporter")
        if self.default_interval and reporter is not None and bool(reporter.isatty):
            self.interval = DEFAULT_INTERVAL_TTY
        self.started = self.last_line = self.clock()

    # -- the total -------------------------------------------------------------------------
    def pytest_collection_finish(self, session: Any) -> None:
        if not self.config.pluginmanager.has_plugin("dsession"):
            self.progress.total = sum(1 for item in session.items if is_episode(item.nodeid))

    @hookimpl(optionalhook=True)
    def pytest_xdist_node_collection_finished(self, node: Any, ids: list[str]) -> None:
        if self.progress.total is None:  # every worker collects the same items
            self.progress.total = sum(1 for nodeid in ids if is_episode(nodeid))

    # -- each episode ----------------------------------------------------------------------
    @hookimpl(trylast=True)
    def pytest_runtest_logreport(self, report: Any) -> None:
        if report.when != "teardown" or not is_episode(report.nodeid):
            return
        self.progress.done += 1
        if self.progress.done == 1:
            self.first_done = self.clock()
        arrived = len(self.outcomes) - self.seen
        if arrived > 0:  # the records the controller took since: under -n, another worker's
            # record can arrive before this episode's teardown, so there may be more than one
            newest = list(itertools.islice(reversed(self.outcomes.values()), arrived))
            for outcome in reversed(newest):
                self.progress.add(outcome)
            self.seen = len(self.outcomes)
        elif report.failed:
            self.progress.errors += 1
        now = self.clock()
        if now - self.last_line >= self.interval:
            self.last_line = now
            self.write()

    def write(self) -> None:
        reporter = self.config.pluginmanager.get_plugin("terminalreporter")
        if reporter is None:
            return
        order = {name: i for i, name in enumerate(self.family_order())}
        now = self.clock()
        done = self.progress.done
        per_episode = ((now - self.first_done) / (done - 1)
                       if self.first_done is not None and done > 1 else None)
        if reporter._tw.width_of_current_line:  # after pytest's dots: a line of its own
            reporter.write("\n")
        reporter.write_line(self.progress.line(now - self.started, self.cost_limit, order,
                                               per_episode))


def install(config: Any, outcomes: dict[Any, EpisodeView], raw_interval: str | None,
            cost_limit: float | None, family_order: Callable[[], tuple[str, ...]]) -> None:
    """Register the live line on the controller, unless ``-q``, ``--collect-only`` or
    ``--limbo-progress off``; a bad ``--limbo-progress`` is a :class:`UsageError`."""
    interval = parse_interval(raw_interval, tty=False)
    if interval is None or config.get_verbosity() < 0 or config.option.collectonly:
        return
    plugin = LiveProgress(config, outcomes, interval=interval, cost_limit=cost_limit,
                          family_order=family_order)
    plugin.default_interval = raw_interval is None
    config.pluginmanager.register(plugin, "limbo-progress")
