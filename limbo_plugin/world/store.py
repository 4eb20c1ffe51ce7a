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


WORD = re.compile(r"[^\W_]+")
"""A search term: a maximal run of letters and digits (any script). Everything else, spaces,
punctuation and underscores alike, separates terms."""


def words(text: str) -> set[str]:
    """The case-folded words of ``text``."""
    return {w.casefold() for w in WORD.findall(text)}


def search_matches(query: str, *texts: str) -> bool:
    """Search-engine semantics (SPEC §1.4): every query term occurs, case-insensitively, in one
    of the fields. Query and fields are split into words the same way and a term must equal a
    word of a field: "gate" does not find "Gateway", "ceo@acme.example" finds its three words.
    A query with no words finds nothing."""
    terms = words(query)
    fields = [words(t) for t in texts if t]
    return bool(terms) and all(any(term in f for f in fields) for term in terms)
