"""The API reference: pdoc builds it from the public names' docstrings with warnings as
errors (as .ci/run does), and every exported name, the spec registry and the report entry
points among them, is on the page."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

import limbo_plugin

pytest.importorskip("pdoc", reason="pdoc is in the dev extra (pip install -e '.[dev]')")


def build(package: str, out: Path, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-W", "error", "-m", "pdoc", "-d",
                           "restructuredtext", "-o", str(out), package],
                          capture_output=True, text=True, timeout=300, check=False, cwd=cwd)


def test_the_reference_builds_without_warnings_and_documents_every_export(tmp_path: Path
                                                                          ) -> None:
    done = build("limbo_plugin", tmp_path / "api")
    assert done.returncode == 0, done.stderr[-3000:]
    page = (tmp_path / "api" / "limbo_plugin.html").read_text(encoding="utf-8")
    documented = set(re.findall(r'<section id="([A-Za-z_]+)">', page))
    assert set(limbo_plugin.__all__) - {"__version__"} <= documented
    for name in ("SpecRegistry", "make_report", "summarize", "compare_runs", "run_gate"):
        assert name in limbo_plugin.__all__


def test_a_warning_fails_the_build(tmp_path: Path) -> None:
    package = tmp_path / "broken_api"
    package.mkdir()
    (package / "__init__.py").write_text('"""A package."""\n__all__ = ["missing"]\n')
    done = build("broken_api", tmp_path / "out", cwd=tmp_path)
    assert done.returncode != 0 and "does not resolve" in done.stderr
