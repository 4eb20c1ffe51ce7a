"""Fixtures of the report tests: a report built from real scripted episodes, a browser, and a
pytest project for end-to-end runs."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from reportkit import Browser, BuiltReport, find_chromium

from limbo_plugin.episode import run_episode
from limbo_plugin.experiments import iter_worlds
from limbo_plugin.report.build import make_report
from limbo_plugin.runconfig import RunConfig
from limbo_plugin.spec.registry import SpecRegistry

SPECS = Path(__file__).resolve().parents[2] / "specs"
AGENTS = ("scripted:blind_retry", "scripted:verify_first")
MODES = ["none", "timeout_pre", "timeout_post", "timeout_late", "http500_post", "redelivery"]


@pytest.fixture(scope="session")
def real_report(registry: SpecRegistry, tmp_path_factory: pytest.TempPathFactory
                ) -> BuiltReport:
    """Real episodes of two scripted agents on two templates, and the report made from them."""
    root = tmp_path_factory.mktemp("real-report")
    keys = list(iter_worlds(registry, ["release_announcement", "incident_open"], [0], "all",
                            MODES))
    records = [run_episode(key, RunConfig(agent=agent), registry=registry)
               for agent in AGENTS for key in keys]
    path = root / "episodes.jsonl"
    path.write_text("".join(r.model_dump_json() + "\n" for r in records), encoding="utf-8")
    return BuiltReport(records, make_report([path], registry, root / "report"))


@pytest.fixture
def browser(tmp_path: Path) -> Browser:
    executable = find_chromium()
    if executable is None:
        pytest.skip("no chromium on this machine (apt-get install -y chromium; .ci/run "
                    "installs it)")
    return Browser(executable, tmp_path / "chromium-profile")


@pytest.fixture(scope="module")
def playwright_chromium() -> Iterator[Any]:
    """Debian's chromium driven by Playwright (over the DevTools protocol): viewports of a
    given size, navigation, scrolling and geometry, one browser per test module. Not one per
    session: Playwright's sync API keeps an event loop running in the thread while it is open,
    and a later test of another module in the same worker (``asyncio.run``, ``anyio.run``)
    would then fail with "Cannot run the event loop while another loop is running"."""
    executable = find_chromium()
    if executable is None:
        pytest.skip("no chromium on this machine (apt-get install -y chromium; .ci/run "
                    "installs it)")
    sync_api = pytest.importorskip("playwright.sync_api",
                                   reason="pip install -e '.[dev]' -c constraints.txt")
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=executable,
                                             args=["--no-sandbox", "--disable-gpu"])
        yield browser
        browser.close()


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    """A pytest project holding a copy of the specs and a small experiment."""
    shutil.copytree(SPECS, pytester.path / "specs")
    (pytester.path / "specs" / "experiments" / "tiny.yaml").write_text(
        "name: tiny\ntemplates: [incident_open, cross_post]\ninstances: [0]\n"
        "focal_writes: [ticket, post_x]\nmodes: [none, timeout_post, timeout_late, redelivery]\n")
    pytester.makeini("[pytest]\ntestpaths = specs\n"
                     "addopts = -p no:cacheprovider -p no:benchmark\n")
    return pytester
