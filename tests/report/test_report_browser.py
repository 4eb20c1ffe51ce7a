"""The HTML report in a real headless browser: tables, explorer filters, a duplicate's timeline."""

from __future__ import annotations

import json
import re
from html import unescape

import pytest
from reportkit import Browser, BuiltReport, load

from limbo_plugin.report.html import episode_uid

pytestmark = pytest.mark.slow
"""A headless chromium per page: the slow set (.ci/run runs it)."""


def url(report: BuiltReport, fragment: str = "") -> str:
    return (report.out / "index.html").resolve().as_uri() + fragment


def test_every_table_and_figure_is_on_the_page(browser: Browser, real_report: BuiltReport
                                               ) -> None:
    dom = browser.dump_dom(url(real_report))
    summary = json.loads((real_report.out / "report.json").read_text())
    assert summary["tables"], "the real records produce tables"
    for table in summary["tables"]:
        assert f'data-table="{table}"' in dom
    for skipped in summary["skipped"]:
        assert f'data-skipped="{skipped}"' in dom
    for figure in ("dup_by_family", "dup_by_contract", "behaviour"):
        assert f'data-figure="{figure}"' in dom
    assert 'data-skipped="waiting_vs_keys"' in dom  # no wait_<Δ> policy in these records
    # The explorer script ran: the episode list is filled from data/index.js.
    episodes = len(load(real_report.outcome.loaded.sources).rows)
    assert f"{episodes} of {episodes} episodes" in dom


def test_the_explorer_filters(browser: Browser, real_report: BuiltReport) -> None:
    dom = browser.dump_dom(url(real_report, "#outcome=duplicate&family=late_commit"
                                            "&agent=scripted:verify_first"))
    expected = [r for r in real_report.records if r.family == "late_commit"
                and r.duplicates > 0 and r.agent == "scripted:verify_first"]
    assert expected, "verify_first duplicates under late commits"
    total = len(real_report.records)
    assert f"{len(expected)} of {total} episodes" in dom
    listed = re.findall(r'<tr data-uid="([0-9a-f]+)" data-outcome="([a-z]+)"', dom)
    assert len(listed) == len(expected)
    assert {outcome for _, outcome in listed} == {"duplicate"}
    rows = {episode_uid(r) for r in load(real_report.outcome.loaded.sources).rows
            if r.family == "late_commit" and r.duplicated and r.agent == "scripted:verify_first"}
    assert {uid for uid, _ in listed} == rows


def test_a_late_commit_duplicate_timeline_shows_why(browser: Browser, real_report: BuiltReport
                                                    ) -> None:
    rows = load(real_report.outcome.loaded.sources).rows
    row = next(r for r in rows if r.fault_mode == "timeout_late" and r.duplicated
               and r.agent == "scripted:verify_first" and r.template == "release_announcement")
    dom = unescape(browser.dump_dom(url(real_report, f"#episode={episode_uid(row)}")))
    assert f'data-episode="{episode_uid(row)}"' in dom
    detail = dom[dom.index('id="detail"'):]
    assert row.episode_id in detail
    # The late commit is on the timeline as its own event, and the re-issue is the duplicate.
    assert 'data-origin="late"' in detail
    assert re.search(r"the in-flight request of call \d+ \(timed out at t=[\d.]+ s\) "
                     r"committed late", detail)
    assert re.search(r"DUPLICATE of commit #\d+", detail)
    why = detail[detail.index('id="why"'):detail.index('id="timeline"')]
    assert "Why it duplicated" in why and "was committed 2×" in why
    assert "finished \"completed\" anyway" in why


def test_opening_an_unknown_episode_says_so(browser: Browser, real_report: BuiltReport) -> None:
    dom = browser.dump_dom(url(real_report, "#episode=000000000000"))
    assert "No episode 000000000000 in this report." in dom
