"""The ready-to-use sharding configurations in examples/: valid, consistent, and their commands
really shard and merge (run here on a small experiment, one shard after the other)."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
WORKFLOW = EXAMPLES / "github-actions.yml"
GATE_WORKFLOW = EXAMPLES / "github-actions-gate.yml"
RELEASE_WORKFLOW = EXAMPLES.parent / ".github" / "workflows" / "release.yml"
MANIFEST = EXAMPLES / "k8s-indexed-job.yaml"


def local(script: str) -> str:
    """A CI command run here: this interpreter, and the ``limbo`` of the code under test."""
    return (script.replace("python -m pytest", f"{sys.executable} -m pytest")
            .replace("limbo ", f"{sys.executable} -m limbo_plugin.cli "))


def shell(script: str, cwd: Path, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["sh", "-c", local(script)], cwd=cwd, capture_output=True, text=True,
                          env={**os.environ, **env}, check=False)


def records(path: Path) -> list[str]:
    return sorted(json.dumps({k: v for k, v in json.loads(line).items() if k != "run_id"},
                             sort_keys=True)
                  for line in path.read_text().splitlines() if line.strip())


def unsharded(project: pytest.Pytester) -> list[str]:
    project.runpytest("--experiment", "small", f"--limbo-records={project.path / 'all.jsonl'}")
    return records(project.path / "all.jsonl")


# -- GitHub Actions ------------------------------------------------------------------------------
def workflow() -> dict[Any, Any]:
    loaded: dict[Any, Any] = yaml.safe_load(WORKFLOW.read_text())
    return loaded


def step(job: dict[str, Any], name_start: str) -> str:
    found = [s["run"] for s in job["steps"] if s.get("name", "").startswith(name_start)]
    assert len(found) == 1, name_start
    return str(found[0])


@pytest.mark.parametrize("path", [WORKFLOW, GATE_WORKFLOW, RELEASE_WORKFLOW],
                         ids=lambda p: p.name)
def test_the_workflow_is_valid_against_the_github_schema(path: Path) -> None:
    # Part of the dev extra: a missing checker fails here rather than skipping the check.
    if importlib.util.find_spec("check_jsonschema") is None:
        pytest.fail("check-jsonschema is not installed: pip install '.[dev]'")
    result = subprocess.run([sys.executable, "-m", "check_jsonschema", "--builtin-schema",
                             "vendor.github-workflows", str(path)],
                            capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_matrix_covers_every_shard_and_the_report_job_waits_for_it() -> None:
    flow = workflow()
    shards = int(flow["env"]["SHARDS"])
    assert flow["jobs"]["shard"]["strategy"]["matrix"]["shard"] == list(range(shards))
    assert flow["jobs"]["shard"]["strategy"]["fail-fast"] is False
    assert "--limbo-shard ${{ matrix.shard }}/$SHARDS" in step(flow["jobs"]["shard"], "Run")
    assert flow["jobs"]["report"]["needs"] == "shard"


@pytest.mark.slow
def test_the_workflows_commands_shard_merge_and_gate(project: pytest.Pytester) -> None:
    flow = workflow()
    run_shard = step(flow["jobs"]["shard"], "Run")
    shards = project.path / "shards"
    shards.mkdir()
    env = {"EXPERIMENT": "small", "AGENT": flow["env"]["AGENT"],
           "SHARDS": str(flow["env"]["SHARDS"])}
    for index in flow["jobs"]["shard"]["strategy"]["matrix"]["shard"]:
        done = shell(run_shard.replace("${{ matrix.shard }}", str(index)), project.path, **env)
        assert done.returncode == 0, done.stdout + done.stderr  # episode failures tolerated
        (project.path / "reports" / f"shard-{index}.jsonl").replace(
            shards / f"shard-{index}.jsonl")
    report = flow["jobs"]["report"]
    assert shell(step(report, "Merge"), project.path).returncode == 0
    summary = project.path / "step-summary.md"
    done = shell(step(report, "Summary"), project.path, GITHUB_STEP_SUMMARY=str(summary))
    assert done.returncode == 0 and "# Limbo summary" in summary.read_text()
    gate = shell(step(report, "Release gate"), project.path)
    assert gate.returncode in (0, 1) and "Limbo gate 'release'" in gate.stdout
    assert records(project.path / "reports" / "episodes.jsonl") == unsharded(project)


def junit_counts(path: Path) -> tuple[int, int, list[str]]:
    """Tests, failures and the names of the failed cases of a JUnit file."""
    import xml.etree.ElementTree as ET

    suite = ET.parse(path).getroot().find("testsuite")
    assert suite is not None
    failed = [c.attrib["name"] for c in suite.iter("testcase") if c.find("failure") is not None]
    return int(suite.attrib["tests"]), int(suite.attrib["failures"]), failed


@pytest.mark.slow
def test_the_gate_workflow_fails_a_pull_request_that_regresses_against_mains_baseline(
        project: pytest.Pytester) -> None:
    flow = yaml.safe_load(GATE_WORKFLOW.read_text())
    job = flow["jobs"]["gate"]
    gate = step(job, "Run and gate")
    env = {name: str(value) for name, value in flow["env"].items()}
    summary = project.path / "step-summary.md"
    # A push to main, with no baseline yet: judged on the thresholds alone; its records are
    # what the workflow keeps as main's baseline artifact.
    main_run = shell(gate, project.path, **env, GITHUB_STEP_SUMMARY=str(summary))
    assert main_run.returncode == 0, main_run.stdout[-3000:] + main_run.stderr[-2000:]
    assert "not worse than baseline" not in main_run.stdout
    upload = [s for s in job["steps"] if s.get("name", "").startswith("Keep main's records")]
    assert upload[0]["with"]["path"] == "reports/episodes.jsonl"
    assert upload[0]["with"]["name"] in step(job, "Main's baseline")
    (project.path / "baseline").mkdir()
    (project.path / "reports" / "episodes.jsonl").replace(
        project.path / "baseline" / "episodes.jsonl")
    # A pull request whose agent regressed: the gate fails, and JUnit says so, check by check.
    regressed = shell(gate, project.path, **{**env, "AGENT": "scripted:blind_retry"},
                      GITHUB_STEP_SUMMARY=str(summary))
    assert regressed.returncode == 1, regressed.stdout[-3000:] + regressed.stderr[-2000:]
    tests, failures, failed = junit_counts(project.path / "reports" / "junit.xml")
    assert failures == len(failed) > 0 and tests > failures
    assert "not worse than baseline [lost_ack] (passed)" in failed
    assert all(not name.endswith("blind_retry") for name in failed), "episodes are measurements"
    assert "## Limbo gate `release`: FAILED" in summary.read_text()
    # The same agent as main's: the gate passes, and JUnit has no failure.
    same = shell(gate, project.path, **env)
    assert same.returncode == 0, same.stdout[-3000:]
    assert junit_counts(project.path / "reports" / "junit.xml")[1] == 0
    assert "ok   not worse than baseline [lost_ack]" in same.stdout


def test_the_release_builds_checks_and_publishes_on_a_tag_with_trusted_publishing() -> None:
    flow = yaml.safe_load(RELEASE_WORKFLOW.read_text())
    on = flow[True] if True in flow else flow["on"]  # YAML 1.1 reads the key `on` as true
    assert on["push"]["tags"] == ["v*"]
    build = flow["jobs"]["build"]
    assert "python -m build --sdist --wheel" in step(build, "Build")
    assert "twine check --strict dist/*" in step(build, "Check")
    publish = flow["jobs"]["publish"]
    assert publish["needs"] == "build" and publish["if"] == "github.ref_type == 'tag'"
    assert publish["permissions"] == {"id-token": "write"}, "trusted publishing, no token"
    assert publish["steps"][-1]["uses"].startswith("pypa/gh-action-pypi-publish@")
    assert "password" not in json.dumps(publish)


# -- Kubernetes ----------------------------------------------------------------------------------
def manifest() -> dict[str, dict[str, Any]]:
    return {doc["metadata"]["name"]: doc for doc in yaml.safe_load_all(MANIFEST.read_text())}


def container(job: dict[str, Any]) -> dict[str, Any]:
    found: dict[str, Any] = job["spec"]["template"]["spec"]["containers"][0]
    return found


def test_the_indexed_job_runs_one_shard_per_completion_index() -> None:
    docs = manifest()
    shards = docs["limbo-shards"]
    assert shards["kind"] == "Job" and shards["spec"]["completionMode"] == "Indexed"
    script = container(shards)["command"][-1]
    count = int(script.split("--limbo-shard env:JOB_COMPLETION_INDEX/")[1].split()[0])
    assert shards["spec"]["completions"] == count
    assert shards["spec"]["parallelism"] <= count
    assert shards["spec"]["template"]["spec"]["restartPolicy"] == "Never"
    merge = docs["limbo-merge"]
    assert merge["spec"]["suspend"] is True, "merging waits for the shards"
    claims = {v["persistentVolumeClaim"]["claimName"]
              for job in (shards, merge) for v in job["spec"]["template"]["spec"]["volumes"]}
    assert claims == {"limbo-results"} and docs["limbo-results"]["kind"] == \
        "PersistentVolumeClaim"


@pytest.mark.slow
def test_the_manifests_commands_read_the_index_and_merge(project: pytest.Pytester,
                                                         tmp_path: Path) -> None:
    docs = manifest()
    shards = docs["limbo-shards"]
    results = tmp_path / "results"
    results.mkdir()
    run_shard = container(shards)["command"][-1].replace("/results", str(results))
    env = {e["name"]: e["value"] for e in container(shards)["env"]} | {"EXPERIMENT": "small"}
    for index in range(shards["spec"]["completions"]):
        done = shell(run_shard, project.path, JOB_COMPLETION_INDEX=str(index), **env)
        assert done.returncode == 0, done.stdout + done.stderr
    written = sorted(p.name for p in results.glob("shard-*.jsonl"))
    assert written == [f"shard-{i}.jsonl" for i in range(shards["spec"]["completions"])]
    # The merge Job's command, without the HTML report (its own tests cover it).
    merge = container(docs["limbo-merge"])["command"][-1].replace("/results", str(results))
    merge = merge.replace(f"&& limbo report {results}/episodes.jsonl --out {results}/report ",
                          "")
    done = shell(merge, project.path)
    assert done.returncode in (0, 1), done.stdout + done.stderr
    assert "Limbo gate 'release'" in done.stdout
    assert records(results / "episodes.jsonl") == unsharded(project)
