"""The explorer in a real headless chromium at 1280, 1440 and 1920 px: nothing clipped or
wrapped mid-id, anchors below the sticky header, filter counts that follow the other filters,
the id pytest prints in ``#episode=``, and the comparison view. Screenshots of each width are
taken (and kept in ``$LIMBO_SCREENSHOTS`` when set, to look at)."""

from __future__ import annotations

import json
import os
import re
import shutil
import struct
import subprocess
from html import unescape
from pathlib import Path

import pytest
from reportkit import Browser, BuiltReport
from statsmodels.stats.multitest import multipletests

from limbo_plugin.records import make_test_id
from limbo_plugin.report.html import episode_uid
from limbo_plugin.stats import mcnemar_exact

pytestmark = pytest.mark.slow
WIDTHS = (1280, 1440, 1920)

CHECK = """
window.addEventListener('load', function () { setTimeout(function () {
  var out = {};
  var header = document.querySelector('header.top').getBoundingClientRect().bottom;
  var browser = document.querySelector('.browser');
  var inner = browser.getBoundingClientRect().left + browser.clientWidth;
  out.clippedSelects = Array.prototype.filter.call(
    document.querySelectorAll('#filters select, #filters input'),
    function (s) { return s.getBoundingClientRect().right > inner + 0.5; }).length;
  out.clippedDup = Array.prototype.filter.call(
    document.querySelectorAll('#episodes tbody td:last-child, #episodes thead th:last-child'),
    function (td) { return td.getBoundingClientRect().right > inner + 0.5; }).length;
  out.headerOverlap = Array.prototype.filter.call(
    document.querySelectorAll('#episodes thead th'), function (th) {
      return th.scrollWidth > th.clientWidth + 1 && getComputedStyle(th).overflow !== 'hidden';
    }).length;
  var detail = document.getElementById('detail').getBoundingClientRect();
  out.wideTables = Array.prototype.filter.call(
    document.querySelectorAll('#detail .columns table'),
    function (t) { return t.getBoundingClientRect().right > detail.right + 0.5; }).length;
  out.splitIds = Array.prototype.filter.call(document.querySelectorAll('#ledger .id'),
    function (span) { return span.getClientRects().length > 1; }).length;
  out.ids = document.querySelectorAll('#ledger .id').length;
  var first = document.querySelector('article.table');
  first.scrollIntoView();
  out.tocTop = first.querySelector('h3').getBoundingClientRect().top - header;
  var rows = document.querySelectorAll('#episodes tbody tr');
  window.scrollTo(0, document.body.scrollHeight);
  rows[rows.length - 1].click();
  setTimeout(function () {
    out.titleTop = document.querySelector('#detail h3').getBoundingClientRect().top -
      document.querySelector('header.top').getBoundingClientRect().bottom;
    var pre = document.createElement('pre');
    pre.id = 'layout-check';
    pre.textContent = JSON.stringify(out);
    document.body.appendChild(pre);
  }, 500);
}, 500); });
"""


def chromium(browser: Browser, width: int, url: str, *, screenshot: Path | None = None,
             height: int = 1000) -> str:
    mode = [f"--screenshot={screenshot}"] if screenshot else ["--virtual-time-budget=8000",
                                                               "--dump-dom"]
    done = subprocess.run(
        [browser.executable, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         f"--user-data-dir={browser.profile}", "--hide-scrollbars",
         f"--window-size={width},{height}", *mode, url],
        capture_output=True, text=True, timeout=180, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


def instrumented(report: BuiltReport, tmp_path: Path) -> Path:
    copy = tmp_path / "report"
    shutil.copytree(report.out, copy)
    (copy / "layout-check.js").write_text(CHECK)
    index = copy / "index.html"
    index.write_text(index.read_text().replace(
        '<script src="assets/explorer.js"></script>',
        '<script src="assets/explorer.js"></script>\n<script src="layout-check.js"></script>'))
    return index


def png_size(path: Path) -> tuple[int, int]:
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    return struct.unpack(">II", data[16:24])


@pytest.mark.parametrize("width", WIDTHS)
def test_layout_at_common_widths(browser: Browser, real_report: BuiltReport, tmp_path: Path,
                                 width: int) -> None:
    rows = real_report.outcome.loaded.rows
    duplicated = next(r for r in rows if r.duplicated and r.fault_mode == "timeout_late")
    index = instrumented(real_report, tmp_path)
    dom = chromium(browser, width, index.as_uri() + f"#episode={episode_uid(duplicated)}")
    found = re.search(r'<pre id="layout-check">(.*?)</pre>', dom)
    assert found, dom[-1500:]
    check = json.loads(unescape(found.group(1)))
    assert check["clippedSelects"] == 0, "every filter select fits its panel"
    assert check["clippedDup"] == 0, "the list's dup column is not cut off"
    assert check["headerOverlap"] == 0
    assert check["wideTables"] == 0, "the ledger fits the detail pane"
    assert check["ids"] > 0 and check["splitIds"] == 0, "no ledger id wraps inside itself"
    assert check["tocTop"] >= 0, "a table-of-contents target is not under the sticky header"
    assert check["titleTop"] >= 0, "the opened episode's title is not under the sticky header"
    # A screenshot of the explorer at this width (the page without the tables above it, so
    # the explorer is in view without scrolling).
    page = tmp_path / "report" / "explorer.html"
    html, cut = re.subn(r'<section id="results">.*?</section>\s*<section id="more">.*?'
                        r'</section>', "", index.read_text(), flags=re.S)
    assert cut == 1
    page.write_text(html.replace('<script src="layout-check.js"></script>', ""))
    shot = tmp_path / f"explorer-{width}.png"
    chromium(browser, width, page.as_uri() + "#family=late_commit&compare=agent"
             "&a=scripted:verify_first&b=scripted:blind_retry", screenshot=shot, height=1400)
    assert png_size(shot) == (width, 1400) and shot.stat().st_size > 20_000
    keep = os.environ.get("LIMBO_SCREENSHOTS")
    if keep:
        Path(keep).mkdir(parents=True, exist_ok=True)
        shutil.copy(shot, Path(keep) / shot.name)


def test_filter_counts_follow_the_other_filters(browser: Browser, real_report: BuiltReport,
                                                ) -> None:
    dom = browser.dump_dom((real_report.out / "index.html").resolve().as_uri()
                           + "#family=late_commit")
    rows = real_report.outcome.loaded.rows
    late = [r for r in rows if r.family == "late_commit"]
    duplicate = sum(1 for r in late if r.duplicated)
    assert 0 < duplicate < sum(1 for r in rows if r.duplicated)
    assert re.search(rf'<option value="duplicate"[^>]*>duplicate \({duplicate}\)</option>', dom)
    # The family select itself counts what the other filters (none here) leave.
    assert re.search(rf'<option value="late_commit"[^>]*>late_commit \({len(late)}\)</option>',
                     dom)


def test_episode_links_take_the_id_pytest_prints(browser: Browser, real_report: BuiltReport
                                                 ) -> None:
    row = next(r for r in real_report.outcome.loaded.rows
               if r.agent == "scripted:blind_retry" and r.duplicated)
    test_id = make_test_id(row.episode_id, row, row.repeat)
    base = (real_report.out / "index.html").resolve().as_uri()
    for given in (test_id, f"specs/experiments/default.yaml::{test_id}", episode_uid(row)):
        dom = browser.dump_dom(base + "#episode=" + given)
        assert f'data-episode="{episode_uid(row)}"' in dom, given
        assert "in this report" not in dom
    missing = browser.dump_dom(base + "#episode=no-such-episode")
    assert "No episode no-such-episode in this report" in missing


def test_an_error_clears_when_the_user_navigates_on(browser: Browser, real_report: BuiltReport,
                                                    tmp_path: Path) -> None:
    copy = tmp_path / "report"
    shutil.copytree(real_report.out, copy)
    (copy / "go.js").write_text(
        "window.addEventListener('load', function () { setTimeout(function () {"
        "var s = document.querySelector('#filters select[name=family]');"
        "s.value = 'late_commit'; s.dispatchEvent(new Event('change')); }, 300); });")
    index = copy / "index.html"
    index.write_text(index.read_text().replace(
        '<script src="assets/explorer.js"></script>',
        '<script src="assets/explorer.js"></script>\n<script src="go.js"></script>'))
    dom = browser.dump_dom(index.as_uri() + "#episode=no-such-episode")
    assert "No episode" not in dom and "Select an episode." in dom
    assert "family=late_commit" not in dom or "episode=no-such" not in dom


def test_the_comparison_view(browser: Browser, real_report: BuiltReport) -> None:
    a, b = "scripted:verify_first", "scripted:blind_retry"
    dom = unescape(browser.dump_dom((real_report.out / "index.html").resolve().as_uri()
                                    + f"#compare=agent&a={a}&b={b}"))
    rows = real_report.outcome.loaded.rows
    side_a = {r.episode_id: r for r in rows if r.agent == a}
    counts: dict[str, list[int]] = {}
    flipped = set()
    for r in rows:
        if r.agent != b or r.episode_id not in side_a:
            continue
        old = side_a[r.episode_id]
        c = counts.setdefault(r.family, [0, 0, 0])
        c[0] += 1
        if r.duplicated and not old.duplicated:
            c[1] += 1
            flipped.add(episode_uid(r))
        if old.duplicated and not r.duplicated:
            c[2] += 1
    assert flipped, "blind_retry duplicates where verify_first does not"
    table = dom[dom.index('id="comparison"'):dom.index("</table>", dom.index('id="comparison"'))]
    families = sorted(counts)
    raw = [mcnemar_exact(counts[f][1], counts[f][2]) for f in families]
    adjusted = dict(zip(families, multipletests(raw, method="holm")[1], strict=True))
    assert "exact McNemar p" in table and "Holm p" in table
    for family, (pairs, worse, better) in counts.items():
        row = re.search(rf'data-family="{family}"><td>{family}</td><td class="num">(\d+)</td>'
                        rf'<td class="num">(\d+)</td><td class="num">(\d+)</td>'
                        rf'<td class="num">([^<]+)</td><td class="num">([^<]+)</td>', table)
        assert row, family
        assert [int(x) for x in row.groups()[:3]] == [pairs, worse, better]
        assert float(row.group(4)) == pytest.approx(mcnemar_exact(worse, better), rel=1e-2)
        assert float(row.group(5)) == pytest.approx(adjusted[family], rel=1e-2)
    listed = set(re.findall(r'<li data-worse="true">.*?data-uid="([0-9a-f]{12})"', dom))
    assert listed == flipped
