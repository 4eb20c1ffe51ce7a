"""Errors from the file system read as one line naming the path and what went wrong, never
Python's bare ``[Errno N] …``."""

from __future__ import annotations

import errno
import os

import pytest

from limbo_plugin.errors import os_error_line


def test_an_os_error_names_its_path_and_reason_without_its_number(tmp_path) -> None:
    os.chdir(tmp_path)
    error = FileExistsError(errno.EEXIST, os.strerror(errno.EEXIST), str(tmp_path / "history"))
    assert os_error_line(error) == f"history: {os.strerror(errno.EEXIST)}"
    moved = OSError(errno.EXDEV, os.strerror(errno.EXDEV), "a.jsonl", None, "/elsewhere/b.jsonl")
    assert os_error_line(moved) == f"a.jsonl -> /elsewhere/b.jsonl: {os.strerror(errno.EXDEV)}"
    assert "Errno" not in os_error_line(OSError(errno.ENOSPC, os.strerror(errno.ENOSPC)))


def test_a_file_where_the_history_folder_goes_is_one_line(project: pytest.Pytester) -> None:
    select = ["--experiment", "small", "-k", "incident_open and timeout_post"]
    project.runpytest_subprocess(*select).assert_outcomes(passed=1)
    (project.path / "reports" / "history").write_text("not a folder\n")
    result = project.runpytest_subprocess(*select)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    line = result.stderr.str().strip().splitlines()[-1]
    assert line == ("ERROR: reports/history is a file: Limbo keeps the earlier runs' records in "
                    "a folder of that name; move the file away"), line
    assert "Errno" not in result.stderr.str()
