"""Helpers of the harness tests."""

from __future__ import annotations

import json
from typing import Any

import pytest


def records(project: pytest.Pytester) -> list[dict[str, Any]]:
    """The episode records a pytester run wrote."""
    path = project.path / "reports" / "episodes.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines() if line]
