"""The core install: a scripted run imports nothing heavy, and a feature whose extra is missing
is one line naming the extra, before the first episode."""

from __future__ import annotations

import json
import sys

import pytest

from limbo_plugin.cli import main
from limbo_plugin.errors import UsageError
from limbo_plugin.extras import EXTRAS, install_command, require
from limbo_plugin.runconfig import RunConfig

HEAVY = ("litellm", "openai", "statsmodels", "matplotlib", "scipy", "numpy", "pandas",
         "hypothesis", "mcp", "jinja2")

RECORD_MODULES = """
import json
import sys


def pytest_unconfigure(config):
    if not hasattr(config, "workerinput"):
        with open("modules.json", "w") as out:
            json.dump(sorted(sys.modules), out)
"""


def test_a_scripted_run_imports_no_heavy_library(project: pytest.Pytester) -> None:
    project.makeconftest(RECORD_MODULES)
    result = project.runpytest_subprocess("--experiment", "small")
    assert "Limbo summary" in result.stdout.str()
    loaded = set(json.loads((project.path / "modules.json").read_text()))
    assert "limbo_plugin.episode" in loaded, "the probe sees what the run imported"
    assert not [m for m in HEAVY if m in loaded]


BLOCK = """
import sys

for name in {modules!r}:
    sys.modules[name] = None  # what an environment without the extra looks like to imports
"""


@pytest.mark.parametrize(("agent", "extra", "module"), [
    ("litellm:openai/gpt-5-mini", "llm", "litellm"),
    ("mcp:verify_first", "mcp", "mcp"),
])
def test_an_agent_without_its_extra_is_one_line_before_any_episode(
        project: pytest.Pytester, agent: str, extra: str, module: str) -> None:
    project.makeconftest(BLOCK.format(modules=[module]))
    result = project.runpytest_subprocess("--experiment", "small", "--agent", agent)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    errors = [line for line in result.stderr.lines if line.strip()]
    assert errors == [f"ERROR: agent {agent!r} needs the {extra} extra (missing: {module}): "
                      f"pip install 'limbo-bench[{extra}]'"]
    assert not (project.path / "reports" / "episodes.jsonl").exists()


def test_an_experiment_naming_an_agent_without_its_extra_fails_to_load(
        project: pytest.Pytester) -> None:
    project.makeconftest(BLOCK.format(modules=["litellm"]))
    (project.path / "specs" / "experiments" / "models.yaml").write_text(
        "name: models\ntemplates: [incident_open]\nagents: [litellm:openai/gpt-5-mini]\n")
    result = project.runpytest_subprocess("--experiment", "models")
    result.stdout.fnmatch_lines(["*models.yaml:3*needs the llm extra*limbo-bench[[]llm[]]*"])
    assert not (project.path / "reports" / "episodes.jsonl").exists()


def test_require_names_the_extra_and_what_needs_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    with pytest.raises(UsageError) as error:
        require("report", "limbo report")
    assert str(error.value) == ("limbo report needs the report extra (missing: matplotlib): "
                                "pip install 'limbo-bench[report]'")
    require("llm", "nothing")  # installed here: no error


def test_run_config_checks_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "litellm", None)
    with pytest.raises(UsageError, match=r"needs the llm extra"):
        RunConfig.parse({"agent": "litellm:openai/gpt-5-mini"})
    assert RunConfig.parse({"agent": "scripted:blind_retry"}).agent == "scripted:blind_retry"


@pytest.mark.parametrize(("argv", "module", "extra"), [
    (["report", "missing.jsonl"], "statsmodels", "report"),
    (["mcp", "--url", "http://127.0.0.1:1"], "mcp", "mcp"),
])
def test_commands_without_their_extra(monkeypatch: pytest.MonkeyPatch,
                                      capsys: pytest.CaptureFixture[str], argv: list[str],
                                      module: str, extra: str) -> None:
    monkeypatch.setitem(sys.modules, module, None)
    assert main(argv) == 2
    assert capsys.readouterr().err.strip().endswith(install_command(extra))


def test_every_extra_is_declared_in_the_project() -> None:
    import tomllib
    from pathlib import Path

    project = tomllib.loads((Path(__file__).resolve().parents[2] / "pyproject.toml").read_text())
    declared = project["project"]["optional-dependencies"]
    assert set(EXTRAS) <= set(declared)
    assert declared["all"] == [f"limbo-bench[{','.join(EXTRAS)}]"]
