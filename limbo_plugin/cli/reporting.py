"""``limbo compare``, ``plan``, ``report``, ``view``, ``merge``, ``schema`` and ``allure``: the
offline reports on record files (and Allure results); the work is in :mod:`limbo_plugin.report`."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from limbo_plugin.cli.common import Subcommands, registry_of
from limbo_plugin.errors import UsageError
from limbo_plugin.records import DEFAULT_RECORDS

if TYPE_CHECKING:
    from limbo_plugin.report.run_list import RunList


def register(sub: Subcommands) -> None:
    from limbo_plugin.planning import cost as plan
    from limbo_plugin.report import compare
    from limbo_plugin.server import report_view as view

    _compare_parser(sub).set_defaults(
        handler=lambda args: compare.run_command(args, registry_of(args).family_order))
    _plan_parser(sub).set_defaults(handler=lambda args: plan.run_command(args,
                                                                          registry_of(args)))

    report = sub.add_parser("report", help="the paper's tables, figures and an HTML report "
                            "with an episode explorer, from one or more record files")
    report.add_argument("records", nargs="*", default=[DEFAULT_RECORDS],
                        help=f"JSONL record files (default {DEFAULT_RECORDS}); repeat "
                        "runs are declared by --limbo-repeat, never inferred from two files")
    report.add_argument("--out", default="reports/report", help="output directory "
                        "(default reports/report)")
    add_rho_argument(report)
    report.set_defaults(handler=cmd_report)

    add_rho_argument(_view_parser(sub, DEFAULT_RECORDS, "reports/report")).set_defaults(
        handler=lambda args: view.run_view(args, lambda records, out: build_report(
            args, records, out), lambda root, gate: run_list(args, root, gate)))

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
    _serving_arguments(allure)
    allure.set_defaults(handler=cmd_allure)


def _compare_parser(sub: Subcommands) -> argparse.ArgumentParser:
    """``limbo compare``'s arguments (the comparison is :mod:`limbo_plugin.report.compare`)."""
    from limbo_plugin.report.compare import OUTCOMES, SHOWN_IDS

    parser = sub.add_parser(
        "compare", help="episodes that flipped between two runs, per family, with exact McNemar",
        description="Pair the episodes of two record files (same world, repeat and, for "
        "fields that vary within a run, configuration) and list, per fault family, those "
        "that went from pass to fail and from fail to pass, with the exact McNemar p-value "
        "(Holm-adjusted across families).")
    parser.add_argument("a", metavar="A", help="records of the first run (the reference)")
    parser.add_argument("b", metavar="B", help="records of the second run")
    parser.add_argument("--outcome", choices=OUTCOMES, default="passed",
                        help="what counts as holding: the test's verdict (default), "
                        "exactly-once success, or no duplicate")
    parser.add_argument("--json", action="store_true", help="print the comparison as JSON")
    parser.add_argument("--all", action="store_true", help="list every flipped episode id "
                        f"(default: the first {SHOWN_IDS} per family and direction)")
    return parser


def _plan_parser(sub: Subcommands) -> argparse.ArgumentParser:
    """``limbo plan``'s arguments (the estimate is :mod:`limbo_plugin.planning.cost`)."""
    from limbo_plugin.planning.cost import COMPLETION_SHARE

    plan = sub.add_parser("plan", help="episodes, model calls, tokens and cost of an "
                          "experiment before running it")
    plan.add_argument("--experiment", default="default", help="experiment name (default "
                      "default)")
    plan.add_argument("--agent", default=None, help="one agent instead of the experiment's "
                      "(e.g. litellm:openai/gpt-4o)")
    plan.add_argument("--tokens-per-episode", type=float, default=None,
                      help="expected tokens per episode (default: the paper's figure)")
    plan.add_argument("--completion-share", type=float, default=COMPLETION_SHARE,
                      help=f"share of tokens that are completion tokens (default "
                      f"{COMPLETION_SHARE})")
    plan.add_argument("-k", dest="keyword", metavar="EXPRESSION", default=None,
                      help="only the episodes pytest's -k EXPRESSION selects (as the run will)")
    plan.add_argument("-m", dest="markexpr", metavar="MARKEXPR", default=None,
                      help="only the episodes pytest's -m MARKEXPR selects (families, classes)")
    plan.add_argument("--sample", metavar="N", default=None,
                      help="only the pilot --limbo-sample N (or N:SEED) would run")
    plan.add_argument("--cassette", metavar="PATH", default=None,
                      help="estimate from your own run instead of the paper: its records file "
                      "(--limbo-records; calls and tokens per episode and fault mode), a folder "
                      "of records files, or its cassette directory (--limbo-cassette; tokens "
                      "per call)")
    return plan


def _view_parser(sub: Subcommands, default_records: str, default_out: str
                 ) -> argparse.ArgumentParser:
    """``limbo view``'s arguments (the serving is :mod:`limbo_plugin.server.report_view`)."""
    parser = sub.add_parser(
        "view", help="list every run under reports/ and open their reports, on 127.0.0.1",
        description="Without RECORDS: a page listing every run under --reports (agent, "
        "experiment, date, episodes, headline duplicate rate, gate verdict), refreshed while "
        "a run is writing, from which each run's report and explorer open. With RECORDS: "
        "build their HTML report (if there is none, or it is older than the records) and "
        "serve it. Served on 127.0.0.1, printing the URL and opening a browser where one "
        "exists. Ctrl-C stops it.")
    parser.add_argument("records", nargs="*", default=[],
                        help="JSONL record files to serve one report of (default: list every "
                        f"run under --reports, {default_records} among them)")
    parser.add_argument("--reports", default=str(Path(default_records).parent),
                        help="the folder whose runs are listed (default "
                        f"{Path(default_records).parent})")
    parser.add_argument("--gate", default=None,
                        help="the gate whose verdict the run list shows (default: "
                        "<specs>/gates/release.yaml when there is one; 'none' for no verdict)")
    parser.add_argument("--out", default=default_out,
                        help=f"the report's directory (default {default_out})")
    parser.add_argument("--rebuild", action="store_true", help="build the report even if it "
                        "is up to date")
    _serving_arguments(parser)
    return parser


def _serving_arguments(parser: argparse.ArgumentParser) -> None:
    """Where ``limbo view`` and ``limbo allure`` serve their report."""
    from limbo_plugin.server.serving import port_number

    parser.add_argument("--port", type=port_number, default=0,
                        help="port on 127.0.0.1 (default: a free one)")
    parser.add_argument("--no-browser", action="store_true",
                        help="print the URL only; do not open a browser")


def add_rho_argument(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    from limbo_plugin.report.icc import DEFAULT_SCOPE, RHO_SCOPES

    parser.add_argument("--rho", choices=RHO_SCOPES, default=DEFAULT_SCOPE,
                        help="the cells each interval's ρ by template is estimated over: "
                        "each configuration's own (default; a cell's interval is the one its "
                        "run's summary and gate show, whatever other files are read) or "
                        "'experiment', the paper's one estimate per experiment pooled over "
                        "every configuration read")
    return parser


def cmd_report(args: argparse.Namespace) -> int:
    print("\n".join(build_report(args, args.records, args.out)))
    return 0


def build_report(args: argparse.Namespace, records: Sequence[str], out: str) -> list[str]:
    from limbo_plugin.extras import require
    from limbo_plugin.report import figure_worker

    require("report", "limbo report")
    job = figure_worker.start(figure_worker.processes_wanted())  # importing while specs load
    try:
        from limbo_plugin.report.build import make_report

        return make_report(records, registry_of(args), out, figures=job,
                           rho=getattr(args, "rho", "configuration")).lines()
    finally:
        job.close()


def run_list(args: argparse.Namespace, root: Path, gate_option: str | None
             ) -> tuple[RunList, str | None]:
    """``limbo view``'s run list of ``root``, judged by ``--gate`` (by default the specs'
    ``gates/release.yaml`` when there is one; ``none``: no verdict). A gate that does not load
    is one line, before anything is served."""
    from limbo_plugin.extras import require
    from limbo_plugin.report.gate import load_gate
    from limbo_plugin.report.run_list import RunList
    from limbo_plugin.spec.registry import default_specs_dir

    require("report", "limbo view")
    registry = registry_of(args)
    if gate_option is None:
        default = (Path(args.specs) if args.specs else default_specs_dir()) / "gates" \
            / "release.yaml"
        path = default if default.is_file() else None
    else:
        path = None if gate_option == "none" else Path(gate_option)
    if path is not None and not path.is_file():
        raise UsageError(f"--gate {path}: no such file; give a gate spec (e.g. "
                         "specs/gates/release.yaml) or none")
    gate = load_gate(path, families=registry.family_order) if path is not None else None
    return RunList(root, registry.family_order, gate), gate.name if gate else None


def cmd_merge(args: argparse.Namespace) -> int:
    from limbo_plugin.store.merge import merge_records

    print("\n".join(merge_records(args.out, args.inputs).lines()))
    return 0


def cmd_schema(args: argparse.Namespace) -> int:
    from limbo_plugin.store.schema import field_tables, schema_text

    sys.stdout.write(field_tables() if args.fields else schema_text())
    return 0


def cmd_allure(args: argparse.Namespace) -> int:
    from limbo_plugin.report.allure import generate
    from limbo_plugin.server.report_view import serve

    index = generate(args.results, args.out)
    if args.no_serve:
        print(f"Allure report: {index}\nOpen it with: npx --yes allure open {args.out} "
              "(opened as a file:// URL it does not load)")
        return 0
    return serve(Path(args.out), port=args.port, open_browser=not args.no_browser)
