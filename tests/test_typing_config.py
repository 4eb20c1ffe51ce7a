"""mypy checks the whole package strictly: one global ``strict``, no module of the package
relaxed by an override; only untyped third-party libraries are let in (as Any, and allure's
untyped calls)."""

from __future__ import annotations

import configparser
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PYPROJECT = ROOT / "pyproject.toml"


def test_mypy_is_strict_over_the_whole_package() -> None:
    mypy = tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))["tool"]["mypy"]
    assert mypy["strict"] is True
    assert mypy["files"] == ["limbo_plugin"]
    for override in mypy.get("overrides", []):
        modules = override["module"]
        modules = [modules] if isinstance(modules, str) else modules
        assert not [m for m in modules if m.startswith("limbo_plugin")], override
        assert set(override) <= {"module", "ignore_missing_imports"}, override


def test_the_tests_are_type_checked_by_ci_with_the_packages_untyped_libraries() -> None:
    """``.ci/run`` runs mypy over tests/ (``.ci/mypy-tests``, tests/mypy.ini): not strict, but
    with the same plugin and the same untyped libraries let in as the package's check."""
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert ci.index("python -m mypy ||") < ci.index("bash .ci/mypy-tests ||")
    assert "tests/mypy.ini" in (ROOT / ".ci" / "mypy-tests").read_text(encoding="utf-8")
    tests = configparser.ConfigParser()
    tests.read(ROOT / "tests" / "mypy.ini", encoding="utf-8")
    assert not tests["mypy"].getboolean("strict", fallback=False)
    package = tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))["tool"]["mypy"]
    assert tests["mypy"]["plugins"].split(",") == package["plugins"]
    untyped = {module for override in package["overrides"] if override.get("ignore_missing_imports")
               for module in override["module"]}
    let_in = {section.removeprefix("mypy-") for section in tests.sections()
              if section != "mypy" and tests[section].getboolean("ignore_missing_imports")}
    assert {m for s in let_in for m in s.split(",")} == untyped
