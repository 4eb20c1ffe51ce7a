"""``limbo runs``, ``limbo summary`` and ``limbo gate``: what a record file says, without
pytest — its runs, its family table, and whether it passes a gate."""

from __future__ import annotations

import argparse

from limbo_plugin.cli.common import Subcommands, records_file, registry_of
from limbo_plugin.errors import UsageError
from limbo_plugin.records import DEFAULT_RECORDS


def register(sub: Subcommands) -> None:
    runs = sub.add_parser("runs", help="the runs of a records file: the current one and "
                          "those kept in its history/")
    runs.add_argument("records", nargs="?", default=DEFAULT_RECORDS,
                      help="a records file; the runs kept in history/ beside it are listed too")
    runs.set_defaults(handler=cmd_runs)

    summary = sub.add_parser("summary", help="the family table of a record file")
    summary.add_argument("records", nargs="?", default=DEFAULT_RECORDS, help="a records file")
    summary.add_argument("--markdown", action="store_true", help="print the table as Markdown")
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


def cmd_summary(args: argparse.Namespace) -> int:
    from limbo_plugin.report.aggregate import summarize
    from limbo_plugin.report.summary import render_markdown, render_text
    from limbo_plugin.store.read import scan_views

    records = records_file(args.records, scan_views)  # the table's fields: traces unparsed
    summary = summarize(records, family_order=registry_of(args).family_order)
    print(render_markdown(summary) if args.markdown else "\n".join(render_text(summary)))
    from limbo_plugin.report.passk import render_text as pass_k_text

    pass_k = pass_k_text(records, family_order=registry_of(args).family_order)
    if pass_k:
        print("\n" + "\n".join(pass_k))
    return 0


def cmd_runs(args: argparse.Namespace) -> int:
    from limbo_plugin.store.runs import list_runs, render

    runs = list_runs(args.records)
    if not runs:
        raise UsageError(f"{args.records} does not exist and has no history/ beside it")
    print("\n".join(render(runs)))
    return 0


def cmd_gate(args: argparse.Namespace) -> int:
    from limbo_plugin.report.gate import load_gate, run_gate
    from limbo_plugin.store.files import previous_records
    from limbo_plugin.store.read import scan_views

    registry = registry_of(args)
    gate = load_gate(args.gate, families=registry.family_order)
    records = records_file(args.records, scan_views)
    baseline = None
    if args.baseline == "previous":
        previous = previous_records(args.records, resume=True)
        if previous is None:
            from limbo_plugin.store.files import history_dir

            raise UsageError(f"--baseline previous: no earlier run of {args.records} in "
                             f"{history_dir(args.records)}/ (a fresh pytest run moves the "
                             "records it replaces there); give --baseline RECORDS")
        baseline = records_file(str(previous), scan_views)
    elif args.baseline:
        baseline = records_file(args.baseline, scan_views)
    result = run_gate(gate, records, family_order=registry.family_order, baseline=baseline)
    print("\n".join(result.lines()))
    return 0 if result.passed else 1
