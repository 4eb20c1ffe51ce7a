"""The mutation corpus (``mutations/spec_edits.yaml``): one change each to a real spec, each a
one-line error that names the file, the line and what would be valid, before any episode runs.

Where the corpus beside it holds whole broken files, this one holds small edits of the shipped
specs, which keeps each case to one line and each case in step with the tree it breaks.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml
from test_broken_specs import LIMIT_S, SPECS, load_as_a_run_does, time_limit, tree_with

from limbo_plugin.errors import SpecError

HERE = Path(__file__).resolve().parent
CORPUS = HERE / "mutations" / "spec_edits.yaml"
MUTATIONS: list[dict[str, Any]] = yaml.safe_load(CORPUS.read_text("utf-8"))


def test_every_mutation_changes_text_the_tree_has() -> None:
    for case in MUTATIONS:
        assert set(case) == {"target", "old", "new", "says"}, case
        assert case["old"] in (SPECS / case["target"]).read_text("utf-8"), case
    assert len(MUTATIONS) >= 60


@pytest.mark.parametrize("case", MUTATIONS, ids=lambda c: f"{c['target']}:{c['new'].strip()}")
def test_a_mutated_spec_is_one_clear_error(case: dict[str, Any], tmp_path: Path) -> None:
    target = case["target"]
    text = (SPECS / target).read_text("utf-8").replace(case["old"], case["new"], 1)
    root = tree_with(tmp_path, target, text.encode("utf-8"))
    with time_limit(LIMIT_S), pytest.raises(SpecError) as info:
        load_as_a_run_does(root, target)
    message = str(info.value)
    assert "\n" not in message and "Traceback" not in message, message
    assert Path(info.value.file).resolve() == (root / target).resolve(), message
    assert re.match(rf".*{re.escape(Path(target).name)}:\d+:", message), message
    assert case["says"] in message, message
