"""pytest rewrites the asserts of every module of a distribution with a ``pytest11`` entry point.
Limbo takes itself out of that: a rewritten module is compiled by pytest on every start-up
wherever pytest may not write byte code (``PYTHONDONTWRITEBYTECODE``, a read-only install)."""

from __future__ import annotations

import json
import sys

import pytest

# A distribution on the path that lists Limbo's sources and declares a pytest11 entry point:
# what an installed wheel, or an editable install run from its source tree, looks like to pytest.
METADATA = "Metadata-Version: 2.1\nName: limbo-rewrite-probe\nVersion: 0\n"
RECORD = "limbo_plugin/__init__.py,,\nlimbo_plugin/episode.py,,\nlimbo_rewrite_probe.py,,\n"
ENTRY_POINTS = "[pytest11]\nlimbo_rewrite_probe = limbo_rewrite_probe\n"

RECORD_LOADERS = """
import json
import sys


def pytest_collection_finish(session):
    loaders = {name: type(getattr(module, "__loader__", None)).__name__
               for name, module in list(sys.modules.items())
               if name.startswith(("limbo_plugin", "limbo_rewrite_probe"))}
    with open("loaders.json", "w") as out:
        json.dump(loaders, out)
"""


# A script that imports Limbo first and then runs pytest in the same process: the package's
# __init__ ran before pytest marked it, so the plugin module must take it out again.
IMPORT_THEN_RUN = """
import sys

import limbo_plugin
import pytest

sys.exit(pytest.main(["--experiment", "small", "--collect-only", "-q"]))
"""


def _probe_project(project: pytest.Pytester) -> None:
    info = project.path / "limbo_rewrite_probe-0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(METADATA)
    (info / "RECORD").write_text(RECORD)
    (info / "entry_points.txt").write_text(ENTRY_POINTS)
    (project.path / "limbo_rewrite_probe.py").write_text('"""Marks Limbo for rewriting."""\n')
    project.makeconftest(RECORD_LOADERS)


@pytest.mark.parametrize("how", ["pytest", "a script importing limbo_plugin first"])
def test_limbo_modules_are_imported_without_pytest_rewriting_them(
        project: pytest.Pytester, how: str) -> None:
    _probe_project(project)

    if how == "pytest":
        result = project.runpytest_subprocess("--experiment", "small", "--collect-only", "-q")
    else:
        script = project.makepyfile(run_limbo=IMPORT_THEN_RUN)
        result = project.run(sys.executable, str(script))

    assert result.ret == pytest.ExitCode.OK
    loaders = json.loads((project.path / "loaders.json").read_text())
    assert loaders["limbo_rewrite_probe"] == "AssertionRewritingHook", (
        "the probe distribution's own module is rewritten, so pytest did mark the distribution")
    submodules = {name: loader for name, loader in loaders.items()
                  if name.startswith("limbo_plugin.")}
    assert "limbo_plugin.plugin.items" in submodules
    rewritten = [name for name, loader in submodules.items() if loader == "AssertionRewritingHook"]
    # Run by pytest, only the package's __init__ and the leaf module it opts out with go through
    # the hook; imported first, only the plugin module (the entry point, imported before it can
    # opt out again).
    assert rewritten == (["limbo_plugin._rewriting"] if how == "pytest"
                         else ["limbo_plugin.plugin"])
