"""Running the study's steps: a local scripted model behind harness agents, one run (its shards
and their merge) checked against the plan, the reports per group, the index of the paper's
tables and figures, and a few at a time."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TypeVar

from limbo_plugin.errors import UsageError
from limbo_plugin.reproduction.design import GROUPS, PAPER, Group, Run
from limbo_plugin.reproduction.study import Study

T = TypeVar("T")


class StudyFailed(UsageError):
    """A run of the study did not finish: the line says which and where its log is."""


@contextmanager
def scripted_model(policy: str, contract: str, log: Path) -> Iterator[str]:
    """A local scripted model server playing ``policy`` (the harness's model); its URL."""
    log.parent.mkdir(parents=True, exist_ok=True)
    command = [sys.executable, "-m", "limbo_plugin.testing.openai_server", "--policy", policy,
               "--contract", contract, "--port", "0"]
    with open(log, "w", encoding="utf-8") as sink:
        process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=sink, text=True)
    try:
        assert process.stdout is not None
        line = process.stdout.readline()  # blocks until ready (or the server died)
        if not line.startswith("listening on "):
            raise StudyFailed(f"the scripted model server for {policy} did not start: see {log}")
        yield line.removeprefix("listening on ").strip()
    finally:
        process.terminate()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def execute(study: Study, run: Run, logs: Path, api_base: str | None) -> str:
    """Run ``run`` (its shards, then their merge) and check its records; one line of result."""
    run.records.parent.mkdir(parents=True, exist_ok=True)
    log = logs / f"{run.records.parent.name}-{run.records.stem}.log"
    shards = [(run.records, None)] if study.shards == 1 else [
        (path, (k, study.shards)) for k, path in enumerate(run.shard_files(study.shards))]
    with open(log, "a", encoding="utf-8") as sink:
        for path, shard in shards:
            argv = run.argv(path, shard, api_base)
            print(f"$ {shlex.join(argv)}", flush=True)
            sink.write(f"$ {shlex.join(argv)}\n")
            sink.flush()
            code = subprocess.run([sys.executable, "-m", *argv], stdout=sink,
                                  stderr=subprocess.STDOUT, check=False).returncode
            if code not in (0, 1):  # 1: some episodes failed, which is what is measured
                raise StudyFailed(f"{run.label}: pytest exited {code}; see {log}")
    if study.shards > 1:
        merge = ["merge", str(run.records), *(str(p) for p, _ in shards)]
        print(f"$ limbo {shlex.join(merge)}", flush=True)
        with open(log, "a", encoding="utf-8") as sink:
            code = subprocess.run([sys.executable, "-m", "limbo_plugin.cli", *merge],
                                  stdout=sink, stderr=subprocess.STDOUT, check=False).returncode
        if code != 0:
            raise StudyFailed(f"{run.label}: limbo merge failed; see {log}")
    return verify(study, run, log)


def verify(study: Study, run: Run, log: Path) -> str:
    """Every planned episode is in the records: a selection that drifted from the plan, or a
    run that stopped early, is found here and not in a table short of rows."""
    from limbo_plugin.store.read import read_records

    latest = {r.test_id: r for r in read_records(run.records)}
    expected = study.expected_ids(run)
    missing = expected - latest.keys()
    extra = latest.keys() - expected
    if missing or extra:
        raise StudyFailed(f"{run.label}: {len(expected)} episode(s) planned, "
                          f"{len(expected & latest.keys())} recorded, {len(extra)} unplanned "
                          f"(e.g. {sorted(missing or extra)[0]}); see {log}")
    errors = sum(1 for r in latest.values() if r.error is not None)
    failed = f", {errors} infrastructure error(s): re-run with --resume" if errors else ""
    return f"{len(latest)} episodes in {run.records}{failed}"


# -- reports and the index ---------------------------------------------------------------------
def report_commands(study: Study, runs: Sequence[Run]) -> list[tuple[Group, list[str]]]:
    commands = []
    for group in GROUPS:
        files = [str(r.records) for r in runs if r.records.parent.name in group.experiments]
        if not any(r.experiment == group.name for r in runs):  # its own experiment did not run
            continue
        commands.append((group, ["report", *files, "--rho", "experiment", "--out",
                                 str(study.out / "report" / group.name)]))
    return commands


def write_index(study: Study, groups: Sequence[str]) -> tuple[Path, int, int]:
    """``OUT/paper.md`` and ``OUT/paper.json``: each paper item, its file or why it is
    missing. Returns the index and how many items were produced of how many."""
    rows, items = [], []
    for item in PAPER:
        folder = study.out / "report" / item.group
        meta_path = folder / "report.json"
        if item.group not in groups or not meta_path.is_file():
            path, reason = None, f"the {item.group} report was not made"
        else:
            meta = json.loads(meta_path.read_text(encoding="utf-8"))
            file = (folder / "tables" / f"{item.id}.md" if item.kind == "table"
                    else folder / "figures" / f"{item.id}.png")
            path = file if file.is_file() else None
            reason = meta.get("skipped", {}).get(item.id, "not written")
        shown = os.path.relpath(path, study.out) if path else None
        items.append({"item": item.name, "report": item.group, "kind": item.kind, "id": item.id,
                      "file": shown, "missing": None if path else reason})
        rows.append(f"| {item.name} | `{item.group}` | "
                    + (f"[{shown}]({shown})" if shown else f"— {reason}") + " |")
    produced = sum(1 for i in items if i["file"])
    (study.out / "paper.json").write_text(json.dumps(items, indent=2) + "\n", encoding="utf-8")
    notes = "\n".join(f"- `{g.name}` ({' + '.join(g.experiments)}): {g.note}" for g in GROUPS
                      if g.name in groups)
    index = study.out / "paper.md"
    index.write_text(
        "# The paper's tables and figures\n\n"
        f"{produced} of {len(items)} produced by `limbo reproduce`. Each report is in "
        "`report/<name>/index.html`.\n\n| paper | report | file |\n|---|---|---|\n"
        + "\n".join(rows) + f"\n\n## What each report combines\n\n{notes}\n", encoding="utf-8")
    return index, produced, len(items)


def parallel(work: Callable[[T], str], items: Sequence[T], jobs: int) -> Iterator[str]:
    """``work`` on each item, ``jobs`` at a time (each is a child process, so threads do);
    results as they finish. The first failure stops the rest from starting and is raised."""
    from concurrent.futures import FIRST_EXCEPTION, ThreadPoolExecutor, wait

    with ThreadPoolExecutor(max_workers=jobs) as pool:
        futures = [pool.submit(work, item) for item in items]
        pending = set(futures)
        while pending:
            done, pending = wait(pending, return_when=FIRST_EXCEPTION)
            for future in done:
                if future.exception() is not None:
                    for rest in pending:
                        rest.cancel()
                    raise future.exception()  # type: ignore[misc]
                yield future.result()
