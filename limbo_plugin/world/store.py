"""Versioned tables: every write is a new version, so a read can see the world as of ``t − λ``."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

SEED_TIME = -1e9
"""Commit time of pre-existing records: visible to every read, however lagged."""

Row = dict[str, Any]


class VersionedTable:
    """Records keyed by id, each a list of ``(commit time, data or None if deleted)``."""

    def __init__(self) -> None:
        self._versions: dict[str, list[tuple[float, Row | None]]] = {}

    def put(self, record_id: str, data: Row, t: float) -> None:
        self._versions.setdefault(record_id, []).append((t, dict(data)))

    def delete(self, record_id: str, t: float) -> None:
        self._versions.setdefault(record_id, []).append((t, None))

    def __contains__(self, record_id: str) -> bool:
        return record_id in self._versions

    def current(self, record_id: str) -> Row | None:
        """Ground truth: the latest version, whatever its age."""
        versions = self._versions.get(record_id)
        return versions[-1][1] if versions else None

    def ever_existed(self, record_id: str) -> bool:
        return record_id in self._versions

    def as_of(self, record_id: str, at: float) -> Row | None:
        """The version committed strictly before ``at`` (what a read at ``at`` can see)."""
        latest: Row | None = None
        for t, data in self._versions.get(record_id, ()):
            if t < at:
                latest = data
            else:
                break
        return latest

    def visible(self, at: float) -> Iterator[tuple[str, Row, float]]:
        """``(id, data, created_at)`` for every record alive as of ``at``, in creation order."""
        for record_id, versions in self._versions.items():
            if versions[0][0] >= at:
                continue
            data = self.as_of(record_id, at)
            if data is not None:
                yield record_id, data, versions[0][0]

    def all_current(self) -> Iterator[tuple[str, Row]]:
        for record_id, versions in self._versions.items():
            if versions[-1][1] is not None:
                yield record_id, versions[-1][1]

    def created_at(self, record_id: str) -> float:
        return self._versions[record_id][0][0]


EDGE = re.compile(r"^[\W_]+|[\W_]+$")
"""Punctuation around a query term ("gateway," or "(refund)"), which is not part of it."""

SUFFIXES = (("ies", "y"), ("sses", "ss"), ("ches", "ch"), ("shes", "sh"), ("xes", "x"),
            ("ing", ""), ("ed", ""), ("es", "e"), ("s", ""))
"""Inflections a term is also looked for without (plural, past, progressive), longest first."""

MIN_STEM = 3


def terms(query: str) -> list[str]:
    """The case-folded terms of ``query``: its whitespace-separated parts without surrounding
    punctuation. A query of punctuation alone has none."""
    found = (EDGE.sub("", part).casefold() for part in query.split())
    return [term for term in found if term]


def stem(term: str) -> str:
    """``term`` without one inflectional ending ("refunds", "refunded" → "refund"), or itself."""
    for suffix, replacement in SUFFIXES:
        if term.endswith(suffix):
            if suffix == "s" and term.endswith("ss"):
                return term  # "class", "address": not plurals
            base = term[: len(term) - len(suffix)] + replacement
            if len(base) >= MIN_STEM:
                return base
    return term


def search_matches(query: str, *texts: str) -> bool:
    """Search-engine semantics (SPEC §1.4; paper §4: "a record matches when every query term
    occurs in its fields"): every term of the query occurs, ignoring case, somewhere in one of
    the fields — inside a longer word too ("maint" finds "maintenance", "gate" "Gateway") — or,
    failing that, its stem does ("refunds" finds "Refund" and "refunded"). A query with no
    terms finds nothing. The tool descriptions state this rule to the agent."""
    wanted = terms(query)
    fields = [t.casefold() for t in texts if t]
    return bool(wanted) and all(
        any(term in f for f in fields) or any(stem(term) in f for f in fields)
        for term in wanted)
