"""mypy checks the whole package strictly: one global ``strict``, no module of the package
relaxed by an override; only untyped third-party libraries are let in (as Any, and allure's
untyped calls)."""

from __future__ import annotations

import tomllib
from pathlib import Path

PYPROJECT = Path(__file__).resolve().parents[1] / "pyproject.toml"


def test_mypy_is_strict_over_the_whole_package() -> None:
    mypy = tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))["tool"]["mypy"]
    assert mypy["strict"] is True
    assert mypy["files"] == ["limbo_plugin"]
    for override in mypy.get("overrides", []):
        modules = override["module"]
        modules = [modules] if isinstance(modules, str) else modules
        assert not [m for m in modules if m.startswith("limbo_plugin")], override
        assert set(override) <= {"module", "ignore_missing_imports"}, override
