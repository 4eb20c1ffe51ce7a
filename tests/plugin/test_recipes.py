"""Every "how to add" recipe of ARCHITECTURE.md, done once, exactly as written, in a copy of the
package and the specs: a fault mode with a new family and a new way of executing, a service, a
task template, an experiment, a condition, an agent kind and a report table. The copy is then
run by pytest and ``limbo report`` in subprocesses, so nothing leaks into this process."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]

FAMILY = """\
  - {name: double_commit, class: unresolvable,
     description: the service executed the request twice}
"""
MODE = """
  - name: double_execution
    group: S
    family: double_commit
    hidden_outcome: duplicated
    execute: twice
    response_kind: success
    exactly_once_needs_key: true
    description: The service executed the request twice and answered once.
"""
EXECUTOR = '''
def execute_twice(firing: Firing) -> dict[str, Any]:
    """The service executes the request twice on arrival and answers once."""
    request, transport = firing.request, firing.transport
    body = transport.settle(request, firing.world.execute(request))
    firing.world.execute(request, origin="redelivery", sub="r")
    return body


'''
SERVICE_SPEC = """\
service: pager
description: Pages on-call engineers.
tools:
  - name: pager_page
    description: Page an on-call engineer with a message. Returns the page id.
    parameters:
      engineer: {type: string, minLength: 1}
      message: {type: string, minLength: 1}
    required: [engineer, message]
    contract:
      read_only_hint: false
      idempotent_hint: false
      idempotency: non_idempotent
      intent_fields: [engineer, message]
      read_back:
        tool: pager_list
        args: {engineer: "{engineer}"}
        items: pages
        match: {message: "{message}"}
      record_noun: page
  - name: pager_list
    description: List the pages sent to an engineer.
    parameters:
      engineer: {type: string, minLength: 1}
    required: [engineer]
    contract: {read_only_hint: true, idempotent_hint: true, idempotency: read_only}
"""
SERVICE_MODULE = '''\
"""Pager: pages to on-call engineers."""

from __future__ import annotations

from functools import cached_property

from limbo_plugin.world.services.base import Args, Body, Execution, Service, handles
from limbo_plugin.world.store import VersionedTable


class PagerService(Service):
    """Every page is a row of one versioned table, made on first use."""

    name = "pager"

    @cached_property
    def pages(self) -> VersionedTable:
        return VersionedTable()

    @handles("pager_page")
    def page(self, args: Args, ex: Execution) -> Body:
        page_id = self.new_id("pg", ex)
        self.pages.put(page_id, {"id": page_id, **args}, ex.t)
        self.commit(args, ex, [page_id])
        return {"id": page_id}

    @handles("pager_list")
    def list_pages(self, args: Args, ex: Execution) -> Body:
        at = self.view_time(ex)
        pages = [row for _, row, _ in self.pages.visible(at)
                 if row["engineer"] == args["engineer"]]
        return {"pages": pages}


SERVICES = (PagerService,)
'''
TEMPLATE = """\
name: page_oncall
description: Page the on-call engineer once about an alert.
services: [pager]
params:
  engineer: {choice: [ana, bo, chen]}
instruction: >-
  Page {engineer} with the message "Disk almost full on db-1". Make sure each action happens
  exactly once.
required:
  - {id: page, tool: pager_page, where: {engineer: "{engineer}"}}
focal_writes:
  - {id: page, tool: pager_page}
plan:
  - {id: page, tool: pager_page, args: {engineer: "{engineer}", message: Disk almost full on db-1}}
"""
EXPERIMENT = """\
name: toy
templates: [page_oncall]
instances: [0]
modes: [none, timeout_post, double_execution]
conditions: [vanilla, paging_note]
agents: ["@option", "lazy:tired"]
"""
CONDITION_MODULE = '''\
"""``paging_note``: a note on every tool error the agent gets."""

from __future__ import annotations

from limbo_plugin.conditions.base import Condition, Middleware
from limbo_plugin.toolapi import ToolCall, ToolResult


class PagingNote(Middleware):
    def call(self, call: ToolCall) -> ToolResult:
        result = self.inner.call(call)
        if call.origin == "agent" and result.is_error:
            return ToolResult({**result.content, "toy_note": "noted"}, is_error=True)
        return result


CONDITIONS = (Condition("paging_note", "a note on every tool error", wraps=PagingNote),)
'''
AGENT_MODULE = '''\
"""``lazy:<reason>``: gives up at once."""

from __future__ import annotations

from limbo_plugin.agents.base import AgentSession


class LazyAgent:
    def __init__(self, reason: str) -> None:
        self.name = f"lazy:{reason}"
        self.reason = reason

    def run(self, session: AgentSession) -> None:
        session.call("finish", {"status": "failed", "summary": self.reason,
                                "uncertain_operations": []})
'''
AGENT_KIND = '''\
def _check_lazy(rest: str) -> None:
    if not rest:
        raise UsageError("agent 'lazy:' needs a reason, e.g. lazy:tired")


def _build_lazy(rest: str, options: AgentOptions) -> Agent:
    from limbo_plugin.agents.lazy import LazyAgent

    return LazyAgent(rest)


'''

TABLE_MODULE = '''\
"""Episodes per fault family, in the fault spec's order."""

from __future__ import annotations

from collections.abc import Sequence

from limbo_plugin.report.facets import ordered_families
from limbo_plugin.store.view import EpisodeView
from limbo_plugin.report.tables.base import Column, Result, Skipped, Table

ID = "episodes_per_family"
TITLE = "Episodes per family"


def table_per_family(rows: Sequence[EpisodeView]) -> Result:
    if not rows:
        return Skipped(ID, TITLE, "no episode")
    table = Table(ID, TITLE, "How many episodes each family has.",
                  [Column("family", "family"), Column("episodes", "episodes", "int")])
    for family in ordered_families(rows):
        table.rows.append({"family": family,
                           "episodes": sum(r.family == family for r in rows)})
    return table
'''


def insert(path: Path, anchor: str, text: str, *, after: bool = False) -> None:
    """Insert ``text`` before (or after) the one occurrence of ``anchor`` in ``path``."""
    source = path.read_text(encoding="utf-8")
    assert source.count(anchor) == 1, f"the recipe's anchor {anchor!r} is not unique in {path}"
    new = anchor + text if after else text + anchor
    path.write_text(source.replace(anchor, new), encoding="utf-8")


@pytest.fixture
def toy(pytester: pytest.Pytester) -> pytest.Pytester:
    shutil.copytree(ROOT / "limbo_plugin", pytester.path / "limbo_plugin",
                    ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(ROOT / "specs", pytester.path / "specs")
    package, specs = pytester.path / "limbo_plugin", pytester.path / "specs"
    pytester.makeini("[pytest]\ntestpaths = specs\n"
                     "addopts = -p no:cacheprovider -p no:benchmark\n"
                     "filterwarnings = error::pytest.PytestUnknownMarkWarning\n")
    # A fault mode: its YAML entry, with a new family, and a new way of executing.
    insert(specs / "faults" / "modes.yaml", "  - {name: none, class: none", FAMILY)
    modes = specs / "faults" / "modes.yaml"
    modes.write_text(modes.read_text() + MODE)
    insert(package / "faults.py", "EXECUTORS = (\n", EXECUTOR)
    insert(package / "faults.py", "EXECUTORS = (\n", '    Executor("twice", execute_twice),\n',
           after=True)
    # A service: its YAML and one module.
    (specs / "services" / "pager.yaml").write_text(SERVICE_SPEC)
    (package / "world" / "services" / "pager.py").write_text(SERVICE_MODULE)
    # A task template and an experiment: YAML only.
    (specs / "tasks" / "page_oncall.yaml").write_text(TEMPLATE)
    (specs / "experiments" / "toy.yaml").write_text(EXPERIMENT)
    # A condition: one module.
    (package / "conditions" / "paging_note.py").write_text(CONDITION_MODULE)
    # An agent kind: one module and one registry entry.
    (package / "agents" / "lazy.py").write_text(AGENT_MODULE)
    registry = package / "agents" / "registry.py"
    insert(registry, "AGENT_KINDS: tuple[AgentKind, ...] = (\n", AGENT_KIND)
    insert(registry, "AGENT_KINDS: tuple[AgentKind, ...] = (\n",
           '    AgentKind("lazy", "lazy:<reason>", _check_lazy, _build_lazy),\n', after=True)
    # A report table: one module and one entry in TABLES.
    (package / "report" / "tables" / "per_family.py").write_text(TABLE_MODULE)
    tables = package / "report" / "tables" / "catalog.py"
    insert(tables, "TABLES: tuple[Generator, ...] = (\n",
           "    _rows_only(table_per_family),\n", after=True)
    insert(tables, "Generator = Callable[",
           "from limbo_plugin.report.tables.per_family import table_per_family\n\n")
    return pytester


def records(project: pytest.Pytester) -> list[dict[str, Any]]:
    path = project.path / "reports" / "episodes.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines() if line]


@pytest.mark.slow
def test_each_recipe_is_enough_to_run_what_it_adds(toy: pytest.Pytester) -> None:
    result = toy.runpytest_subprocess("--experiment", "toy", "-p", "no:randomly")
    # verify_first passes the fault-free and the lost-ack worlds and duplicates the double
    # execution; the lazy agent fails everything: 3 worlds × 2 conditions × 2 agents. The
    # double execution of a write without a key is an expected failure (exactly_once_needs_key).
    result.assert_outcomes(passed=4, failed=4, xfailed=4)
    out = records(toy)
    double = [r for r in out if r["fault_mode"] == "double_execution"]
    assert len(double) == 4
    assert {(r["family"], r["fault_class"]) for r in double} == {("double_commit",
                                                                  "unresolvable")}
    verified = [r for r in double if r["agent"] == "scripted:verify_first"]
    assert [r["duplicates"] for r in verified] == [1, 1]
    assert all(e["tool"] == "pager_page" for r in verified for e in r["ledger"])
    noted = next(r for r in out if r["fault_mode"] == "timeout_post"
                 and r["condition"] == "paging_note" and r["agent"] == "scripted:verify_first")
    assert any(e["response"].get("toy_note") == "noted" for e in noted["trace"])
    assert {r["final_status"] for r in out if r["agent"] == "lazy:tired"} == {"failed"}
    summary = json.loads((toy.path / "reports" / "episodes.summary.json").read_text())
    group = next(rows for label, rows in summary["groups"].items()
                 if "scripted:verify_first" in label and "condition=vanilla" in label)
    assert [row["family"] for row in group] == ["lost_ack", "double_commit", "none",
                                                "all_faulted"]
    report = toy.run(sys.executable, "-m", "limbo_plugin.cli", "report",
                     "reports/episodes.jsonl", "--out", "report")
    assert report.ret == 0, report.stderr.str()
    table = json.loads((toy.path / "report" / "tables" / "episodes_per_family.json").read_text())
    assert [(row["family"], row["episodes"]) for row in table["rows"]] == [
        ("lost_ack", 4), ("double_commit", 4), ("none", 4)]
    # The new family is in the summary's Markdown, the report's family table and the explorer.
    assert "double_commit" in (toy.path / "reports" / "episodes.summary.md").read_text()
    table3 = json.loads((toy.path / "report" / "tables" / "table3_agents.json").read_text())
    row = next(r for r in table3["rows"]
               if r["agent"] == "scripted:verify_first" and r["condition"] == "vanilla")
    assert (row["dup_double_commit"]["k"], row["dup_double_commit"]["n"]) == (1, 1)
    index = (toy.path / "report" / "data" / "index.js").read_text()
    explorer = json.loads(index.split("=", 1)[1].strip().rstrip(";"))
    assert explorer["familyOrder"] == ["lost_ack", "double_commit", "none"]
    assert "double_execution" in explorer["values"]["fault_mode"]
    # ... and a gate can hold it to a threshold (verify_first duplicated every double execution).
    (toy.path / "gate.yaml").write_text("name: g\nthresholds:\n  - {metric: duplicate_rate, "
                                        "family: double_commit, max: 0.5}\n")
    gate = toy.run(sys.executable, "-m", "limbo_plugin.cli", "gate", "gate.yaml")
    assert gate.ret == 1
    assert "duplicate_rate[double_commit] ≤ 50.0%: 100.0% (1/1;" in gate.stdout.str()


SUITE = [
    "tests/test_tasks.py", "tests/experiments/test_study_designs.py", "tests/test_runconfig.py",
    "tests/test_architecture.py", "tests/test_episode_labels.py",
    "tests/cli/test_cli_bad_input.py::test_bad_input_is_one_line_and_exit_2[run unknown agent]",
    "tests/world/test_world_faults.py", "tests/world/test_world_services.py",
    "tests/world/test_service_tool_names.py", "tests/conditions/test_conditions_registry.py",
    "tests/conditions/test_conditions_oracles.py", "tests/conditions/test_conditions_guard.py",
    "tests/validity/test_propositions.py", "tests/report/test_report_tables.py",
    "tests/server/test_mcp_server.py::"
    "test_malformed_json_rpc_gets_errors_and_the_server_keeps_serving",
]
"""The parts of the project's own suite that read the specs and registries every recipe
extends: counts, names, catalogs, the validity sweep, the tables, the MCP tool list."""
STATED_IN_THE_DOCS = (
    "tests/experiments/test_study_designs.py::test_the_docs_state_each_experiments_size")
"""The documentation states the sizes of the shipped study; a template of one's own changes
them."""


@pytest.mark.early
@pytest.mark.slow
def test_the_projects_own_suite_stays_green_after_every_recipe(toy: pytest.Pytester) -> None:
    """Following the recipes breaks no test that should not care: nothing in :data:`SUITE`
    pins a count or a name the specs and registries already state."""
    shutil.copytree(ROOT / "tests", toy.path / "tests",
                    ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("conftest.py", "pytest.ini", "README.md", "ARCHITECTURE.md"):
        shutil.copy(ROOT / name, toy.path / name)
    shutil.copytree(ROOT / "docs", toy.path / "docs")
    result = toy.runpytest_subprocess(*SUITE, "--deselect", STATED_IN_THE_DOCS,
                                      "-p", "no:randomly", "-q")
    assert result.ret == pytest.ExitCode.OK, "\n".join(result.outlines[-30:])
    assert any(" passed" in line for line in result.outlines[-3:])


@pytest.mark.slow
def test_new_family_is_a_marker_and_new_names_are_listed(toy: pytest.Pytester) -> None:
    selected = toy.runpytest_subprocess("--experiment", "toy", "--collect-only", "-q",
                                        "-m", "double_commit and unresolvable")
    assert selected.ret == pytest.ExitCode.OK
    ids = [line for line in selected.outlines if "::" in line]
    assert len(ids) == 4 and all("double_execution" in i for i in ids)
    agent = toy.runpytest_subprocess("--experiment", "toy", "--agent", "nope:x")
    assert agent.ret == pytest.ExitCode.USAGE_ERROR
    assert "lazy:<reason>" in agent.stderr.str()
    condition = toy.runpytest_subprocess("--experiment", "toy", "--condition", "nope")
    assert "paging_note" in condition.stderr.str()
    listed = {what: toy.run(sys.executable, "-m", "limbo_plugin.cli", "list", what).stdout.str()
              for what in ("modes", "tools", "templates", "conditions", "experiments")}
    assert "double_execution" in listed["modes"] and "double_commit" in listed["modes"]
    assert "pager_page" in listed["tools"] and "page_oncall" in listed["templates"]
    assert "paging_note" in listed["conditions"] and "toy" in listed["experiments"]
