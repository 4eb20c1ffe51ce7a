"""A file written in one step is its old content or its new one: a write that fails midway (a
full disk; here, text that cannot be encoded) leaves the old file and no temporary beside it."""

from __future__ import annotations

from pathlib import Path

import pytest

from limbo_plugin.atomic_files import write_text_atomically


def test_a_failed_write_leaves_the_old_content_and_nothing_else(tmp_path: Path) -> None:
    target = tmp_path / "episodes.summary.json"
    write_text_atomically(target, '{"families": []}\n')
    with pytest.raises(UnicodeEncodeError):
        write_text_atomically(target, "x" * 100_000 + "\udc80")  # fails after 100 kB
    assert target.read_text() == '{"families": []}\n'
    assert [p.name for p in tmp_path.iterdir()] == [target.name]


def test_a_summary_cut_short_is_never_left_in_place(tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """The summary writer goes through it: a disk that fills while the summary is written
    leaves the previous summary, not an empty file."""
    import os

    from limbo_plugin.report import summary as summary_module
    from limbo_plugin.report.aggregate import summarize

    records = tmp_path / "episodes.jsonl"
    json_path = tmp_path / "episodes.summary.json"
    json_path.write_text('{"previous": true}\n')

    def full(fd: int) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "fsync", full)
    with pytest.raises(OSError):
        summary_module.write_summary(summarize([], family_order=()), records)
    assert json_path.read_text() == '{"previous": true}\n'
    assert sorted(p.name for p in tmp_path.iterdir()) == ["episodes.summary.json"]
