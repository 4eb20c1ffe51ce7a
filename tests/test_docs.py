"""The documentation site: its reference pages are the code's (regenerated here and compared with
the committed ones), its pictures are the generator's, every page is in the nav, and the site
builds with ``mkdocs build --strict`` (a broken link or anchor fails)."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"


def generator(name: str) -> ModuleType:
    """``docs/gen/<name>.py`` as a module (the generators are scripts, not part of the
    package)."""
    spec = importlib.util.spec_from_file_location(f"docs_gen_{name}", DOCS / "gen" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def reference() -> ModuleType:
    return generator("reference")


def test_the_committed_reference_pages_are_the_codes(reference: ModuleType) -> None:
    assert reference.stale() == [], "regenerate them with `python docs/gen/reference.py`"


def test_a_page_that_drifted_is_named(reference: ModuleType, tmp_path: Path,
                                      monkeypatch: pytest.MonkeyPatch,
                                      capsys: pytest.CaptureFixture[str]) -> None:
    for name in reference.PAGES:
        (tmp_path / name).write_text((reference.REFERENCE / name).read_text(encoding="utf-8"))
    options = tmp_path / "pytest-options.md"
    options.write_text(options.read_text().replace("### `--limbo-gate`", "### `--gate`"))
    monkeypatch.setattr(reference, "REFERENCE", tmp_path)
    assert reference.main(["reference.py", "--check"]) == 1
    assert capsys.readouterr().err.strip() == (
        "docs/reference/pytest-options.md is stale: regenerate it with "
        "`python docs/gen/reference.py`")


def test_the_reference_follows_the_option_table(reference: ModuleType,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """An option added to the table is on the page without anyone writing it there."""
    from limbo_plugin.plugin import options

    added = options.Option("limbo_new", "--limbo-new", "N", "a new option",
                           doc="What it is for.")
    monkeypatch.setattr(reference, "pytest_options", lambda: (*options.OPTIONS, added))
    text = reference.pytest_options_page()
    assert "| `--limbo-new N` | `limbo_new` | a new option. |" in text
    assert "### `--limbo-new`\n\n`--limbo-new N`\n\nA new option.\n\nWhat it is for." in text


def test_the_cli_reference_has_every_nested_command(reference: ModuleType) -> None:
    text = reference.cli_page()
    for command in ("limbo harness install", "limbo harness list", "limbo list", "limbo guard"):
        assert f"`{command}`" in text, command
    assert "limbo proxy report LOG" in text
    assert "&lt;" in text and "<model>" not in text.replace("`", "")  # help text stays visible


def test_the_timeline_pictures_are_the_generators() -> None:
    assert generator("timelines").main(["timelines.py", "--check"]) == 0


def test_every_page_is_in_the_nav_and_every_picture_is_used() -> None:
    nav = (ROOT / "mkdocs.yml").read_text(encoding="utf-8").split("\nnav:\n", 1)[1]
    pages = {str(p.relative_to(DOCS)) for p in DOCS.rglob("*.md") if "gen" not in p.parts}
    assert [p for p in sorted(pages) if f": {p}\n" not in nav + "\n"] == []
    text = "".join(p.read_text(encoding="utf-8") for p in DOCS.rglob("*.md"))
    text += (ROOT / "README.md").read_text(encoding="utf-8")
    pictures = [p.relative_to(DOCS).as_posix() for p in (DOCS / "images").rglob("*")
                if p.suffix in (".png", ".svg")]
    assert len(pictures) >= 9
    assert [p for p in pictures if p not in text] == []


def test_the_site_builds_strictly(tmp_path: Path) -> None:
    pytest.importorskip("mkdocs", reason="the docs extra (pip install -e '.[docs]')")
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path)],
        cwd=ROOT, capture_output=True, text=True, timeout=300,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"})
    assert done.returncode == 0, done.stderr[-3000:]
    home = (tmp_path / "index.html").read_text(encoding="utf-8")
    assert "images/timelines/late_commit.svg" in home
    assert (tmp_path / "reference" / "pytest-options" / "index.html").is_file()


@pytest.mark.slow
def test_the_report_pictures_come_from_a_real_run(tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """``docs/gen/screenshots.py`` runs two scripted agents, builds their report and takes the
    three pictures the site shows, at 1280 px, in headless Chromium."""
    import shutil
    import struct

    if not (os.environ.get("CHROMIUM") or shutil.which("chromium")
            or Path("/usr/bin/chromium").exists()):
        pytest.skip("no chromium on this machine (apt-get install -y chromium; .ci/run "
                    "installs it)")
    shots = generator("screenshots")
    monkeypatch.setattr(shots, "OUT", tmp_path / "images")
    index = shots.build_report(tmp_path / "project")
    report = index.read_text(encoding="utf-8")
    assert "scripted:verify_first" in report and "scripted:blind_retry" in report
    shots.shoot(index, shots.chromium(), tmp_path / "profile")
    for name in shots.SHOTS:
        data = (tmp_path / "images" / name).read_bytes()
        assert data[:8] == b"\x89PNG\r\n\x1a\n"
        assert struct.unpack(">II", data[16:24])[0] == 1280
        assert len(data) > 50_000, name  # a rendered page, not a blank one
        assert (DOCS / "images" / name).is_file()
