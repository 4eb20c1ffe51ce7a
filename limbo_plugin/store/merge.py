"""``limbo merge OUT IN…``: the record files of a sharded run as one file.

Shards run the same study's disjoint episodes (``--limbo-shard``), so their files together
are the unsharded run's. Merging is idempotent: a record present twice with the same content
(ignoring ``run_id``, which differs per run) is written once, so merging a shard twice, or
merging the output again with its inputs, changes nothing. Two *different* records of one
episode and configuration are a conflict, reported with both places: those are two runs of the
episode (repeat runs are compared with ``limbo report A B``, not merged).

Records that ended in an infrastructure error are superseded by a successful record of the same
episode (what ``--limbo-resume`` produces); a torn last line of a killed shard is skipped.
Lines are copied byte for byte, sorted as a serial run collects them, into a new file with the
permissions pytest gives a records file (0644 under the usual umask). OUT may not be one of the
inputs (a forgotten OUT would make the first shard the output); an existing OUT is moved into
``history/`` beside it first, as a fresh run moves its records, so a merge never destroys one.
Only records of this Limbo's schema version are merged.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

from limbo_plugin.records import RUN_FIELDS
from limbo_plugin.store.custody import RecordsLock, require_own_file
from limbo_plugin.store.read import RecordFileError, RecordScan, line_problem, parsed_lines

IGNORED = ("run_id",)
"""Fields that differ between runs of identical episodes and so do not make a conflict."""
ORDER = ("template", "instance", "focal_write", "fault_mode", "contract", "docs", "instruction",
         "condition", "operator", "agent")
"""The output order: a serial run's collection order."""


@dataclass(frozen=True)
class Place:
    source: int
    line: int
    offset: int
    length: int


class Identity(NamedTuple):
    """One recorded episode, as the store's reader identifies it
    (:func:`~limbo_plugin.store.view.record_identity`): the same world and configuration in
    two experiments, or in two arms of one, are two episodes, not a conflict."""

    experiment: str | None
    arm: str | None
    repeat: int
    episode_id: str
    fingerprint: str

    def described(self) -> str:
        where = "".join(f" in {kind} {value}" for kind, value in
                        (("experiment", self.experiment), ("arm", self.arm)) if value)
        repeat = f" (repeat {self.repeat})" if self.repeat else ""
        return f"episode {self.episode_id}{repeat}{where} ({self.fingerprint})"


@dataclass
class Kept:
    place: Place
    digest: str
    error: bool
    order: tuple[Any, ...]


@dataclass
class MergeResult:
    out: Path
    sources: list[Path]
    written: int = 0
    read: int = 0
    duplicates: int = 0
    superseded_errors: int = 0
    torn_lines: int = 0
    kept_previous: Path | None = None
    """Where the file that was at OUT before the merge was moved (``history/``)."""

    def lines(self) -> list[str]:
        out = [f"Merged {self.written} record(s) from {len(self.sources)} file(s) into "
               f"{self.out}."]
        if self.kept_previous is not None:
            out.append(f"The previous {self.out} is kept in {self.kept_previous}.")
        if self.duplicates:
            out.append(f"Dropped {self.duplicates} identical duplicate record(s).")
        if self.superseded_errors:
            out.append(f"Dropped {self.superseded_errors} infrastructure-error record(s) "
                       "superseded by a successful run of the same episode.")
        if self.torn_lines:
            out.append(f"Skipped {self.torn_lines} torn last line(s) of a run killed "
                       "mid-write.")
        return out


def _digest(record: dict[str, Any]) -> str:
    content = {k: v for k, v in record.items() if k not in IGNORED}
    text = json.dumps(content, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode()).hexdigest()


def parse_merged_line(raw: bytes) -> tuple[dict[str, Any] | None, str]:
    """One line as the merge reads it (its fields as JSON, to digest and order), or ``None``
    and what is wrong with it: the store's checks, and the fields the merge needs."""
    problem = line_problem(raw)
    if problem:
        return None, problem
    record = json.loads(raw)
    if not isinstance(record.get("episode_id"), str):
        return None, "not an episode record (no episode_id)"
    for name in (*RUN_FIELDS, *ORDER):
        if name not in record:
            return None, f"not an episode record (no {name!r} field)"
    return record, ""


def merge_records(out: str | Path, inputs: Sequence[str | Path]) -> MergeResult:
    """Merge ``inputs`` into ``out`` (see the module docstring for the rules)."""
    sources = [Path(p) for p in inputs]
    if not sources:
        raise RecordFileError("limbo merge needs at least one input record file")
    for path in sources:
        if not path.is_file():
            raise RecordFileError(f"{path}: no such record file")
    out = Path(out)
    for path in sources:
        if path.resolve() == out.resolve() or (out.exists() and os.path.samefile(path, out)):
            raise RecordFileError(f"{out} is also an input; give the merged file a new name "
                                  f"first: limbo merge OUT {' '.join(map(str, sources))}")
    require_own_file(out, "limbo merge OUT")
    with RecordsLock(out, option="limbo merge OUT"):
        return _merge(out, sources)


def _merge(out: Path, sources: list[Path]) -> MergeResult:
    result = MergeResult(out=out, sources=sources)
    kept: dict[Identity, Kept] = {}
    for source, path in enumerate(sources):
        scan: RecordScan[dict[str, Any]] = RecordScan(path)
        for line, record in parsed_lines(scan, parse_merged_line):
            result.read += 1
            identity = Identity(record.get("experiment"), record.get("arm"),
                                record.get("repeat") or 0, record["episode_id"],
                                "|".join(str(record[name]) for name in RUN_FIELDS))
            candidate = Kept(place=Place(source, line.number, line.offset, len(line.raw)),
                             digest=_digest(record), error=record.get("error") is not None,
                             order=tuple(record[name] for name in ORDER))
            _keep(kept, identity, candidate, result)
        result.torn_lines += scan.torn_at is not None
    records = sorted(kept.values(), key=lambda k: k.order)
    from limbo_plugin.store.files import rotate

    result.kept_previous = rotate(out)
    _write(result, records)
    return result


def _keep(kept: dict[Identity, Kept], identity: Identity, candidate: Kept,
          result: MergeResult) -> None:
    present = kept.get(identity)
    if present is None:
        kept[identity] = candidate
    elif present.digest == candidate.digest:
        result.duplicates += 1
    elif present.error or candidate.error:
        # An infrastructure error is not a result: a successful record supersedes it (a later
        # error supersedes an earlier one).
        result.superseded_errors += 1
        if present.error:
            kept[identity] = candidate
    else:
        a, b = present.place, candidate.place
        raise RecordFileError(
            f"{result.sources[a.source]}:{a.line} and {result.sources[b.source]}:{b.line} hold "
            f"different records of {identity.described()}: two runs of it, not two shards of "
            "one run; compare repeat runs with `limbo report A B` instead")


def _write(result: MergeResult, records: list[Kept]) -> None:
    result.out.parent.mkdir(parents=True, exist_ok=True)
    fd, temporary = tempfile.mkstemp(dir=result.out.parent, prefix=f".{result.out.name}.")
    handles = [path.open("rb") for path in result.sources]
    try:
        with os.fdopen(fd, "wb") as out:
            for kept in records:
                handle = handles[kept.place.source]
                handle.seek(kept.place.offset)
                out.write(handle.read(kept.place.length).rstrip(b"\r\n") + b"\n")
            out.flush()
            os.fsync(out.fileno())
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(temporary, 0o666 & ~umask)  # as pytest's own records file, not mkstemp's 0600
        os.replace(temporary, result.out)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
    finally:
        for handle in handles:
            handle.close()
    result.written = len(records)
