"""``limbo runs`` reads each line as the summary does (one view of an episode): a record that
ended in an infrastructure error is an episode with an error, not an unreadable line."""

from __future__ import annotations

from pathlib import Path

import pytest
from reportkit import cell, record, write

from limbo_plugin.cli import main
from limbo_plugin.store.runs import describe


def test_an_errored_record_is_counted_as_an_error(tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    errored = record(template="t9", error="infrastructure error: the provider is down")
    errored = errored.model_copy(update={"ts": None, "eos": None, "overclaim": None})
    path = write(tmp_path / "episodes.jsonl", [*cell(4, 1), errored])
    info = describe(path)
    assert (info.episodes, info.errors, info.unreadable, info.passed) == (5, 1, 0, 3)
    assert info.pass_rate == "75.0%"
    assert main(["runs", str(path)]) == 0
    out = capsys.readouterr().out
    assert "5 (1 errors)" in out and "unreadable" not in out
