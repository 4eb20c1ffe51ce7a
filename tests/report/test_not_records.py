"""A file that holds no episode records, given where records are expected: one line that says
what the line is, not a schema version it never had."""

from __future__ import annotations

from pathlib import Path

import pytest

from limbo_plugin.cli import main

CASES = {
    "a JSON object of something else": ('{"not": "a record"}\n',
                                        ":1: not an episode record (no schema_version or "
                                        "episode_id field)"),
    "a record of another schema": ('{"episode_id": "x", "schema_version": 1}\n',
                                   ":1: record schema version 1; this Limbo reads version"),
    "a record from before versions": ('{"episode_id": "x"}\n',
                                      ":1: record schema version None; this Limbo reads"),
    "no JSON object": ("[1, 2]\n", ":1: not an episode record (not a JSON object)"),
}


@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("command", ["summary", "compare"])
def test_a_file_of_no_records_is_named_for_what_it_holds(
        case: str, command: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    content, message = CASES[case]
    path = tmp_path / "given.jsonl"
    path.write_text(content)
    args = [command, str(path)] + ([str(path)] if command == "compare" else [])
    assert main(args) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err, err
    assert f"{path}{message}" in err, err
