"""Shared fixtures of the project's own test suite."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import scipy.stats  # noqa: F401  # imported once here: in-process pytester runs cannot re-import numpy

from limbo_plugin.spec.registry import SpecRegistry

SPECS = Path(__file__).resolve().parents[1] / "specs"


@pytest.fixture(scope="session")
def registry() -> SpecRegistry:
    return SpecRegistry.load(SPECS)


SMALL = """\
name: small
templates: [incident_open, invoice_batch]
instances: [0]
focal_writes: [ticket, charge_1]
modes: [none, timeout_post, timeout_late, redelivery]
"""


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    """A pytest project holding a copy of the specs and a small experiment (``--experiment
    small``), for running pytest with the Limbo plugin (pytester)."""
    shutil.copytree(SPECS, pytester.path / "specs")
    (pytester.path / "specs" / "experiments" / "small.yaml").write_text(SMALL)
    pytester.makeini("[pytest]\ntestpaths = specs\naddopts = -p no:cacheprovider -p no:benchmark\n")
    return pytester
