"""Shared fixtures of the project's own test suite."""

from __future__ import annotations

import contextlib
import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
import scipy.stats  # noqa: F401  # imported once here: in-process pytester runs cannot re-import numpy

from limbo_plugin.extensions import DISABLE
from limbo_plugin.spec.registry import SpecRegistry
from limbo_plugin.testing.models import TextModel
from limbo_plugin.testing.openai_server import OpenAIServer

# Limbo's own suite tests Limbo: an extension installed in the same environment (a broken one
# included) stays out of it, and of every run it starts. The tests of extensions turn them
# back on for the runs they start (tests/plugin/test_extensions.py).
os.environ[DISABLE] = "1"


def preload_what_pytester_must_not_unload() -> None:
    """Import the PDF backend, and with it fontTools.subset, before any ``pytester`` test.

    A ``pytester`` test drops every module imported during it when it ends, but matplotlib
    keeps the PDF canvas class it loaded then. The next PDF is written by that stale canvas,
    whose fontTools.subset patched the old font-table classes, while fontTools re-imports its
    table modules afresh: ``'table_M_A_T_H_' object has no attribute 'closure_glyphs'`` in every
    later report test of that worker. Modules loaded before the first snapshot are never
    dropped."""
    with contextlib.suppress(ImportError):  # a light install without the report extra
        import matplotlib.backends.backend_pdf  # noqa: F401


preload_what_pytester_must_not_unload()

SPECS = Path(__file__).resolve().parents[1] / "specs"


def pytest_configure(config: pytest.Config) -> None:
    # pydantic warns about litellm's own TypedDicts each time their schemas are built; here
    # that is after every pytester test that imported litellm (it drops the modules, and the
    # next import builds them again). Nothing of Limbo's, and nothing a user's run shows.
    config.addinivalue_line(
        "filterwarnings",
        r"ignore:Items? '.*' on TypedDict class '\w+' (is|are) using the `ReadOnly` qualifier"
        r":UserWarning")
    config.addinivalue_line(
        "markers", "early: a test of a minute or so, started before the others (see "
        "pytest_collection_modifyitems)")


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Run the tests marked ``early`` first, in their collected order, the rest after them.

    Under ``-n 2`` a run lasts at least as long as its longest test, and longer when that test
    starts late: the other worker is left idle while it finishes. Started first (with
    ``--maxschedchunk 1``, .ci/run hands out one test at a time), the long tests overlap each
    other and the many short ones fill in around them. Runs after the ``-m``/``-k`` selection
    (trylast), so it only reorders what runs."""
    items.sort(key=lambda item: item.get_closest_marker("early") is None)  # stable


@pytest.fixture(scope="session")
def registry() -> SpecRegistry:
    return SpecRegistry.load(SPECS)


@pytest.fixture
def openai_server() -> Iterator[OpenAIServer]:
    """A running local OpenAI-compatible server (a fresh one per test, so recorded requests never
    leak between tests); set ``openai_server.model`` to the scripted model the test needs.

    The model-backed agent tests (tests/agents/) talk to it through real litellm calls over
    HTTP, so the whole client stack (request building, response parsing, error mapping) is
    exercised without a network or a key; tests/testing/ tests the server itself."""
    with OpenAIServer(TextModel()) as server:
        yield server


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


@pytest.fixture
def no_harnesses(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """A machine on which none of the harness CLIs is installed: an empty harness cache, and
    ``PATH`` without the folders that hold one."""
    from limbo_plugin.agents.harness_install import BUILT_IN, CACHE_ENV

    monkeypatch.setenv(CACHE_ENV, str(tmp_path / "empty-harness-cache"))
    kept = [d for d in os.environ.get("PATH", "").split(os.pathsep)
            if not any(shutil.which(name, path=d) for name in BUILT_IN)]
    monkeypatch.setenv("PATH", os.pathsep.join(kept))
