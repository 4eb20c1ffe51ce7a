"""The report as a reader first meets it, in a real chromium at a laptop's 1280×800 and a
phone's 390×844: the results on the first screen, Table 3 whole at 1280 px, every link landing
on its target (a table, a figure, an episode, the comparison, a pair of traces), an unknown id
said where the reader lands, nothing scrolling sideways, every figure at one text size.
Screenshots of both widths (headless chromium's own ``--screenshot``) are kept in
``$LIMBO_SCREENSHOTS`` when set, to look at."""

from __future__ import annotations

import os
import shutil
import struct
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from reportkit import Browser, BuiltReport

from limbo_plugin.report.html import REFERENCE, episode_uid

pytestmark = pytest.mark.slow

VIEWPORTS = {"laptop": (1280, 800), "phone": (390, 844)}
A, B = "scripted:verify_first", "scripted:blind_retry"

GEOMETRY = """(selector) => {
  const node = document.querySelector(selector);
  if (!node) { return null; }
  const header = document.querySelector('header.top');
  const sticky = header && getComputedStyle(header).position === 'sticky';
  const rect = node.getBoundingClientRect();
  return {top: rect.top, bottom: rect.bottom, height: rect.height, right: rect.right,
          covered: sticky ? header.getBoundingClientRect().bottom : 0,
          viewport: window.innerHeight, scrollY: window.scrollY,
          text: node.innerText.slice(0, 400)};
}"""

SIDEWAYS = """() => {
  // Anything that reaches past the window's right edge without a scroll box of its own
  // around it makes the page scroll sideways.
  const width = document.documentElement.clientWidth;
  const boxed = (node) => {
    for (let up = node.parentElement; up && up !== document.body; up = up.parentElement) {
      const x = getComputedStyle(up).overflowX;
      if (x === 'auto' || x === 'scroll' || x === 'hidden') { return true; }
    }
    return false;
  };
  const out = [];
  for (const node of document.body.querySelectorAll('*')) {
    const rect = node.getBoundingClientRect();
    if (rect.width && rect.right > width + 1 && !boxed(node)) {
      out.push(node.tagName + (node.id ? '#' + node.id : '') + '.' + node.className + ' ' +
               Math.round(rect.right));
    }
  }
  window.scrollTo(500, window.scrollY);
  return {scrollWidth: document.documentElement.scrollWidth, width: width,
          scrollX: window.scrollX, overflowing: out.slice(0, 10)};
}"""


@pytest.fixture(params=list(VIEWPORTS), ids=[f"{w}x{h}" for w, h in VIEWPORTS.values()])
def page(request: pytest.FixtureRequest, playwright_chromium: Any) -> Iterator[Any]:
    width, height = VIEWPORTS[request.param]
    context = playwright_chromium.new_context(viewport={"width": width, "height": height})
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    yield page
    context.close()
    assert not errors, errors


def url(report: BuiltReport, fragment: str = "") -> str:
    return (report.out / "index.html").resolve().as_uri() + fragment


def open_at(page: Any, address: str) -> None:
    page.goto(address, wait_until="load")
    page.wait_for_function("document.getElementById('count').textContent !== ''")


def assert_lands(page: Any, selector: str, what: str) -> dict[str, Any]:
    """The target's top is in the window, below a sticky header."""
    geometry: dict[str, Any] = page.evaluate(GEOMETRY, selector)
    assert geometry is not None, f"{what}: no {selector} on the page"
    assert geometry["covered"] - 1 <= geometry["top"] < geometry["viewport"] - 40, (
        f"{what}: {selector} is at {geometry['top']:.0f} px, outside the window "
        f"({geometry['covered']:.0f}–{geometry['viewport']} px)")
    return geometry


def pair(report: BuiltReport) -> tuple[str, str, str]:
    """A world B duplicated and A did not: its episode id and both episodes' uids."""
    rows = report.outcome.loaded.rows
    side_a = {r.episode_id: r for r in rows if r.agent == A}
    for row in rows:
        if row.agent == B and row.duplicated and row.episode_id in side_a \
                and not side_a[row.episode_id].duplicated:
            return row.episode_id, episode_uid(side_a[row.episode_id]), episode_uid(row)
    raise AssertionError("blind_retry duplicates where verify_first does not")


def test_the_results_are_on_the_first_screen(page: Any, real_report: BuiltReport) -> None:
    open_at(page, url(real_report))
    assert page.evaluate("window.scrollY") == 0
    heading = assert_lands(page, "#table3_agents h3", "the headline table's title")
    assert heading["text"] == "Table 3: results by agent"
    assert_lands(page, "#table3_agents tbody tr", "the headline table's first row")
    first = page.evaluate("document.querySelector('#table3_agents tbody tr').innerText")
    assert "%" in first and "[" in first, "a rate with its interval"
    # Figure 2 follows the table, before every other result.
    order = page.evaluate("""() => Array.from(document.querySelectorAll(
        'article.table, figure, #explorer, #benchmark-tables, #skipped')).map(n => n.id)""")
    assert order[:2] == ["table3_agents", "figure-dup_by_family"]
    assert order.index("explorer") < order.index("benchmark-tables") < order.index("skipped")
    # The spec tables and the skipped list come last, collapsed.
    assert page.evaluate("document.getElementById('benchmark-tables').open") is False
    assert page.evaluate("document.getElementById('skipped').open") is False
    inside = page.evaluate("""() => Array.from(document.querySelectorAll(
        '#benchmark-tables article.table')).map(n => n.id)""")
    assert sorted(inside) == sorted(REFERENCE)


def test_table3_is_whole_at_1280(playwright_chromium: Any, real_report: BuiltReport) -> None:
    context = playwright_chromium.new_context(viewport={"width": 1280, "height": 800})
    page = context.new_page()
    open_at(page, url(real_report))
    box = page.evaluate("""() => {
      const scroll = document.querySelector('#table3_agents .scroll');
      const heads = Array.from(scroll.querySelectorAll('th'));
      return {scrollWidth: scroll.scrollWidth, clientWidth: scroll.clientWidth,
              window: document.documentElement.clientWidth,
              heads: heads.map(th => [th.innerText.replace(/\\s+/g, ' '),
                                      th.getBoundingClientRect().right]),
              sticky: getComputedStyle(scroll.querySelector('td')).position};
    }""")
    context.close()
    assert box["scrollWidth"] <= box["clientWidth"], "Table 3 fits without scrolling"
    heads = dict(box["heads"])
    for title in ("TS (not executed)", "EOS", "overclaim"):
        assert heads[title] <= box["window"], f"{title} is cut off"
    # Wider than its box (more configuration columns), it scrolls there, the agent held.
    assert box["sticky"] == "sticky"


@pytest.fixture(scope="module")
def every_family(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Table 3 at its widest in the paper: every fault family, three agents with long model
    names, and a second condition (one more label column): its report's index."""
    from reportkit import MODE_FAMILY, record, write

    from limbo_plugin.report.build import make_report
    from limbo_plugin.spec.registry import SpecRegistry

    root = tmp_path_factory.mktemp("every-family")
    records = [record(template=template, instance=i, fault_mode=mode, agent=agent,
                      condition=condition, duplicated=i == 0)
               for agent in ("litellm:openai/gpt-4o-mini-2024-07-18",
                             "litellm:anthropic/claude-3-5-sonnet-20241022",
                             "scripted:blind_retry")
               for condition in ("vanilla", "guard")
               for mode in MODE_FAMILY for template in ("tpl_a", "tpl_b", "tpl_c")
               for i in range(2)]
    path = write(root / "episodes.jsonl", records)
    registry = SpecRegistry.load(Path(__file__).resolve().parents[2] / "specs")
    return make_report([path], registry, root / "report").index


TABLE3_BOX = """() => {
  const scroll = document.querySelector('#table3_agents .scroll');
  const first = scroll.querySelector('tbody td');
  const before = first.getBoundingClientRect().left;
  scroll.scrollLeft = scroll.scrollWidth;
  return {scrollWidth: scroll.scrollWidth, clientWidth: scroll.clientWidth,
          scrolled: scroll.scrollLeft, boxLeft: scroll.getBoundingClientRect().left,
          firstBefore: before, firstAfter: first.getBoundingClientRect().left,
          page: document.documentElement.scrollWidth,
          window: document.documentElement.clientWidth,
          families: scroll.querySelectorAll('th.rate').length};
}"""


def test_table3_with_every_family_scrolls_in_its_box(page: Any, every_family: Path) -> None:
    """Wider than the window (a condition column too): the table scrolls in its own box, the
    page does not, and the agent column stays in view when the box is scrolled."""
    page.goto(every_family.as_uri(), wait_until="load")
    box = page.evaluate(TABLE3_BOX)
    assert box["families"] == 8 + 3, "eight families, TS, EOS and overclaim"
    assert box["page"] <= box["window"], "the page itself never scrolls sideways"
    if page.viewport_size["width"] < 1280:
        assert box["scrollWidth"] > box["clientWidth"], "a phone scrolls the table's box"
    if box["scrollWidth"] > box["clientWidth"]:
        assert box["scrolled"] > 0
        assert box["firstAfter"] == pytest.approx(box["boxLeft"], abs=1), "first column held"


def test_table3_with_every_family_is_whole_at_1280(playwright_chromium: Any, tmp_path: Path,
                                                   ) -> None:
    """Every fault family and three agents with long model names, one configuration each:
    EOS, TS and overclaim in view at 1280 px without scrolling."""
    from reportkit import MODE_FAMILY, record, write

    from limbo_plugin.report.build import make_report
    from limbo_plugin.spec.registry import SpecRegistry

    records = [record(template=template, instance=i, fault_mode=mode, agent=agent,
                      duplicated=i == 0)
               for agent in ("litellm:openai/gpt-4o-mini-2024-07-18",
                             "litellm:anthropic/claude-3-5-sonnet-20241022",
                             "scripted:blind_retry")
               for mode in MODE_FAMILY for template in ("tpl_a", "tpl_b") for i in range(2)]
    path = write(tmp_path / "episodes.jsonl", records)
    registry = SpecRegistry.load(Path(__file__).resolve().parents[2] / "specs")
    index = make_report([path], registry, tmp_path / "report").index
    context = playwright_chromium.new_context(viewport={"width": 1280, "height": 800})
    page = context.new_page()
    page.goto(index.as_uri(), wait_until="load")
    box = page.evaluate(TABLE3_BOX)
    context.close()
    assert box["families"] == 8 + 3
    assert box["scrollWidth"] <= box["clientWidth"], "Table 3 is whole at 1280 px"


def test_nothing_scrolls_sideways(page: Any, real_report: BuiltReport) -> None:
    _, uid_a, uid_b = pair(real_report)
    for fragment in ("", f"#episode={uid_b}", f"#compare=agent&a={A}&b={B}",
                     f"#pair={uid_a},{uid_b}", "#benchmark-tables", "#table11_descriptions"):
        open_at(page, url(real_report, fragment))
        page.wait_for_load_state("load")
        found = page.evaluate(SIDEWAYS)
        assert found["overflowing"] == [], (fragment, found)
        assert found["scrollWidth"] <= found["width"] and found["scrollX"] == 0, (fragment,
                                                                                  found)


def test_every_table_and_figure_anchor_lands(page: Any, real_report: BuiltReport) -> None:
    open_at(page, url(real_report))
    targets = page.evaluate("""() => Array.from(document.querySelectorAll(
        'article.table, figure, #skipped, #explorer, #results, #more, #reference'))
        .map(n => n.id)""")
    assert set(REFERENCE) <= set(targets) and "figure-behaviour" in targets
    for target in targets:
        open_at(page, url(real_report, f"#{target}"))
        assert_lands(page, f"#{target}", f"#{target} opened from a link")
    # Links followed on the page, not only fresh loads: the table of contents, then a
    # reference table inside its collapsed section.
    open_at(page, url(real_report))
    page.click("#more .toc a[href='#h3_read_path']")
    assert_lands(page, "#h3_read_path", "a table of contents entry")
    page.evaluate("location.hash = '#table1_tools'")
    assert_lands(page, "#table1_tools", "a reference table inside a collapsed section")
    assert page.evaluate("document.getElementById('benchmark-tables').open") is True


def test_an_episode_link_lands_on_the_episode(page: Any, real_report: BuiltReport,
                                              tmp_path: Path) -> None:
    _, _, uid = pair(real_report)
    open_at(page, url(real_report, f"#episode={uid}"))
    page.wait_for_selector(f"#detail[data-episode='{uid}']")
    landed = assert_lands(page, "#detail h3", "the opened episode's title")
    assert landed["scrollY"] > 0
    screenshot(page, tmp_path, "episode")
    # Changing the link on the page (back to the top first) lands again.
    page.evaluate("window.scrollTo(0, 0); location.hash = '#table3_agents'")
    assert_lands(page, "#table3_agents", "a table after an episode")
    page.evaluate(f"location.hash = '#episode={uid}&family=late_commit'")
    page.wait_for_function("window.scrollY > 0 && document.querySelector('#detail h3')")
    assert_lands(page, "#detail h3", "the episode after a hash change")


def test_a_filter_link_lands_on_the_explorer(page: Any, real_report: BuiltReport) -> None:
    open_at(page, url(real_report, "#family=late_commit&outcome=duplicate"))
    assert_lands(page, "#explorer", "a shared filter")
    count = page.inner_text("#count")
    assert count.endswith(f"of {len(real_report.records)} episodes")
    assert 0 < int(count.split()[0]) < len(real_report.records)


def test_a_comparison_link_lands_on_the_comparison(page: Any, real_report: BuiltReport,
                                                   tmp_path: Path) -> None:
    open_at(page, url(real_report, f"#compare=agent&a={A}&b={B}"))
    page.wait_for_selector("#comparison")
    assert_lands(page, "#compare", "the comparison panel")
    screenshot(page, tmp_path, "compare")
    assert page.evaluate("document.getElementById('compare').open") is True


def test_two_agents_traces_of_one_world_side_by_side(page: Any, real_report: BuiltReport,
                                                     tmp_path: Path) -> None:
    world, uid_a, uid_b = pair(real_report)
    open_at(page, url(real_report, f"#compare=agent&a={A}&b={B}"))
    page.click(f"#flips a.side-by-side[data-pair='{uid_a},{uid_b}']")
    page.wait_for_function("document.querySelectorAll('#pair .side .timeline').length === 2")
    assert_lands(page, "#pair", "the pair of traces")
    screenshot(page, tmp_path, "pair")
    sides = page.evaluate("""() => Array.from(document.querySelectorAll('#pair .side')).map(
        s => ({side: s.dataset.side, uid: s.dataset.episode,
               title: s.querySelector('h3').innerText,
               left: s.getBoundingClientRect().left, top: s.getBoundingClientRect().top,
               why: !!s.querySelector('.why'),
               calls: s.querySelectorAll('.timeline li').length}))""")
    assert [(s["side"], s["uid"]) for s in sides] == [("A", uid_a), ("B", uid_b)]
    assert {s["title"] for s in sides} == {world}, "the same world on both sides"
    assert sides[1]["why"], "B's side says why it duplicated"
    assert all(s["calls"] for s in sides)
    if page.viewport_size["width"] >= 1280:
        assert sides[0]["top"] == sides[1]["top"] and sides[0]["left"] < sides[1]["left"]
    # The pair is in the link: reloading it lands on the same two traces.
    assert f"pair={uid_a}%2C{uid_b}" in page.url or f"pair={uid_a},{uid_b}" in page.url
    open_at(page, page.url)
    page.wait_for_function("document.querySelectorAll('#pair .side .timeline').length === 2")
    assert_lands(page, "#pair", "the pair reopened from its link")


@pytest.mark.parametrize(("fragment", "selector", "says"), [
    ("#episode=000000000000", "#detail", "No episode 000000000000 in this report."),
    ("#episode=no-such-episode&family=late_commit", "#detail",
     "No episode no-such-episode in this report."),
    ("#table3_agentz", "#notice", 'No section "table3_agentz" in this report'),
    ("#compare=agnet&a=x&b=y", "#notice", 'No configuration field "agnet" to compare'),
    ("#pair=aaaaaaaaaaaa,bbbbbbbbbbbb", "#pair", "No pair of episodes aaaaaaaaaaaa,"),
    ("#episodes=x", "#notice", "This link names episodes, which the report does not know"),
], ids=["uid", "test-id", "section", "compare-field", "pair", "parameter"])
def test_an_unknown_id_is_said_where_the_reader_lands(page: Any, real_report: BuiltReport,
                                                      tmp_path: Path, fragment: str,
                                                      selector: str, says: str) -> None:
    open_at(page, url(real_report, fragment))
    page.wait_for_function("([s, t]) => document.querySelector(s) && "
                           "document.querySelector(s).innerText.includes(t)",
                           arg=[selector, says])
    landed = assert_lands(page, selector, f"the message for {fragment}")
    assert says in landed["text"]
    if fragment == "#episode=000000000000":
        screenshot(page, tmp_path, "unknown-episode")


def test_every_figure_is_drawn_at_one_scale(page: Any, real_report: BuiltReport) -> None:
    """Each card shows its figure at its natural size (a window narrower than a figure scales
    it down), so neighbouring cards print their 9 pt text at one size."""
    open_at(page, url(real_report))
    page.wait_for_function("Array.from(document.images).every(i => i.complete)")
    scales = page.evaluate("""() => Array.from(document.querySelectorAll('figure img')).map(
        img => [img.closest('figure').id, img.getBoundingClientRect().width /
                Number(img.getAttribute('width')), img.naturalWidth /
                Number(img.getAttribute('width'))])""")
    assert len(scales) == 3
    for figure, _, natural in scales:
        assert natural == pytest.approx(1, abs=0.01), f"{figure}: width attribute is its own"
    if page.viewport_size["width"] >= 1280:
        assert [round(shown, 3) for _, shown, _ in scales] == [1.0] * 3


def png_size(path: Path) -> tuple[int, int]:
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    return struct.unpack(">II", data[16:24])


def keep(shot: Path) -> None:
    """Copy a screenshot to ``$LIMBO_SCREENSHOTS`` when set, to look at."""
    folder = os.environ.get("LIMBO_SCREENSHOTS")
    if folder:
        Path(folder).mkdir(parents=True, exist_ok=True)
        shutil.copy(shot, Path(folder) / shot.name)


def screenshot(page: Any, tmp_path: Path, name: str) -> None:
    """The window where a link landed, as the reader sees it."""
    width, height = page.viewport_size["width"], page.viewport_size["height"]
    shot = tmp_path / f"report-{name}-{width}.png"
    page.screenshot(path=str(shot))
    assert png_size(shot) == (width, height) and shot.stat().st_size > 20_000
    keep(shot)


@pytest.mark.parametrize(("width", "height"), list(VIEWPORTS.values()),
                         ids=[f"{w}x{h}" for w, h in VIEWPORTS.values()])
def test_screenshot_of_the_first_screen(browser: Browser, real_report: BuiltReport,
                                        tmp_path: Path, width: int, height: int) -> None:
    """What the reader sees first, as headless chromium's own ``--screenshot`` takes it."""
    shot = tmp_path / f"report-first-{width}.png"
    done = subprocess.run(
        [browser.executable, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
         "--disable-background-networking", "--disable-sync",
         f"--user-data-dir={browser.profile}", "--hide-scrollbars",
         f"--window-size={width},{height}", "--virtual-time-budget=5000",
         f"--screenshot={shot}", url(real_report)],
        capture_output=True, text=True, timeout=180, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    assert png_size(shot) == (width, height) and shot.stat().st_size > 20_000
    keep(shot)
