"""A package of a user's own adds a condition, an agent kind and a report table to Limbo without
editing it: the package lists its module in the ``limbo`` entry-point group, and Limbo finds it
through the installed distribution's metadata (importlib.metadata, as pip leaves it).

The package is written here, installed into a folder of its own (its ``.dist-info`` beside it, or
by ``pip install --target`` in the slow test), and used by pytest and ``limbo`` in subprocesses
whose ``PYTHONPATH`` holds that folder, so nothing leaks into this process."""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from test_recipes import EXECUTOR, EXPERIMENT, FAMILY, MODE, SERVICE_MODULE, SERVICE_SPEC, TEMPLATE

from limbo_plugin.extensions import DISABLE

EXTENSION = '''\
"""Limbo extensions of a user's package: a condition, an agent kind and a report table."""

from __future__ import annotations

from collections.abc import Sequence

from limbo_plugin.extend import (
    AgentKind,
    AgentSession,
    Column,
    Condition,
    Middleware,
    Result,
    Skipped,
    Table,
    ToolCall,
    ToolResult,
    UsageError,
)


class DemoNote(Middleware):
    """Adds a note to every tool error the agent gets."""

    def call(self, call: ToolCall) -> ToolResult:
        result = self.inner.call(call)
        if call.origin == "agent" and result.is_error:
            return ToolResult({**result.content, "demo_note": "noted"}, is_error=True)
        return result


class LazyAgent:
    def __init__(self, reason: str) -> None:
        self.name = f"lazy:{reason}"
        self.reason = reason

    def run(self, session: AgentSession) -> None:
        session.call("finish", {"status": "failed", "summary": self.reason,
                                "uncertain_operations": []})


def check_lazy(rest: str) -> None:
    if not rest:
        raise UsageError("agent 'lazy:' needs a reason, e.g. lazy:tired")


def per_condition(rows: Sequence, repeats: Sequence) -> Result:
    if not rows:
        return Skipped("demo_per_condition", "Episodes per condition", "no episode")
    table = Table("demo_per_condition", "Episodes per condition", "How many episodes ran "
                  "under each condition.", [Column("condition", "condition"),
                                            Column("episodes", "episodes", "int")])
    for condition in sorted({r.condition for r in rows}):
        table.rows.append({"condition": condition,
                           "episodes": sum(r.condition == condition for r in rows)})
    return table


CONDITIONS = (Condition("demo_note", "a note on every tool error", wraps=DemoNote),)
AGENT_KINDS = (AgentKind("lazy", "lazy:<reason>", check_lazy,
                         lambda rest, options: LazyAgent(rest)),)
TABLES = (per_condition,)
'''
PYPROJECT = """\
[build-system]
requires = ["setuptools>=68"]
build-backend = "setuptools.build_meta"

[project]
name = "limbo-demo-ext"
version = "0.1.0"

[project.entry-points.limbo]
demo = "limbo_demo_ext"

[tool.setuptools]
packages = ["limbo_demo_ext"]
"""
SMALL = """\
name: small
templates: [incident_open]
instances: [0]
focal_writes: [ticket]
modes: [none, timeout_post]
conditions: [vanilla, demo_note]
agents: ["@option", "lazy:tired"]
"""


def write_package(root: Path, name: str = "limbo_demo_ext", body: str = EXTENSION) -> Path:
    (root / name).mkdir(parents=True)
    (root / name / "__init__.py").write_text(body)
    (root / "pyproject.toml").write_text(PYPROJECT.replace("limbo_demo_ext", name)
                                         .replace("limbo-demo-ext", name.replace("_", "-")))
    return root


def install_beside(site: Path, name: str = "limbo_demo_ext", body: str = EXTENSION,
                   entry_point: str | None = None) -> None:
    """What an install leaves: the package, and a ``.dist-info`` whose ``entry_points.txt``
    lists the module in the ``limbo`` group."""
    write_package(site, name, body)
    write_dist_info(site, name, entry_point)


def write_dist_info(site: Path, name: str, entry_point: str | None = None) -> None:
    info = site / f"{name}-0.1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 0.1.0\n")
    (info / "entry_points.txt").write_text(f"[limbo]\n{name} = {entry_point or name}\n")


@pytest.fixture
def project(project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    (project.path / "specs" / "experiments" / "small.yaml").write_text(SMALL)
    monkeypatch.delenv(DISABLE)  # the runs these tests start read installed extensions
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(
        [str(project.path / "site"), *filter(None, [os.environ.get("PYTHONPATH")])]))
    return project


def records(project: pytest.Pytester) -> list[dict[str, Any]]:
    path = project.path / "reports" / "episodes.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines() if line]


def limbo(project: pytest.Pytester, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "limbo_plugin.cli", *args], cwd=project.path,
                          capture_output=True, text=True, check=False)


def runs_the_extension(project: pytest.Pytester) -> None:
    result = project.runpytest_subprocess("--experiment", "small", "-p", "no:randomly")
    # verify_first passes both worlds under both conditions; the lazy agent fails all four
    result.assert_outcomes(passed=4, failed=4)
    out = records(project)
    assert {(r["condition"], r["agent"]) for r in out} == {
        (c, a) for c in ("vanilla", "demo_note") for a in ("scripted:verify_first", "lazy:tired")}
    noted = [r for r in out if r["condition"] == "demo_note" and r["fault_mode"] == "timeout_post"
             and r["agent"] == "scripted:verify_first"]
    assert [any(e["response"].get("demo_note") == "noted" for e in r["trace"])
            for r in noted] == [True]
    assert {r["final_status"] for r in out if r["agent"] == "lazy:tired"} == {"failed"}
    report = limbo(project, "report", "reports/episodes.jsonl", "--out", "report")
    assert report.returncode == 0, report.stderr
    table = json.loads((project.path / "report" / "tables" / "demo_per_condition.json")
                       .read_text())
    assert [(row["condition"], row["episodes"]) for row in table["rows"]] == [
        ("demo_note", 4), ("vanilla", 4)]
    listed = limbo(project, "list", "conditions")
    assert "demo_note" in listed.stdout, listed.stderr


def test_an_installed_package_adds_a_condition_an_agent_kind_and_a_table(
        project: pytest.Pytester) -> None:
    install_beside(project.path / "site")
    runs_the_extension(project)


def test_without_the_package_its_names_are_unknown(project: pytest.Pytester) -> None:
    """The same experiment without the distribution installed: the names are not Limbo's."""
    result = project.runpytest_subprocess("--experiment", "small")
    assert result.ret != pytest.ExitCode.OK
    result.stdout.fnmatch_lines(["*small.yaml:6: *unknown condition 'demo_note'*"])


def test_an_extension_that_does_not_load_is_one_line_naming_it(
        project: pytest.Pytester) -> None:
    install_beside(project.path / "site", body="raise ImportError('no module named nope')\n")
    result = project.runpytest_subprocess("--experiment", "small", "--condition", "vanilla")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    error = [line for line in result.stderr.lines if "limbo_demo_ext" in line]
    assert len(error) == 1 and "does not load: ImportError: no module named nope" in error[0]
    assert "Traceback" not in result.stderr.str()


def test_a_name_taken_by_two_packages_is_one_line_naming_both(
        project: pytest.Pytester) -> None:
    site = project.path / "site"
    install_beside(site)
    clash = 'from limbo_plugin.extend import Condition\n' \
            'CONDITIONS = (Condition("guard", "a second guard"),)\n'
    install_beside(site, "limbo_clash_ext", clash)
    result = project.runpytest_subprocess("--experiment", "small")
    assert result.ret != pytest.ExitCode.OK
    result.stdout.fnmatch_lines(["*condition 'guard' is declared twice: in "
                                 "limbo_plugin.conditions.guard and in limbo_clash_ext*"])


@pytest.mark.slow
def test_pip_install_of_the_package_is_enough(project: pytest.Pytester) -> None:
    """The package built and installed by pip (``--target``, no index), as a user would."""
    source = write_package(project.path / "src")
    pip = subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps",
                          "--target",
                          str(project.path / "site"), str(source)],
                         capture_output=True, text=True, check=False)
    assert pip.returncode == 0, pip.stderr
    points = list((project.path / "site").glob("limbo_demo_ext-*.dist-info/entry_points.txt"))
    assert len(points) == 1 and "[limbo]" in points[0].read_text()
    runs_the_extension(project)


def test_limbo_list_shows_the_extension_and_what_it_declares(project: pytest.Pytester) -> None:
    install_beside(project.path / "site")
    listed = limbo(project, "list", "extensions")
    assert listed.returncode == 0, listed.stderr
    assert listed.stdout.split() == ["limbo_demo_ext", "limbo_demo_ext", "limbo_demo_ext",
                                     "0.1.0", "CONDITIONS", "(1),", "AGENT_KINDS", "(1),",
                                     "TABLES", "(1)"]
    assert "lazy:<reason>" in limbo(project, "list", "agents").stdout
    assert "per_condition" in limbo(project, "list", "tables").stdout.splitlines()[-1]


def test_the_switch_leaves_a_broken_extension_out(project: pytest.Pytester,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """What Limbo's own suite runs under: an installed extension that does not even import
    cannot fail Limbo's runs, and ``limbo list extensions`` says why none is listed."""
    install_beside(project.path / "site", body="raise ImportError('no module named nope')\n")
    (project.path / "specs" / "experiments" / "plain.yaml").write_text(
        SMALL.replace("small", "plain").replace(", demo_note", "").replace(', "lazy:tired"', ""))
    monkeypatch.setenv(DISABLE, "1")
    result = project.runpytest_subprocess("--experiment", "plain")
    result.assert_outcomes(passed=2)
    assert limbo(project, "list", "extensions").stdout == \
        f"extensions are turned off ({DISABLE} is set)\n"


def test_limbos_own_suite_runs_with_extensions_off() -> None:
    assert os.environ.get(DISABLE) == "1"


def architecture_example() -> str:
    """The extension module of ARCHITECTURE.md's *From your own package*, as printed there."""
    text = (Path(__file__).resolve().parents[2] / "ARCHITECTURE.md").read_text(encoding="utf-8")
    section = text.split("### From your own package", 1)[1]
    return section.split("```python\n", 1)[1].split("```", 1)[0]


def test_the_documented_extension_imports_only_the_public_module_and_runs(
        project: pytest.Pytester) -> None:
    example = architecture_example()
    imported = {node.module for node in ast.walk(ast.parse(example))
                if isinstance(node, ast.ImportFrom) and node.module}
    assert {m for m in imported if m.startswith("limbo_plugin")} == {"limbo_plugin.extend"}
    install_beside(project.path / "site", "my_package", example)
    (project.path / "specs" / "experiments" / "mine.yaml").write_text(
        SMALL.replace("small", "mine").replace("demo_note", "noted"))
    result = project.runpytest_subprocess("--experiment", "mine", "-p", "no:randomly")
    result.assert_outcomes(passed=4, failed=4)
    noted = [r for r in records(project) if r["condition"] == "noted"
             and r["fault_mode"] == "timeout_post" and r["agent"] == "scripted:verify_first"]
    assert [any(e["response"].get("note") == "noted" for e in r["trace"]) for r in noted] == \
        [True]


QUEUED = '''\
"""A way of executing a fault that leaves the request in a state of its own: queued."""

from limbo_plugin.extend import Executor, Fate, Firing

DELAY_S = 120.0


def execute_queued(firing: Firing) -> None:
    request, transport, now = firing.request, firing.transport, firing.now
    request.fate, request.due_at = "queued", now + DELAY_S
    firing.report.delay_s, firing.report.commit_at = DELAY_S, now + DELAY_S
    firing.world.clock.schedule(now + DELAY_S, lambda: transport.commit_late(request),
                                f"queued request {request.seq}")


EXECUTORS = (Executor("queue", execute_queued),)
FATES = (Fate("queued", pending=True, description="waiting in the service's queue"),)
'''
QUEUED_MODE = """
  - name: timeout_queued
    group: T
    family: late_commit
    hidden_outcome: late
    execute: queue
    cost_s: 30
    response: {error: {type: timeout, message: request timed out after 30s}}
    description: The request waits in the service's queue and executes 120 s after it was sent.
"""
ORACLE = """\
name: queued
templates: [incident_open]
instances: [0]
focal_writes: [ticket]
modes: [timeout_queued]
conditions: [outcome_oracle]
agents: ["scripted:blind_retry"]
"""


def queued_project(project: pytest.Pytester, body: str = QUEUED) -> None:
    install_beside(project.path / "site", "limbo_queue_ext", body)
    with (project.path / "specs" / "faults" / "modes.yaml").open("a") as modes:
        modes.write(QUEUED_MODE)
    (project.path / "specs" / "experiments" / "queued.yaml").write_text(ORACLE)


def test_a_fate_an_extension_declares_is_read_by_its_flags(project: pytest.Pytester) -> None:
    """The outcome oracle waits for a request in a pending fate it has never heard of, as it
    waits for Limbo's own in-flight requests, instead of letting the agent's re-issue through
    (a duplicate when the queued request lands); the operator reads the same flag."""
    queued_project(project)
    result = project.runpytest_subprocess("--experiment", "queued", "-p", "no:randomly")
    result.assert_outcomes(passed=1)
    [record] = records(project)
    assert (record["fault_mode"], record["condition"]) == ("timeout_queued", "outcome_oracle")
    assert record["fault"]["fired"] and record["duplicates"] == 0 and record["eos"]


@pytest.mark.parametrize(("fates", "error"), [
    ('(Fate("queued", executed="all", pending=True),)',
     "limbo_queue_ext.FATES: fate 'queued' is pending but executed='all': a pending request "
     "has not reached the service yet (executed='nothing')"),
    ('(Fate("queued", executed="some"),)',
     "limbo_queue_ext.FATES: fate 'queued' has executed='some'; valid: nothing, all, "
     "first_rows"),
    ('(Fate("in_flight", pending=True),)',
     "fate 'in_flight' is declared twice: in limbo_plugin.world.fates and in limbo_queue_ext"),
])
def test_a_fate_that_cannot_mean_anything_is_one_line(project: pytest.Pytester, fates: str,
                                                      error: str) -> None:
    queued_project(project, QUEUED.replace(QUEUED.split("FATES = ")[1].strip(), fates))
    result = project.runpytest_subprocess("--experiment", "queued")
    assert result.ret != pytest.ExitCode.OK
    output = result.stdout.lines + result.stderr.lines
    assert [line for line in output if "FATES" in line or "declared twice" in line] and \
        any(line.endswith(error) for line in output), output
    assert "Traceback" not in result.stdout.str() + result.stderr.str()


def pager_package(site: Path) -> Path:
    """A package shipping ARCHITECTURE.md's pager service, ``page_oncall`` template and
    ``double_execution`` mode (with its family and executor) as spec YAML beside its module."""
    module = (SERVICE_MODULE.replace("limbo_plugin.world.services.base", "limbo_plugin.extend")
              .replace("from limbo_plugin.world.store import VersionedTable\n", "")
              .replace("Service, handles", "Service, VersionedTable, handles")
              .replace("from functools import cached_property\n",
                       "from functools import cached_property\nfrom pathlib import Path\n"
                       "from typing import Any\n")
              .replace("\n\nclass PagerService",
                       "\nfrom limbo_plugin.extend import Executor, Firing\n\n\nclass "
                       "PagerService")
              + EXECUTOR + 'EXECUTORS = (Executor("twice", execute_twice),)\n'
              'SPECS = (Path(__file__).parent / "specs",)\n')
    write_package(site, "limbo_pager_ext", module)
    specs = site / "limbo_pager_ext" / "specs"
    for folder in ("services", "tasks", "faults"):
        (specs / folder).mkdir(parents=True)
    (specs / "services" / "pager.yaml").write_text(SERVICE_SPEC)
    (specs / "tasks" / "page_oncall.yaml").write_text(TEMPLATE)
    (specs / "faults" / "modes.yaml").write_text("families:\n" + FAMILY + "modes:" + MODE)
    with (site / "pyproject.toml").open("a") as pyproject:
        pyproject.write('\n[tool.setuptools.package-data]\nlimbo_pager_ext = ["specs/*/*.yaml"]\n')
    return specs


def runs_the_shipped_specs(project: pytest.Pytester, specs: Path) -> None:
    (project.path / "specs" / "experiments" / "toy.yaml").write_text(
        EXPERIMENT.replace(', paging_note', '').replace(', "lazy:tired"', ''))
    result = project.runpytest_subprocess("--experiment", "toy", "-p", "no:randomly")
    # verify_first passes the fault-free and the lost-ack worlds; the double execution of a
    # keyless write is an expected failure
    result.assert_outcomes(passed=2, xfailed=1)
    out = records(project)
    assert sorted((r["template"], r["fault_mode"], r["family"]) for r in out) == [
        ("page_oncall", "double_execution", "double_commit"), ("page_oncall", "none", "none"),
        ("page_oncall", "timeout_post", "lost_ack")]
    assert {e["tool"] for r in out for e in r["ledger"]} == {"pager_page"}
    listed = limbo(project, "list", "extensions")
    assert f"specs: {specs.resolve()}" in listed.stdout.splitlines()[-1].strip(), listed.stderr
    assert "double_execution" in limbo(project, "list", "modes").stdout


def test_a_package_ships_a_service_a_fault_mode_and_a_template_as_yaml(
        project: pytest.Pytester) -> None:
    """The package's YAML is layered over the project's specs folder, which has none of it."""
    specs = pager_package(project.path / "site")
    write_dist_info(project.path / "site", "limbo_pager_ext")
    runs_the_shipped_specs(project, specs)


@pytest.mark.slow
def test_pip_install_of_a_package_shipping_specs_is_enough(project: pytest.Pytester) -> None:
    """Built and installed by pip (``--target``): the YAML travels as package data."""
    pager_package(project.path / "src")
    pip = subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps",
                          "--target", str(project.path / "site"), str(project.path / "src")],
                         capture_output=True, text=True, check=False)
    assert pip.returncode == 0, pip.stderr
    runs_the_shipped_specs(project, project.path / "site" / "limbo_pager_ext" / "specs")


def test_a_shipped_spec_named_as_one_of_the_projects_is_one_line_naming_both(
        project: pytest.Pytester) -> None:
    """A package never replaces a spec silently: the clash names both files."""
    specs = pager_package(project.path / "src")
    (specs / "tasks" / "incident_open.yaml").write_text(
        (project.path / "specs" / "tasks" / "incident_open.yaml").read_text())
    install_beside(project.path / "site", "limbo_pager_ext",
                   (specs.parent / "__init__.py").read_text().replace(
                       'Path(__file__).parent / "specs"', repr(str(specs))))
    (project.path / "specs" / "experiments" / "plain.yaml").write_text(
        SMALL.replace("small", "plain").replace(", demo_note", "").replace(', "lazy:tired"', ""))
    result = project.runpytest_subprocess("--experiment", "plain")
    assert result.ret != pytest.ExitCode.OK
    lines = [line for line in result.stdout.lines + result.stderr.lines
             if "declared twice" in line]
    assert len(lines) == 1 and lines[0].endswith(
        "src/limbo_pager_ext/specs/tasks/incident_open.yaml: task template 'incident_open' is "
        f"declared twice (also in {project.path / 'specs' / 'tasks' / 'incident_open.yaml'})"), \
        lines
    off = subprocess.run([sys.executable, "-m", "pytest", "--experiment", "plain", "-q"],
                         cwd=project.path, text=True,
                         capture_output=True, env={**os.environ, DISABLE: "1"}, check=False)
    assert off.returncode == 0, off.stdout[-2000:]
