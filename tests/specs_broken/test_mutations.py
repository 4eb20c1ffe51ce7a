"""The mutation corpus (``mutations/spec_edits.yaml``): one change each to a real spec, each a
one-line error that names the file, the line and what would be valid, before any episode runs.

Where the corpus beside it holds whole broken files, this one holds small edits of the shipped
specs, which keeps each case to one line and each case in step with the tree it breaks.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from test_broken_specs import (
    LIMIT_S,
    SPECS,
    load_as_a_run_does,
    one_clear_error,
    time_limit,
    tree_with,
)

from limbo_plugin.errors import SpecError

HERE = Path(__file__).resolve().parent
CORPUS = HERE / "mutations" / "spec_edits.yaml"
MUTATIONS: list[dict[str, Any]] = yaml.safe_load(CORPUS.read_text("utf-8"))


def test_every_mutation_changes_text_the_tree_has() -> None:
    for case in MUTATIONS:
        assert set(case) == {"target", "old", "new", "says"}, case
        assert case["old"] in (SPECS / case["target"]).read_text("utf-8"), case
    assert len(MUTATIONS) >= 250


@pytest.mark.parametrize("case", MUTATIONS, ids=lambda c: f"{c['target']}:{c['new'].strip()}")
def test_a_mutated_spec_is_one_clear_error(case: dict[str, Any], tmp_path: Path) -> None:
    target = case["target"]
    text = (SPECS / target).read_text("utf-8").replace(case["old"], case["new"], 1)
    root = tree_with(tmp_path, target, text.encode("utf-8"))
    message = one_clear_error(root, target)
    assert case["says"] in message, message


# -- links that lead nowhere -------------------------------------------------------------------
def test_a_service_file_that_links_to_itself_is_one_line(tmp_path: Path) -> None:
    root = tree_with(tmp_path, "pools.yaml", (SPECS / "pools.yaml").read_bytes())
    (root / "services" / "loop.yaml").symlink_to("loop.yaml")
    with time_limit(LIMIT_S), pytest.raises(SpecError) as info:
        load_as_a_run_does(root, "pools.yaml")
    assert str(info.value) == (f"{root / 'services' / 'loop.yaml'}: cannot read file: a "
                               "symbolic link that leads nowhere (a loop, or its target is gone)")


def test_a_run_over_a_looping_spec_or_specs_option_says_so_once(
        pytester: pytest.Pytester) -> None:
    """Under pytest: the broken file is the one line of the collection error (no traceback,
    no INTERNALERROR, no second line blaming the test paths); a --limbo-specs that loops is a
    usage error."""
    import shutil

    shutil.copytree(SPECS, pytester.path / "specs")
    pytester.makeini("[pytest]\ntestpaths = specs\n")
    (pytester.path / "specs" / "services" / "loop.yaml").symlink_to("loop.yaml")
    result = pytester.runpytest_subprocess("--experiment", "smoke", "-p", "no:cacheprovider")
    output = result.stdout.str() + result.stderr.str()
    assert "INTERNALERROR" not in output and "Traceback" not in output, output[-3000:]
    assert "specs/services/loop.yaml: cannot read file: a symbolic link that leads nowhere" \
        in output
    assert "no Limbo episode was collected" not in output, output[-3000:]
    (pytester.path / "looping").symlink_to("looping")
    result = pytester.runpytest_subprocess("--limbo-specs", "looping", "-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "ERROR: --limbo-specs looping: a symbolic link loop" in result.stderr.str()
    assert "Traceback" not in result.stderr.str()


def test_a_tree_without_the_finish_tool_is_refused(tmp_path: Path) -> None:
    """Without ``services/general.yaml`` no episode can end, yet every one used to pass."""
    root = tree_with(tmp_path, "pools.yaml", (SPECS / "pools.yaml").read_bytes())
    (root / "services" / "general.yaml").unlink()
    with time_limit(LIMIT_S), pytest.raises(SpecError) as info:
        load_as_a_run_does(root, "pools.yaml")
    assert "no service declares the 'finish' tool an agent ends its episode with" in \
        str(info.value) and "\n" not in str(info.value)
