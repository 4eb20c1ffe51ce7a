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

    compare.add_parser(sub).set_defaults(
        handler=lambda args: compare.run_command(args, registry_of(args).family_order))
    plan.add_parser(sub).set_defaults(handler=lambda args: plan.run_command(args,
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

    add_rho_argument(view.add_parser(sub, DEFAULT_RECORDS, "reports/report")).set_defaults(
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
    view.add_arguments(allure)
    allure.set_defaults(handler=cmd_allure)


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
    from limbo_plugin.report.build import make_report

    require("report", "limbo report")
    return make_report(records, registry_of(args), out,
                       rho=getattr(args, "rho", "configuration")).lines()


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
