"""Reading record files for ``limbo report``: merging, de-duplication, errors, repeats."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from reportkit import load, record, trace, write

from limbo_plugin.report.load import read_raw_lines
from limbo_plugin.store.read import RecordFileError


def test_merges_files_drops_duplicates_and_errors_and_keeps_repeats(tmp_path: Path) -> None:
    a = record(template="t1", duplicated=True)
    b = record(template="t2")
    broken = record(template="t3", error="infrastructure error: provider down")
    first = write(tmp_path / "one.jsonl", [a, b, a.model_copy(update={"duplicates": 0}), broken])
    second = write(tmp_path / "two.jsonl", [record(template="t1"),
                                            record(template="t4", agent="scripted:beta"),
                                            record(template="t2", repeat=1, duplicated=True)])
    loaded = load([first, second])
    assert loaded.read == 7
    assert loaded.duplicates_dropped == 2  # t1 twice in one file, and again in the second
    assert loaded.errors_dropped == 1
    assert len(loaded.rows) == 3  # t1, t2 from the first file, t4 from the second
    assert {r.template for r in loaded.rows} == {"t1", "t2", "t4"}
    # Within a file the last copy wins: t1 was re-recorded without a duplicate.
    t1 = next(r for r in loaded.rows if r.template == "t1")
    assert t1.duplicates == 0 and t1.source == 0
    # Only the declared repeat of t2 is a repeat run; the second file's t1 is the same record.
    assert [(r.template, r.repeat, r.source) for r in loaded.repeats] == [("t2", 1, 1)]
    text = "\n".join(loaded.messages())
    assert "Dropped 2 duplicate record(s)" in text
    assert "Dropped 1 record(s) that ended in an infrastructure error" in text
    assert "Kept 1 repeat run(s)" in text


def test_two_experiments_on_one_world_are_never_repeats(tmp_path: Path) -> None:
    """E2 runs E1's vanilla configuration on E1's instance-0 worlds: read together, each
    experiment keeps its own episodes and neither is a repeat run of the other."""
    e1 = write(tmp_path / "e1.jsonl", [record(template=t, experiment="e1", duplicated=True)
                                       for t in ("t1", "t2")])
    e2 = write(tmp_path / "e2.jsonl", [record(template=t, experiment="e2")
                                       for t in ("t1", "t2")])
    loaded = load([e1, e2])
    assert loaded.repeats == [] and loaded.duplicates_dropped == 0
    assert sorted((r.experiment, r.template, r.duplicated) for r in loaded.rows) == [
        ("e1", "t1", True), ("e1", "t2", True), ("e2", "t1", False), ("e2", "t2", False)]


def test_the_lowest_repeat_feeds_the_tables(tmp_path: Path) -> None:
    runs = [record(experiment="e1", repeat=n, duplicated=n == 0) for n in (2, 0, 1)]
    loaded = load([write(tmp_path / "r.jsonl", runs)])
    (row,) = loaded.rows
    assert row.repeat == 0 and row.duplicated
    assert [r.repeat for r in loaded.repeats] == [1, 2]


def test_an_error_then_a_rerun_keeps_the_rerun(tmp_path: Path) -> None:
    path = write(tmp_path / "r.jsonl", [record(error="infrastructure error: x"), record()])
    loaded = load([path])
    assert len(loaded.rows) == 1 and loaded.errors_dropped == 1


def test_full_record_is_read_back_from_its_offset(tmp_path: Path) -> None:
    rows = [record(template=f"t{i}", trace=trace(("tickets_create", 0, 30, True, "agent")))
            for i in range(3)]
    path = write(tmp_path / "r.jsonl", rows)
    loaded = load([path])
    (line,) = read_raw_lines(loaded.sources, loaded.rows[1:2])
    full = json.loads(line)
    assert full["template"] == "t1"
    assert full["trace"][0]["tool"] == "tickets_create"


def test_first_action_after_the_fault(tmp_path: Path) -> None:
    calls = trace(("tickets_create", 0, 30, True, "agent"), ("tickets_list", 30, 31, False,
                                                              "harness"),
                  ("tickets_list", 31, 32, False, "agent"),
                  ("tickets_create", 32, 33, False, "agent"))
    reissue = trace(("tickets_create", 0, 30, True, "agent"),
                    ("tickets_create", 30, 31, False, "agent"))
    path = write(tmp_path / "r.jsonl", [record(template="a", trace=calls),
                                        record(template="b", trace=reissue),
                                        record(template="c", trace=reissue[:1])])
    first = {r.template: r.first_action for r in load([path]).rows}
    # Harness calls are not the agent's choice; the focal tool again is a re-issue.
    assert first == {"a": "tickets_list", "b": "reissue", "c": None}


def test_torn_last_line_is_skipped_and_counted(tmp_path: Path) -> None:
    path = write(tmp_path / "r.jsonl", [record()])
    with path.open("a") as handle:
        handle.write(record(template="t9").model_dump_json()[:50])
    loaded = load([path])
    assert len(loaded.rows) == 1 and loaded.torn_lines == 1
    assert "torn" in " ".join(loaded.messages())


def test_a_bad_line_in_the_middle_names_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    path.write_text(record().model_dump_json() + "\n{\"hello\": 1}\n" +
                    record(template="x").model_dump_json() + "\n")
    with pytest.raises(RecordFileError) as info:
        load([path])
    message = str(info.value)
    assert f"{path}:2: not an episode record" in message and "\n" not in message


def test_missing_file_and_no_files_are_clear_errors(tmp_path: Path) -> None:
    with pytest.raises(RecordFileError, match="no such record file"):
        load([tmp_path / "nope.jsonl"])
    with pytest.raises(RecordFileError, match="no record files given"):
        load([])


def test_a_newer_schema_version_is_refused(tmp_path: Path) -> None:
    path = write(tmp_path / "r.jsonl", [record(schema_version=99)])
    with pytest.raises(RecordFileError, match="schema version 99"):
        load([path])
