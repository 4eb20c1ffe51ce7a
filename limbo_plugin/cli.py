"""The ``limbo`` command: inspect specs, run one episode, and report on record files offline.

    limbo list templates|modes|conditions|policies|experiments|tools
    limbo run TEMPLATE INSTANCE FOCAL_WRITE MODE [--agent …] [--contract …] [--condition …]
    limbo show TEST_ID [--records reports/episodes.jsonl] [--json]
    limbo summary [RECORDS] [--markdown]
    limbo runs [RECORDS]
    limbo gate GATE [--records RECORDS] [--baseline previous|RECORDS]
    limbo compare A B [--json] [--all] [--outcome passed|eos|no_duplicate]
    limbo report [RECORDS…] [--out reports/report]
    limbo merge OUT IN…
    limbo view [RECORDS…] [--out reports/report] [--port N] [--no-browser]
    limbo allure [RESULTS] [--out reports/allure-report] [--no-serve]
    limbo mcp --url URL [--token TOKEN] [--transport stdio|streamable-http]
    limbo harness list | install [codex|copilot|hermes …]

Evaluating an experiment is pytest's job (``pytest -k late_commit -n 16``); this command is for
looking at what a run produced, or at a single world, without pytest.
"""

from __future__ import annotations

import argparse
import contextlib
import math
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn, TypeVar

from pydantic import ValidationError

from limbo_plugin.agents.deadline import DEFAULT_EPISODE_TIMEOUT_S
from limbo_plugin.errors import LimboError, UsageError
from limbo_plugin.records import BASELINE_FOCAL, DEFAULT_RECORDS, EpisodeKey, EpisodeRecord
from limbo_plugin.runconfig import RunConfig

R = TypeVar("R")

if TYPE_CHECKING:
    from limbo_plugin.spec.registry import SpecRegistry


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; every error a user can cause is one line on stderr and exit 2.

    The process's signal dispositions are left alone (``main`` also runs inside other programs,
    a test process among them, where a default SIGPIPE would kill the host on its next write to
    a closed pipe); a reader that goes away (``limbo list tools | head``) ends the command
    quietly instead.
    """
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.handler(args) or 0)
    except BrokenPipeError:
        _silence_stdout()
        return 1
    except LimboError as exc:
        print(f"limbo: {exc}", file=sys.stderr)
    except ValidationError as exc:
        from limbo_plugin.runconfig import first_problem

        print(f"limbo: {first_problem(exc)}", file=sys.stderr)
    except OSError as exc:  # a directory for a file, a permission, a full disk
        where = f"{exc.filename}: " if exc.filename else ""
        print(f"limbo: {where}{exc.strerror or exc}", file=sys.stderr)
    return 2


def _silence_stdout() -> None:
    """The reader of stdout is gone: send what is still buffered nowhere, so the interpreter's
    final flush does not print a traceback."""
    with contextlib.suppress(OSError, ValueError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("limbo-bench")
    except PackageNotFoundError:  # run from a source tree without installing
        return "unknown (not installed)"


def _instance(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"instances are numbered from 0, got {value}")
    return value


def _seconds(text: str) -> float:
    """``--episode-timeout``: a finite number of seconds, 0 for no limit (NaN or a negative
    value would reach ``setitimer`` and end in a traceback)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {text!r}") from None
    if not math.isfinite(value) or value < 0:
        raise argparse.ArgumentTypeError(
            f"a positive number of seconds (or 0 for no limit), got {text!r}")
    return value


class OneLineParser(argparse.ArgumentParser):
    """argparse, but a usage error is one line (and exit 2) pointing at ``--help``, not the
    usage block followed by the error."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: {message} (see {self.prog} --help)\n")


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(prog="limbo", description=__doc__.split("\n\n")[0].replace("``", ""))
    parser.add_argument("--version", action="version", version=f"limbo {_version()}")
    parser.add_argument("--specs", default=None, help="specs directory (default ./specs, else "
                        "the specs installed with Limbo)")
    sub = parser.add_subparsers(dest="command", required=True)

    listing = sub.add_parser("list", help="list the names Limbo knows")
    listing.add_argument("what", choices=["templates", "modes", "conditions", "policies",
                                          "experiments", "tools"])
    listing.set_defaults(handler=cmd_list)

    run = sub.add_parser("run", help="run one episode and print what happened")
    run.add_argument("template")
    run.add_argument("instance", type=_instance)
    run.add_argument("focal_write", help="a focal write id, or 'baseline' with mode none")
    run.add_argument("mode")
    for name, default in RunConfig().model_dump().items():
        run.add_argument(f"--{name}", default=default)
    run.add_argument("--model-option", action="append", default=[], metavar="KEY=VALUE",
                     help="passed to the agent's model (api_base=…, temperature=0); repeatable")
    run.add_argument("--json", action="store_true", help="print the whole record as JSON")
    run.add_argument("--episode-timeout", type=_seconds, default=DEFAULT_EPISODE_TIMEOUT_S,
                     metavar="SECONDS", help="wall-clock limit of the episode (default "
                     f"{DEFAULT_EPISODE_TIMEOUT_S:g}; 0: none)")
    run.set_defaults(handler=cmd_run)

    show = sub.add_parser("show", help="print the trace and ledger of a recorded episode")
    show.add_argument("episode_id", metavar="TEST_ID",
                      help="the id pytest prints (specs/experiments/x.yaml::… or the part "
                      "after ::), or an episode id when one configuration ran it")
    show.add_argument("--records", default=DEFAULT_RECORDS)
    show.add_argument("--json", action="store_true", help="print the whole record as JSON")
    show.set_defaults(handler=cmd_show)

    runs = sub.add_parser("runs", help="the runs of a records file: the current one and "
                          "those kept in its history/")
    runs.add_argument("records", nargs="?", default=DEFAULT_RECORDS)
    runs.set_defaults(handler=cmd_runs)

    summary = sub.add_parser("summary", help="the family table of a record file")
    summary.add_argument("records", nargs="?", default=DEFAULT_RECORDS)
    summary.add_argument("--markdown", action="store_true")
    summary.set_defaults(handler=cmd_summary)

    gate = sub.add_parser("gate", help="apply a gate to a record file (exit 1 if it fails)")
    gate.add_argument("gate", metavar="GATE", help="a gate spec, e.g. specs/gates/release.yaml: "
                      "thresholds on the family table and how to compare with a baseline")
    gate.add_argument("--records", default=DEFAULT_RECORDS,
                      help=f"the records to judge (default {DEFAULT_RECORDS})")
    gate.add_argument("--baseline", default=None,
                      help="records of an earlier run, or 'previous' (the latest in the "
                      "history of --records)")
    gate.set_defaults(handler=cmd_gate)

    from limbo_plugin.report import compare

    compare.add_parser(sub).set_defaults(
        handler=lambda args: compare.run_command(args, _registry(args).family_order))
    from limbo_plugin.report import plan

    plan.add_parser(sub).set_defaults(handler=lambda args: plan.run_command(args,
                                                                             _registry(args)))

    report = sub.add_parser("report", help="the paper's tables, figures and an HTML report "
                            "with an episode explorer, from one or more record files")
    report.add_argument("records", nargs="*", default=[DEFAULT_RECORDS],
                        help=f"JSONL record files (default {DEFAULT_RECORDS}); repeat "
                        "runs are declared by --limbo-repeat, never inferred from two files")
    report.add_argument("--out", default="reports/report", help="output directory "
                        "(default reports/report)")
    report.set_defaults(handler=cmd_report)

    from limbo_plugin.report import view

    view.add_parser(sub, DEFAULT_RECORDS, "reports/report").set_defaults(
        handler=lambda args: view.run_view(args, lambda records, out: _build_report(
            args, records, out)))

    merge = sub.add_parser("merge", help="merge the record files of a sharded run "
                           "(--limbo-shard) into one; idempotent")
    merge.add_argument("out", help="the merged JSONL file (may be one of the inputs)")
    merge.add_argument("inputs", nargs="+", metavar="IN", help="shard record files")
    merge.set_defaults(handler=cmd_merge)

    schema = sub.add_parser("schema", help="the JSON Schema of an episode record (one line of a "
                                           "records file), as docs/episode-record.schema.json")
    schema.add_argument("--fields", action="store_true",
                        help="the field tables of docs/records.md (Markdown) instead")
    schema.set_defaults(handler=cmd_schema)

    allure = sub.add_parser("allure", help="render Allure results as an HTML report "
                            "(npx --yes allure generate)")
    allure.add_argument("results", nargs="?", default="reports/allure-results",
                        help="the --alluredir of the run (default reports/allure-results)")
    allure.add_argument("--out", default="reports/allure-report",
                        help="output directory (default reports/allure-report)")
    allure.add_argument("--no-serve", action="store_true",
                        help="only render; print the command that serves it (a file:// URL "
                        "does not load)")
    view.add_arguments(allure)
    allure.set_defaults(handler=cmd_allure)

    from limbo_plugin.server import mcp_server

    mcp = sub.add_parser("mcp", help="serve an episode's sandbox as an MCP server (harnesses "
                         "launch this)")
    mcp_server.add_arguments(mcp)
    mcp.set_defaults(handler=cmd_mcp)

    from limbo_plugin.realmcp.commands import register as register_real_mcp_tools

    register_real_mcp_tools(sub)

    from limbo_plugin.init_command import register as register_init

    register_init(sub)

    harness = sub.add_parser("harness", help="install and list the production harness CLIs")
    harness_sub = harness.add_subparsers(dest="harness_command", required=True)
    harness_list = harness_sub.add_parser("list", help="harness adapters, pinned and installed "
                                          "versions")
    harness_list.set_defaults(handler=cmd_harness_list)
    harness_install = harness_sub.add_parser(
        "install", help="install pinned harness CLIs into the cache (a no-op when present)")
    harness_install.add_argument("names", nargs="*", metavar="NAME",
                                 help="harnesses to install (default: codex copilot hermes)")
    harness_install.set_defaults(handler=cmd_harness_install)
    return parser


def _registry(args: argparse.Namespace) -> SpecRegistry:
    """The one place the command finds its specs: ``--specs``, else the default directory."""
    from limbo_plugin.spec.registry import SpecRegistry, default_specs_dir

    return SpecRegistry.load(Path(args.specs).resolve() if args.specs else default_specs_dir())


def cmd_list(args: argparse.Namespace) -> int:
    registry = _registry(args)
    if args.what == "templates":
        for name, template in sorted(registry.templates.items()):
            focal = ", ".join(f.id for f in template.instantiate(0).focal_writes)
            print(f"{name:22} {template.spec.description}\n{'':22} focal writes: {focal}")
    elif args.what == "modes":
        for mode in registry.faults.values():
            print(f"{mode.name:18} {mode.family:15} {mode.description}")
    elif args.what == "conditions":
        from limbo_plugin.conditions import Condition, all_conditions

        for declared in all_conditions():
            name = declared.name if isinstance(declared, Condition) else declared.form
            print(f"{name:22} {declared.description}")
    elif args.what == "policies":
        from limbo_plugin.agents.scripted import DESCRIPTIONS, POLICIES

        print("\n".join(f"scripted:{p:16} {DESCRIPTIONS[p]}" for p in POLICIES))
    elif args.what == "experiments":
        for file in sorted((registry.root / "experiments").glob("*.yaml")):
            print(file.stem)
    else:
        for tool in registry.catalog().tools.values():
            print(f"{tool.name:24} {tool.service:9} {tool.contract.idempotency:21} "
                  f"{tool.contract.verification}")
    return 0


def cmd_run(args: argparse.Namespace) -> int:
    from limbo_plugin.agents.options import AgentOptions, parse_model_options
    from limbo_plugin.agents.registry import AgentPlan, check_ready
    from limbo_plugin.episode import run_episode

    registry = _registry(args)
    config = RunConfig.parse({name: getattr(args, name) for name in RunConfig.model_fields},
                             registry=registry)
    task = registry.template(args.template).instantiate(args.instance)
    registry.fault_mode(args.mode)
    if args.mode == "none":
        if args.focal_write != BASELINE_FOCAL:
            raise UsageError(f"a fault-free episode (mode none) has focal write "
                             f"{BASELINE_FOCAL!r}, got {args.focal_write!r}")
    elif args.focal_write not in {f.id for f in task.focal_writes}:
        raise UsageError(f"unknown focal write {args.focal_write!r} of {args.template} "
                         f"instance {args.instance}; valid: "
                         + ", ".join(f.id for f in task.focal_writes))
    key = EpisodeKey(template=args.template, instance=args.instance,
                     focal_write=args.focal_write, fault_mode=args.mode)
    options = AgentOptions(model_options=parse_model_options(args.model_option))
    check_ready([AgentPlan.of(config.agent, config.condition, options.model_options)])
    record = run_episode(key, config, registry=registry, agent_options=options,
                         time_limit_s=args.episode_timeout or None)
    if args.json:
        print(record.model_dump_json(indent=2))
    else:
        print_record(record)
    return 0 if record.passed else 1


def _records_file(path: str, read: Callable[[str], list[R]]) -> list[R]:
    """The records ``read`` gives of ``path`` (full ones, or slim outcomes); a missing or empty
    file is an error naming it."""
    records = read(path)
    if not records:
        state = "holds no records" if Path(path).exists() else "does not exist"
        raise UsageError(f"{path} {state}; give a records file written by pytest "
                         f"(--limbo-records, default {DEFAULT_RECORDS})")
    return records


def find_records(records: Sequence[EpisodeRecord], wanted: str) -> list[EpisodeRecord]:
    """The records ``wanted`` names: exactly what pytest prints (with or without the
    ``file::`` part) matched against test ids, else an episode id; one per test id (the last,
    as after a resume)."""
    name = wanted.rpartition("::")[2]
    found = [r for r in records if r.test_id == name] or \
        [r for r in records if r.episode_id == name]
    return list({r.test_id: r for r in found}.values())


def cmd_show(args: argparse.Namespace) -> int:
    from limbo_plugin.report.record_files import read_records

    records = _records_file(args.records, read_records)
    found = find_records(records, args.episode_id)
    if not found:
        import difflib

        close = difflib.get_close_matches(args.episode_id.rpartition("::")[2],
                                          sorted({r.test_id for r in records}), n=5)
        hint = f"; did you mean: {', '.join(close)}" if close else ""
        raise UsageError(f"no episode {args.episode_id!r} in {args.records}{hint}")
    if len(found) > 1:
        raise UsageError(f"{args.episode_id!r} matches {len(found)} episodes in {args.records} "
                         "(several configurations); give one of: "
                         + ", ".join(r.test_id for r in found))
    record = found[0]
    if args.json:
        print(record.model_dump_json(indent=2))
    else:
        print_record(record)
    return 0


def cmd_summary(args: argparse.Namespace) -> int:
    from limbo_plugin.report.aggregate import summarize
    from limbo_plugin.report.outcomes import read_outcomes
    from limbo_plugin.report.summary import render_markdown, render_text

    records = _records_file(args.records, read_outcomes)  # the table's fields: traces unparsed
    summary = summarize(records, family_order=_registry(args).family_order)
    print(render_markdown(summary) if args.markdown else "\n".join(render_text(summary)))
    from limbo_plugin.report.passk import render_text as pass_k_text

    pass_k = pass_k_text(records, family_order=_registry(args).family_order)
    if pass_k:
        print("\n" + "\n".join(pass_k))
    return 0


def cmd_runs(args: argparse.Namespace) -> int:
    from limbo_plugin.report.runs import list_runs, render

    runs = list_runs(args.records)
    if not runs:
        raise UsageError(f"{args.records} does not exist and has no history/ beside it")
    print("\n".join(render(runs)))
    return 0


def cmd_gate(args: argparse.Namespace) -> int:
    from limbo_plugin.report.gate import load_gate, run_gate
    from limbo_plugin.report.outcomes import read_outcomes
    from limbo_plugin.report.record_files import previous_records

    registry = _registry(args)
    gate = load_gate(args.gate, families=registry.family_order)
    records = _records_file(args.records, read_outcomes)
    baseline = None
    if args.baseline == "previous":
        previous = previous_records(args.records, resume=True)
        if previous is None:
            from limbo_plugin.report.record_files import history_dir

            raise UsageError(f"--baseline previous: no earlier run of {args.records} in "
                             f"{history_dir(args.records)}/ (a fresh pytest run moves the "
                             "records it replaces there); give --baseline RECORDS")
        baseline = _records_file(str(previous), read_outcomes)
    elif args.baseline:
        baseline = _records_file(args.baseline, read_outcomes)
    result = run_gate(gate, records, family_order=registry.family_order, baseline=baseline)
    print("\n".join(result.lines()))
    return 0 if result.passed else 1


def cmd_report(args: argparse.Namespace) -> int:
    print("\n".join(_build_report(args, args.records, args.out)))
    return 0


def _build_report(args: argparse.Namespace, records: Sequence[str], out: str) -> list[str]:
    from limbo_plugin.extras import require
    from limbo_plugin.report.build import make_report

    require("report", "limbo report")
    return make_report(records, _registry(args), out).lines()


def cmd_merge(args: argparse.Namespace) -> int:
    from limbo_plugin.report.merge import merge_records

    print("\n".join(merge_records(args.out, args.inputs).lines()))
    return 0


def cmd_schema(args: argparse.Namespace) -> int:
    from limbo_plugin.report.record_schema import field_tables, schema_text

    sys.stdout.write(field_tables() if args.fields else schema_text())
    return 0


def cmd_mcp(args: argparse.Namespace) -> int:
    from limbo_plugin.extras import require
    from limbo_plugin.server import mcp_server

    require("mcp", "limbo mcp")
    return int(mcp_server.run(args) or 0)


def cmd_allure(args: argparse.Namespace) -> int:
    from limbo_plugin.report.allure import generate
    from limbo_plugin.report.view import serve

    index = generate(args.results, args.out)
    if args.no_serve:
        print(f"Allure report: {index}\nOpen it with: npx --yes allure open {args.out} "
              "(opened as a file:// URL it does not load)")
        return 0
    return serve(Path(args.out), port=args.port, open_browser=not args.no_browser)


def cmd_harness_list(args: argparse.Namespace) -> int:
    from limbo_plugin.agents.harness_install import (
        available_harnesses,
        find_harness,
        installed_executable,
        version_of,
    )

    for name in available_harnesses():
        spec = find_harness(name)
        pinned = spec.install.package if spec.install else "(your own: no install step)"
        executable = installed_executable(spec)
        if executable is None:
            state = "not installed"
        else:
            state = f"installed: {version_of(spec, str(executable)) or '?'} ({executable})"
        print(f"{name:10} {pinned:34} {state}")
    return 0


def cmd_harness_install(args: argparse.Namespace) -> int:
    from limbo_plugin.agents.harness_install import BUILT_IN, find_harness, install

    failed = 0
    for name in args.names or BUILT_IN:  # one failure does not keep the others out
        try:
            install(find_harness(name), log=lambda line: print(line, flush=True))
        except LimboError as exc:
            print(f"limbo: {exc}", file=sys.stderr)
            failed += 1
    return 2 if failed else 0


def print_record(record: EpisodeRecord) -> None:
    verdict = "PASS" if record.passed else ("XFAIL" if record.expected_failure else "FAIL")
    print(f"{record.episode_id}  [{verdict}]  agent={record.agent} contract={record.contract} "
          f"condition={record.condition}")
    fault = ", ".join(f"{name}={value:g}" if isinstance(value, float) else f"{name}={value}"
                      for name, value in record.fault.model_dump(exclude_none=True).items()
                      if name not in ("mode", "fired"))
    print(f"  fault: {record.fault_mode}, fired: {'yes' if record.fired else 'no'}"
          + (f" ({fault})" if fault else ""))
    print(f"  TS={record.ts} EOS={record.eos} duplicates={record.duplicates} "
          f"residual={record.residual_duplicates} collateral={record.collateral} "
          f"unrequested={record.unrequested} overclaim={record.overclaim}")
    print(f"  final status: {record.final_status}; behaviour: {record.behaviour}; "
          f"{record.tool_calls} calls, {record.sim_seconds:.0f} simulated s")
    print("  trace:")
    for entry in record.trace:
        mark = "!" if entry.is_error else " "
        who = "" if entry.origin == "agent" else " (harness)"
        print(f"   {mark} t={entry.t_start:>7.1f} {entry.tool}{who} "
              f"{_short(entry.arguments)} -> {_short(entry.response)}")
    print("  ledger:")
    for effect in record.ledger:
        undone = f" undone at {effect.undone_at}" if effect.undone_at is not None else ""
        print(f"     t={effect.t:>7.1f} {effect.tool} {effect.record_ids} "
              f"origin={effect.origin}{undone}")


def _short(value: object, limit: int = 110) -> str:
    import json

    text = json.dumps(value, sort_keys=True, default=str)
    return text if len(text) <= limit else text[: limit - 1] + "…"


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
