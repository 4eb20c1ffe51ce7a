"""Allure results for an episode: title, labels, the episode key as parameters, attachments.

allure-pytest is optional at import: without it (or without ``--alluredir``) this does nothing.
The key goes in as parameters so Allure does not fold different episodes together as retries.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

from limbo_plugin.errors import LimboError
from limbo_plugin.records import EpisodeRecord

try:  # pragma: no cover - exercised when allure-pytest is installed
    import allure
except ImportError:  # pragma: no cover
    allure = None  # type: ignore[assignment]


def enabled(config: Any) -> bool:
    return allure is not None and bool(config.getoption("allure_report_dir", default=None))


def describe(record: EpisodeRecord) -> None:
    if allure is None:
        return
    focal = "no fault" if record.fault_mode == "none" else (
        f"{record.fault_mode} on {record.focal_write} ({record.focal_tool})")
    allure.dynamic.title(f"{record.template} #{record.instance}: {focal}")
    allure.dynamic.epic(record.template)
    allure.dynamic.feature(record.family)
    allure.dynamic.story(record.fault_mode)
    allure.dynamic.tag(f"contract:{record.contract}", f"condition:{record.condition}",
                       f"agent:{record.agent}")
    for name in ("template", "instance", "focal_write", "fault_mode", "contract", "docs",
                 "instruction", "condition", "operator", "agent"):
        allure.dynamic.parameter(name, str(getattr(record, name)))
    allure.dynamic.description(
        f"World seed {record.world_seed}. Fault fired: {record.fired}. "
        f"Duplicates: {record.duplicates}. Final status: {record.final_status}. "
        f"Behaviour after the fault: {record.behaviour}.")


def attach(record: EpisodeRecord) -> None:
    if allure is None:
        return
    data = record.model_dump(mode="json")
    trace, ledger = data.pop("trace"), data.pop("ledger")
    for name, body in (("trace", trace), ("ledger", ledger), ("grade", data)):
        allure.attach(json.dumps(body, indent=2, sort_keys=True, default=str), name=name,
                      attachment_type=allure.attachment_type.JSON)


def gate_check(gate: str, name: str, passed: bool, detail: str) -> None:
    """A gate's check as an Allure test result (``limbo`` suite, ``gate`` feature), written by
    allure-pytest's own result writer: the check is judged after the last episode, outside any
    test Allure follows."""
    if allure is None:
        return
    import hashlib
    import time
    import uuid

    from allure_commons import plugin_manager
    from allure_commons.model2 import Label, Status, StatusDetails, TestResult

    now = int(time.time() * 1000)
    full_name = f"gate {gate}: {name}"
    history = hashlib.sha256(full_name.encode()).hexdigest()[:32]  # the same check, run to run
    result = TestResult(
        uuid=str(uuid.uuid4()), name=name, fullName=full_name, historyId=history,
        testCaseId=history,
        status=Status.PASSED if passed else Status.FAILED,
        statusDetails=StatusDetails(message=detail), description=detail, start=now, stop=now,
        labels=[Label(name="suite", value=f"gate {gate}"), Label(name="feature", value="gate"),
                Label(name="framework", value="limbo")])
    plugin_manager.hook.report_result(result=result)


class AllureUnavailable(LimboError):
    """``limbo allure`` cannot run: no results, or no ``npx`` to fetch Allure with."""


def generate(results: str | Path, out: str | Path, *, npx: str | None = None,
             timeout_s: float = 600.0) -> Path:
    """Render Allure results as a static HTML report with Allure 3 (``npx --yes allure``).

    Allure 3 is an npm package, so ``npx --yes`` fetches it on first use and nothing has to be
    installed by hand; Node.js (with ``npx``) is the one requirement.
    """
    results, out = Path(results), Path(out)
    if not results.is_dir() or not any(results.glob("*-result.json")):
        raise AllureUnavailable(f"{results}: no Allure results; run pytest with "
                                f"--alluredir={results} --clean-alluredir first")
    runner = npx or shutil.which("npx")
    if runner is None:
        raise AllureUnavailable("npx not found: install Node.js (it ships npx), e.g. "
                                "apt-get install -y nodejs npm, to render Allure reports")
    command = [runner, "--yes", "allure", "generate", str(results), "--output", str(out)]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout_s,
                              check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise AllureUnavailable(f"{' '.join(command)} failed: {exc}") from None
    if done.returncode != 0:
        last = (done.stderr or done.stdout).strip().splitlines()[-1:] or ["no output"]
        raise AllureUnavailable(f"{' '.join(command)} exited {done.returncode}: {last[0]}")
    return out / "index.html"
