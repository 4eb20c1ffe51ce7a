"""Shared fixtures of the project's own test suite."""

from __future__ import annotations

from pathlib import Path

import pytest

from limbo_plugin.spec.registry import SpecRegistry

SPECS = Path(__file__).resolve().parents[1] / "specs"


@pytest.fixture(scope="session")
def registry() -> SpecRegistry:
    return SpecRegistry.load(SPECS)
