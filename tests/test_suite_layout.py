"""The suite collects in any order: a test module takes shared helpers from a ``*kit`` module,
never ``from conftest import …`` (which finds whichever ``conftest`` was imported first)."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

TESTS = Path(__file__).resolve().parent


def test_no_test_module_imports_a_conftest() -> None:
    offenders = []
    for path in sorted(TESTS.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                names = [node.module or ""]
            else:
                continue
            if any(name.split(".")[-1] == "conftest" for name in names):  # tests.x.conftest too
                offenders.append(f"{path.relative_to(TESTS)}:{node.lineno}")
    assert not offenders


def test_a_report_test_collects_after_a_validity_test() -> None:
    """The order that broke: another folder's conftest imported first."""
    done = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q",
                           "-p", "no:randomly", "tests/validity/test_propositions.py",
                           "tests/report/test_report_cli.py"],
                          cwd=TESTS.parent, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert "tests/report/test_report_cli.py::" in done.stdout


ELSEWHERE = {"grading": "validity", "spec": "specs_broken"}
"""Packages whose tests are in a folder named for what they check (ARCHITECTURE.md); the
experiments package's at the top, since the plugin reads every item under a folder named
``experiments`` as an episode of an experiment spec."""


def test_every_package_has_its_test_folder() -> None:
    """The suite mirrors the package: ``tests/<package>/`` for each ``limbo_plugin/<package>/``."""
    packages = {p.parent.name for p in (TESTS.parent / "limbo_plugin").glob("*/__init__.py")}
    assert len(packages) > 10
    assert sorted(p for p in packages if not (TESTS / ELSEWHERE.get(p, p)).is_dir()) == []
