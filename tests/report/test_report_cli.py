"""``limbo report`` and ``limbo allure`` from the command line: outputs, messages, errors,
determinism, figures, and what the plugin must not import."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from xml.etree import ElementTree

import pytest
from reportkit import BuiltReport, cell, record, write

from limbo_plugin.cli import main
from limbo_plugin.report.html import ASSETS, TEMPLATES
from limbo_plugin.report.tables.base import Skipped

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def test_outputs_of_a_report(real_report: BuiltReport) -> None:
    out = real_report.out
    summary = json.loads((out / "report.json").read_text())
    assert "table3_agents" in summary["tables"] and "table6_waiting" in summary["tables"]
    for table in summary["tables"]:
        for suffix in ("md", "csv", "json"):
            assert (out / "tables" / f"{table}.{suffix}").stat().st_size > 0
    assert "table10_cue" not in summary["tables"]
    assert summary["skipped"]["table10_cue"] == "no episode with the no_cue instruction"
    assert not (out / "tables" / "table10_cue.md").exists(), "never a table of zeros"
    assert (out / "index.html").is_file() and (out / "data" / "index.js").is_file()
    assert (out / "data" / "episodes-0000.js").is_file()
    assert (out / "assets" / "explorer.js").is_file() and (out / "assets" / "dom.js").is_file()


def test_the_waiting_figure_of_a_run_without_waiting_is_skipped(real_report: BuiltReport
                                                                 ) -> None:
    """Two scripted agents under vanilla: no wait_<Δ> policy, so no Figure 4 (it is drawn, and
    checked, in tests/report/test_report_figures.py)."""
    (waiting,) = [f for f in real_report.outcome.figures if getattr(f, "id", "") ==
                  "waiting_vs_keys"]
    assert isinstance(waiting, Skipped) and "no wait_<Δ> condition" in waiting.reason
    assert not (real_report.out / "figures" / "waiting_vs_keys.png").exists()


@pytest.mark.parametrize("figure", ["dup_by_family", "dup_by_contract", "behaviour"])
def test_figures_are_valid_png_and_svg(real_report: BuiltReport, figure: str) -> None:
    png = (real_report.out / "figures" / f"{figure}.png").read_bytes()
    assert png.startswith(PNG_MAGIC) and len(png) > 5000
    root = ElementTree.parse(real_report.out / "figures" / f"{figure}.svg").getroot()
    assert root.tag == "{http://www.w3.org/2000/svg}svg"
    assert len(list(root.iter())) > 50, "the SVG has drawn content"


def test_cli_prints_counts_tables_and_skips(tmp_path: Path, capsys: pytest.CaptureFixture[str]
                                            ) -> None:
    first = write(tmp_path / "a.jsonl", [*cell(6, 2), record(template="z", error="infra")])
    second = write(tmp_path / "b.jsonl", cell(6, 3, repeat=1))
    assert main(["report", str(first), str(second), "--out", str(tmp_path / "out")]) == 0
    out = capsys.readouterr().out
    assert "Read 13 record(s) from 2 file(s): 6 episode(s) in the tables." in out
    assert "Dropped 1 record(s) that ended in an infrastructure error" in out
    assert "Kept 6 repeat run(s)" in out
    assert "Table 3: results by agent (table3_agents)" in out
    assert "Table 7 per agent: recovery conditions with each agent's costs: skipped — needs " \
           "episodes under at least two conditions (found only vanilla)" in out
    assert "Figure: Waiting versus keys: skipped — no fired late-commit episode" in out
    assert f"Report: {tmp_path / 'out' / 'index.html'}" in out
    html = (tmp_path / "out" / "index.html").read_text()
    assert "needs episodes under at least two conditions" in html


def test_same_records_give_byte_identical_tables(tmp_path: Path) -> None:
    records = [*cell(9, 4, agent="scripted:a"), *cell(7, 1, agent="scripted:b"),
               *cell(5, 5, agent="scripted:a", fault_mode="timeout_late"),
               *cell(5, 0, agent="scripted:a", fault_mode="timeout_late", condition="wait_120")]
    forward = write(tmp_path / "f.jsonl", records)
    backward = write(tmp_path / "b.jsonl", list(reversed(records)))
    assert main(["report", str(forward), "--out", str(tmp_path / "one")]) == 0
    assert main(["report", str(backward), "--out", str(tmp_path / "two")]) == 0
    tables = sorted(p.name for p in (tmp_path / "one" / "tables").iterdir())
    assert tables
    for name in tables:
        assert (tmp_path / "one" / "tables" / name).read_bytes() == \
            (tmp_path / "two" / "tables" / name).read_bytes(), name
    for name in ("dup_by_family.svg", "waiting_vs_keys.svg", "dup_by_contract.svg"):
        assert (tmp_path / "one" / "figures" / name).read_bytes() == \
            (tmp_path / "two" / "figures" / name).read_bytes(), name


@pytest.mark.parametrize("content, expected", [
    (None, "no such record file"),
    ("{\"not\": \"a record\"}\n{}\n", ":1: not an episode record"),
    ("", "no graded episode"),
])
def test_bad_input_is_one_line_without_traceback(tmp_path: Path, content: str | None,
                                                 expected: str) -> None:
    path = tmp_path / "records.jsonl"
    if content is not None:
        path.write_text(content)
    done = subprocess.run([sys.executable, "-m", "limbo_plugin.cli", "report", str(path),
                           "--out", str(tmp_path / "out")], capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(Path.cwd())}, check=False)
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("limbo: ") and expected in lines[0]
    assert str(path) in lines[0]
    assert "Traceback" not in done.stderr
    assert not (tmp_path / "out").exists(), "nothing written on bad input"


def test_plugin_and_a_scripted_run_import_no_report_libraries(project: pytest.Pytester) -> None:
    heavy = ("matplotlib", "jinja2", "statsmodels")
    check = ("import sys, limbo_plugin.plugin, limbo_plugin.report.allure; "
             f"print([m for m in {heavy!r} if m in sys.modules])")
    done = subprocess.run([sys.executable, "-c", check], capture_output=True, text=True,
                          check=True)
    assert done.stdout.strip() == "[]"
    project.makeconftest(
        "import sys\n"
        "def pytest_sessionfinish(session):\n"
        f"    loaded = [m for m in {heavy!r} if m in sys.modules]\n"
        "    open('heavy.txt', 'w').write(repr(loaded))\n")
    project.runpytest_subprocess("--experiment", "tiny", "-q")
    assert (project.path / "heavy.txt").read_text() == "[]"


def test_allure_without_npx_or_results_is_a_clear_error(tmp_path: Path,
                                                        capsys: pytest.CaptureFixture[str],
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    results = tmp_path / "allure-results"
    assert main(["allure", str(results), "--out", str(tmp_path / "r")]) == 2
    assert "no Allure results; run pytest with --alluredir" in capsys.readouterr().err
    results.mkdir()
    (results / "x-result.json").write_text("{}")
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    assert main(["allure", str(results), "--out", str(tmp_path / "r")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("limbo: npx not found: install Node.js")


def test_default_records_file_and_output(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(tmp_path)
    write(tmp_path / "reports" / "episodes.jsonl", cell(4, 1))
    assert main(["report"]) == 0
    assert "Read 4 record(s) from 1 file(s)" in capsys.readouterr().out
    assert (tmp_path / "reports" / "report" / "index.html").is_file()


def test_the_pages_build_their_elements_with_one_shared_helper() -> None:
    """``el`` is written once, in dom.js, which the report copies into its assets and both pages
    (the report's explorer, ``limbo view``'s run list) load before the script that uses it."""
    scripts = {p.name: p.read_text(encoding="utf-8") for p in TEMPLATES.iterdir()
               if p.suffix in (".js", ".html", ".j2")}
    assert [name for name, text in scripts.items() if "function el(" in text] == ["dom.js"]
    assert "dom.js" in ASSETS
    report, runs = scripts["report.html.j2"], scripts["runs.html"]
    assert -1 < report.index('src="assets/dom.js"') < report.index('src="assets/explorer.js"')
    assert -1 < runs.index('src="/dom.js"') < runs.index("LimboDom.el")
    assert "LimboDom.el" in scripts["explorer.js"]


@pytest.mark.parametrize("preset", [None, "2"])
def test_the_report_fits_on_one_blas_thread_unless_told(tmp_path: Path, preset: str | None
                                                        ) -> None:
    # OpenBLAS's worker threads only wait on each other over the fits' small matrices: the
    # report sets one thread before numpy loads, and keeps a user's own setting.
    path = write(tmp_path / "a.jsonl", [*cell(8, 3, agent="scripted:a"),
                                        *cell(8, 5, agent="scripted:b")])
    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_NUM_THREADS"}
    if preset is not None:
        env["OPENBLAS_NUM_THREADS"] = preset
    probe = ("import os, sys\nfrom limbo_plugin.cli import main\n"
             f"main(['report', {str(path)!r}, '--out', {str(tmp_path / 'out')!r}])\n"
             "print('numpy' in sys.modules, os.environ.get('OPENBLAS_NUM_THREADS'))")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          env=env, check=True)
    assert done.stdout.strip().splitlines()[-1] == f"True {preset or '1'}"
