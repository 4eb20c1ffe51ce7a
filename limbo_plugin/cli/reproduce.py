"""``limbo reproduce``: the paper's study end to end — budget, runs, reports — in one command.

The steps, in order (``--print`` shows them as a shell script without running anything):

1. **Budget.** ``limbo plan`` for every run: episodes, model calls, tokens and cost at the
   model's price (from the paper's per-episode figures, or from your own pilot run with
   ``--cassette``). With model-backed agents nothing runs until ``--yes`` says the budget is
   accepted.
2. **Runs.** One ``pytest --experiment eX`` per experiment and agent, each into its own record
   file under ``OUT/records/<experiment>/`` (``--shards N`` splits each into N shard commands,
   for N machines, and merges them with ``limbo merge``); plus a declared repeat of E1
   (``--limbo-repeat 2``, the second run only) for the stability analysis.
3. **Reports.** ``limbo report`` once per grouping of record files that the paper's tables
   read together (E1; E2 + E2k; E3 + E3k; E2 + E4; E2 + E2k + E5; E1 + E6), each printed with
   what combining those files means, into ``OUT/report/<group>/``.
4. **Index.** ``OUT/paper.md``: each table and figure of the paper, the file that holds it, or
   why it is missing.

``--agents`` replaces the paper's models by yours (or by scripted policies) in every experiment;
``--harnesses`` names the production harnesses of E3/E3k, each run with those models. A scripted
policy behind a harness is served as a model by a local scripted model server the command
starts itself, so the whole chain runs without a key. ``--small`` runs a fixed handful of focal
writes of each experiment (every mode and configuration of the design on them) — the chain in
about a minute with scripted agents, or a cheap pilot whose records ``--cassette`` turns into a
measured budget for the full design.
"""

from __future__ import annotations

import argparse
import shlex
import subprocess
import sys
import time
from collections.abc import Sequence
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from limbo_plugin.errors import UsageError
from limbo_plugin.reproduction.design import STUDY, Group, Run
from limbo_plugin.reproduction.steps import (
    StudyFailed,
    execute,
    parallel,
    report_commands,
    scripted_model,
    write_index,
)
from limbo_plugin.reproduction.study import Study, budget


def register(sub: Any) -> None:
    from limbo_plugin.cli.common import registry_of

    add_parser(sub).set_defaults(handler=lambda args: run_command(args, registry_of(args)))


def add_parser(sub: Any) -> Any:
    parser = sub.add_parser(
        "reproduce", help="the paper's study end to end: budget, runs, reports",
        description="Budget (limbo plan), every experiment's runs (pytest), the reports that "
        "read them together (limbo report) and an index of the paper's tables and figures "
        "(OUT/paper.md). See docs/reproduce.md.")
    parser.add_argument("--agents", default=None, metavar="A,B,…",
                        help="agents replacing every experiment's models (e.g. "
                        "litellm:openai/gpt-5.5,litellm:anthropic/claude-opus-4-5, or "
                        "scripted:blind_retry,scripted:same_key); default: the paper's")
    parser.add_argument("--harnesses", default=None, metavar="H,…|none",
                        help="E3/E3k's production harnesses (codex, copilot, hermes), each run "
                        "with every model of --agents, or full harness:<name>:<model> agents; "
                        "none: no harness; default: the paper's")
    parser.add_argument("--small", action="store_true",
                        help="a fixed handful of focal writes of each experiment (every mode "
                        "and configuration on them): a check of the chain, or a pilot run "
                        "for --cassette")
    parser.add_argument("--only", default=None, metavar="E1,E2,…",
                        help=f"these experiments only ({', '.join(STUDY)})")
    parser.add_argument("--out", default="reports/reproduce",
                        help="folder of records, logs and reports (default reports/reproduce)")
    parser.add_argument("-n", "--workers", type=int, default=1,
                        help="pytest-xdist workers per run (default 1)")
    parser.add_argument("-j", "--jobs", type=int, default=1,
                        help="runs (and reports) at a time (default 1); each run uses "
                        "--workers processes")
    parser.add_argument("--model-option", action="append", default=[], metavar="KEY=VALUE",
                        help="passed to every model-backed run (api_base=…); repeatable")
    parser.add_argument("--shards", type=int, default=1,
                        help="split each run into N --limbo-shard commands (for N machines; "
                        "here they run one after another) and merge them")
    parser.add_argument("--resume", action="store_true",
                        help="continue an interrupted reproduction (--limbo-resume)")
    parser.add_argument("--cassette", default=None, metavar="PATH",
                        help="budget from your own pilot run (limbo plan --cassette)")
    parser.add_argument("--yes", action="store_true",
                        help="spend the budget: without it, a study that calls a model stops "
                        "after printing its budget")
    parser.add_argument("--print", dest="print_only", action="store_true",
                        help="print the commands as a shell script and run nothing")
    return parser


def _list(text: str | None) -> list[str] | None:
    if text is None:
        return None
    items = [t.strip() for t in text.split(",") if t.strip()]
    return [] if items == ["none"] else items


def study_of(args: argparse.Namespace, registry: Any) -> Study:
    only = tuple(e.lower() for e in _list(args.only) or STUDY)
    unknown = [e for e in only if e not in STUDY]
    if unknown:
        raise UsageError(f"--only {args.only}: unknown experiment {unknown[0]!r}; valid: "
                         f"{', '.join(STUDY)}")
    for name, value in (("--workers", args.workers), ("--shards", args.shards),
                        ("--jobs", args.jobs)):
        if value < 1:
            raise UsageError(f"{name} {value}: give 1 or more")
    agents = _list(args.agents)
    if agents == []:
        raise UsageError("--agents: give at least one agent (or leave it out for the paper's)")
    return Study(out=Path(args.out), registry=registry, agents=agents,
                 harnesses=_list(args.harnesses), small=args.small, workers=args.workers,
                 model_options=tuple(args.model_option), shards=args.shards,
                 resume=args.resume, experiments=tuple(e for e in STUDY if e in only),
                 specs=args.specs)


def script(study: Study, runs: Sequence[Run], cassette: str | None) -> str:
    """The study as a shell script: the same commands ``limbo reproduce`` runs."""
    lines = ["#!/bin/sh", "# The paper's study, as `limbo reproduce` runs it.", "set -e", "",
             "# 1. Budget: what each run will cost, before anything is spent."]
    limbo = ["limbo", *(["--specs", study.specs] if study.specs else [])]
    seen = set()
    for run in runs:
        plan = [*limbo, "plan", "--experiment", run.experiment]
        if run.agent and not run.served_by:
            plan += ["--agent", run.agent]
        if cassette:
            plan += ["--cassette", cassette]
        if not run.served_by and tuple(plan) not in seen:
            seen.add(tuple(plan))
            lines.append(shlex.join(plan))
    lines += ["", "# 2. Runs: one record file per experiment and agent."]
    servers = sorted({r.served_by for r in runs if r.served_by})
    for policy, contract in servers:
        lines.append(f"# scripted:{policy} plays the model behind the harnesses ({contract}): "
                     f"python -m limbo_plugin.testing.openai_server --policy {policy} "
                     f"--contract {contract} --port 0  → $SCRIPTED_MODEL_URL")
    for run in runs:
        lines.append(f"# {run.label}: {len(study.expected(run))} episodes")
        if study.shards == 1:
            lines.append(shlex.join(run.argv()))
            continue
        files = run.shard_files(study.shards)
        lines += [shlex.join(run.argv(path, (k, study.shards)))
                  for k, path in enumerate(files)]
        lines.append(shlex.join([*limbo, "merge", str(run.records), *map(str, files)]))
    lines += ["", "# 3. Reports: the record files each group of tables reads together."]
    for group, command in report_commands(study, runs):
        lines.append(f"# {group.note}")
        lines.append(shlex.join([*limbo, *command]))
    return "\n".join(lines) + "\n"


def run_command(args: argparse.Namespace, registry: Any) -> int:
    study = study_of(args, registry)
    runs = study.plan()
    study.check(runs)
    if args.print_only:
        print(script(study, runs, args.cassette), end="")
        return 0
    started = time.monotonic()
    print("Step 1, budget (limbo plan):")
    lines, spends = budget(study, runs, args.cassette)
    print("\n".join(lines), flush=True)
    if spends and not args.yes:
        print("Nothing was run: this study calls models. Re-run with --yes to spend the budget "
              "above (or --small for a pilot, then --cassette with its records for a measured "
              "budget).")
        return 1
    logs = study.out / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    print(f"Step 2, runs ({len(runs)}, {args.jobs} at a time; logs in {logs}):", flush=True)
    with ExitStack() as stack:
        urls = {served: stack.enter_context(scripted_model(
            *served, logs / f"model-{'-'.join(served)}.log"))
            for served in sorted({r.served_by for r in runs if r.served_by})}

        def one(run: Run) -> str:
            began = time.monotonic()
            result = execute(study, run, logs, urls.get(run.served_by) if run.served_by
                             else None)
            return f"{run.label}: {result} ({time.monotonic() - began:.0f} s)"

        for line in parallel(one, runs, args.jobs):
            print(f"  {line}", flush=True)
    print("Step 3, reports (limbo report):", flush=True)
    commands = report_commands(study, runs)
    for group, command in commands:
        print(f"Note on {group.name}: {group.note}")
        print(f"$ limbo {shlex.join(command)}", flush=True)

    def report(item: tuple[Group, list[str]]) -> str:
        group, command = item
        began = time.monotonic()
        log = logs / f"report-{group.name}.log"
        specs = [] if args.specs is None else ["--specs", args.specs]
        with open(log, "w", encoding="utf-8") as sink:
            code = subprocess.run([sys.executable, "-m", "limbo_plugin.cli", *specs, *command],
                                  stdout=sink, stderr=subprocess.STDOUT, check=False).returncode
        if code != 0:
            raise StudyFailed(f"limbo report for {group.name} failed; see {log}")
        return (f"{study.out / 'report' / group.name / 'index.html'} "
                f"({time.monotonic() - began:.0f} s)")

    for line in parallel(report, commands, args.jobs):
        print(f"  {line}", flush=True)
    index, produced, total = write_index(study, [g.name for g, _ in commands])
    print(f"Step 4, index: {produced} of {total} of the paper's tables and figures produced: "
          f"{index} ({time.monotonic() - started:.0f} s in all)")
    return 0
