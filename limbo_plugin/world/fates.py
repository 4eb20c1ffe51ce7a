"""What can have become of a request, as one table: every fate a request can have, by name.

A request's ``fate`` (ground truth, hidden from the agent) is a name; what it means is its
:class:`Fate` declaration: whether the request is still **pending** (it may still land: it has not
reached the service yet, and will at its ``due_at``) and how much of it the service has
**executed** (nothing, all of it, or a batch's first ``rows_done`` rows). Whatever acts on a
fate reads these flags, never the name: the operator's finding (:mod:`.operator`), the oracles'
view of which earlier requests landed and which one to wait for
(:mod:`limbo_plugin.conditions.oracles`). So a way of executing a fault (an
:class:`~limbo_plugin.faults.Executor`) that leaves a request in a state of its own declares that
fate beside it, in an ``FATES`` tuple of its module (:mod:`limbo_plugin.extensions`), and every
reader treats it by its flags.

A declaration that cannot mean anything (a pending request the service has already executed, an
unknown ``executed`` word, a name that is not a lower-case word) is a one-line
:class:`~limbo_plugin.errors.UsageError` naming the declaring module, when the specs load.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache
from typing import Literal, TypeGuard, get_args

from limbo_plugin.errors import UsageError
from limbo_plugin.extensions import Declared, declared, unique

Executed = Literal["nothing", "all", "first_rows"]
"""How much of a request the service has executed: ``nothing``, ``all`` of it, or (a batch) its
``first_rows``, ``rows_done`` of them."""
EXECUTED: tuple[str, ...] = get_args(Executed)


@dataclass(frozen=True)
class Fate:
    """One fate a request can have: its name (what ``Request.fate`` holds and the records show)
    and the flags every reader acts on."""

    name: str
    executed: Executed = "nothing"
    """How much of the request the service has executed so far."""
    pending: bool = False
    """The request may still land: it has not reached the service yet and will at the
    request's ``due_at`` (an oracle that sees in-flight requests waits for it; the operator says
    it will complete)."""
    description: str = ""
    """What happened to the request, for readers of this table."""


FATES = (
    Fate("sent", description="sent; nothing has answered or executed it yet"),
    Fate("not_executed", description="it never reached the service"),
    Fate("rejected", description="the service refused it; nothing changed"),
    Fate("committed", "all", description="the service executed it"),
    Fate("replayed", "all", description="a keyed request the service had executed before, "
         "answered from that execution"),
    Fate("partial", "first_rows", description="a batch of which the service executed the "
         "first rows_done rows"),
    Fate("in_flight", pending=True, description="on its way: the service executes it at "
         "due_at, whatever happens meanwhile"),
)
"""Limbo's own fates; extension modules' ``FATES`` come after them."""

_NAME = re.compile(r"^[a-z][a-z0-9_]*$")


@cache
def fates() -> dict[str, Fate]:
    """Every fate by name: :data:`FATES`, then extension modules', each checked once."""
    found = declared("FATES", [__name__], accepts=_is_fate, what="a Fate")
    for item in found:
        _check(item)
    return {name: d.value for name, d in unique(found, lambda f: f.name, "fate").items()}


def fate_of(name: str) -> Fate:
    """The declaration of the fate ``name``; a :class:`UsageError` when nothing declares it (an
    executor set a fate it did not declare)."""
    fate = fates().get(name)
    if fate is None:
        raise UsageError(f"request fate {name!r} is not declared; declared: "
                         f"{', '.join(fates())} (a module declaring an Executor that sets it "
                         "declares it in its FATES)")
    return fate


def _is_fate(item: object) -> TypeGuard[Fate]:
    return isinstance(item, Fate)


def _check(item: Declared[Fate]) -> None:
    fate, where = item.value, f"{item.module}.FATES"
    if not isinstance(fate.name, str) or not _NAME.match(fate.name):
        raise UsageError(f"{where}: fate name {fate.name!r} is not a lower-case word "
                         "(letters, digits, _)")
    if fate.executed not in EXECUTED:
        raise UsageError(f"{where}: fate {fate.name!r} has executed={fate.executed!r}; valid: "
                         f"{', '.join(EXECUTED)}")
    if not isinstance(fate.pending, bool):
        raise UsageError(f"{where}: fate {fate.name!r} has pending={fate.pending!r}; valid: "
                         "True, False")
    if fate.pending and fate.executed != "nothing":
        raise UsageError(f"{where}: fate {fate.name!r} is pending but executed={fate.executed!r}: "
                         "a pending request has not reached the service yet (executed='nothing')")
