"""Pictures of the HTML report for the site, from a real run: ``python docs/gen/screenshots.py``.

In a scratch directory it runs the default experiment's ``cross_post`` episodes under two
scripted agents (``verify_first`` and ``blind_retry``: no model, no network), builds the report
from both record files with ``limbo report``, and opens it in headless Chromium at 1280 px: the
first page, one episode in the explorer, and the comparison of the two agents. The PNGs go to
``docs/images/`` and are checked in, so the site shows what this version's report looks like.
Needs the ``report`` extra and a Chromium (``CHROMIUM`` or ``/usr/bin/chromium``).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "docs" / "images"
AGENTS = ("verify_first", "blind_retry")
SELECT = "cross_post"
EPISODE = "cross_post-i0-post_x-timeout_late"
SHOTS = {
    "report-overview.png": ("index.html", "", 1100),
    "report-explorer.png": ("explorer.html", f"#episode={EPISODE}-scripted-blind_retry", 1100),
    "report-compare.png": ("explorer.html", "#family=late_commit&compare=agent"
                           "&a=scripted:verify_first&b=scripted:blind_retry", 1100),
}
"""File → (the page, its URL's fragment, the window's height; all 1280 px wide). The explorer's
pictures open a copy of the report without its results and reference sections, so the explorer is
in view without scrolling (as the report's own layout test does)."""


def chromium() -> str:
    found = os.environ.get("CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
    if not Path(found).exists():
        raise SystemExit("screenshots: no chromium found (set CHROMIUM to its path)")
    return found


def run(argv: list[str], cwd: Path) -> None:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])])}
    result = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True)
    if result.returncode not in (0, 1):  # 1: some episodes duplicated, the measurement
        raise SystemExit(f"screenshots: {' '.join(argv)} exited {result.returncode}:\n"
                         f"{result.stdout[-2000:]}{result.stderr[-2000:]}")


def build_report(work: Path) -> Path:
    """A real run of two agents and its report; the path of ``index.html``."""
    shutil.copytree(ROOT / "specs", work / "specs")
    (work / "pytest.ini").write_text("[pytest]\naddopts = -p no:cacheprovider\n")
    records = []
    for agent in AGENTS:
        path = f"reports/{agent}.jsonl"
        run([sys.executable, "-m", "pytest", "-k", SELECT, "--agent", f"scripted:{agent}",
             f"--limbo-records={path}", "--tb=no", "-q", "-rN"], work)
        records.append(path)
    run([sys.executable, "-m", "limbo_plugin.cli", "report", *records, "--out", "reports/report"],
        work)
    return work / "reports" / "report" / "index.html"


def shoot(index: Path, browser: str, profile: Path) -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    explorer = re.sub(r'<section id="(results|more|reference)">.*?</section>\s*', "",
                      index.read_text(encoding="utf-8"), flags=re.S)
    (index.parent / "explorer.html").write_text(explorer, encoding="utf-8")
    for name, (page, fragment, height) in SHOTS.items():
        target = OUT / name
        subprocess.run([browser, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                        "--disable-background-networking", "--disable-component-update",
                        "--hide-scrollbars", f"--user-data-dir={profile}",
                        f"--window-size=1280,{height}", f"--screenshot={target}",
                        (index.parent / page).as_uri() + fragment],
                       check=True, capture_output=True, timeout=180)
        print(f"wrote docs/images/{name}")


def main() -> int:
    browser = chromium()
    with tempfile.TemporaryDirectory(prefix="limbo-shots-") as scratch:
        work = Path(scratch)
        index = build_report(work / "project")
        shoot(index, browser, work / "profile")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
