"""``limbo run`` and ``limbo show``: one episode, run now or read from a record file, printed
as its trace and ledger."""

from __future__ import annotations

import argparse
import math
from collections.abc import Sequence

from limbo_plugin.agents.deadline import DEFAULT_EPISODE_TIMEOUT_S
from limbo_plugin.cli.common import Subcommands, records_file, registry_of
from limbo_plugin.errors import UsageError
from limbo_plugin.records import BASELINE_FOCAL, DEFAULT_RECORDS, EpisodeKey, EpisodeRecord
from limbo_plugin.runconfig import RunConfig


def register(sub: Subcommands) -> None:
    run = sub.add_parser("run", help="run one episode and print what happened")
    run.add_argument("template", help="a task template (limbo list templates)")
    run.add_argument("instance", type=_instance, help="an instance of it, numbered from 0")
    run.add_argument("focal_write", help="a focal write id, or 'baseline' with mode none")
    run.add_argument("mode", help="a fault mode (limbo list modes), or none")
    for name, default in RunConfig().model_dump().items():
        run.add_argument(f"--{name}", default=default, help=f"as pytest's --{name}")
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
    show.add_argument("--records", default=DEFAULT_RECORDS, help="the records file to look in")
    show.add_argument("--json", action="store_true", help="print the whole record as JSON")
    show.set_defaults(handler=cmd_show)


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


def cmd_run(args: argparse.Namespace) -> int:
    from limbo_plugin.agents.options import AgentOptions, parse_model_options
    from limbo_plugin.agents.registry import AgentPlan, check_ready
    from limbo_plugin.episode import run_episode

    registry = registry_of(args)
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


def find_records(records: Sequence[EpisodeRecord], wanted: str) -> list[EpisodeRecord]:
    """The records ``wanted`` names: exactly what pytest prints (with or without the
    ``file::`` part) matched against test ids, else an episode id; one per test id (the last,
    as after a resume)."""
    name = wanted.rpartition("::")[2]
    found = [r for r in records if r.test_id == name] or \
        [r for r in records if r.episode_id == name]
    return list({r.test_id: r for r in found}.values())


def cmd_show(args: argparse.Namespace) -> int:
    from limbo_plugin.store.read import scan_records

    records = records_file(args.records, scan_records)
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


def print_record(record: EpisodeRecord) -> None:
    verdict = "ERROR" if record.error is not None else (
        "PASS" if record.passed else ("XFAIL" if record.expected_failure else "FAIL"))
    print(f"{record.episode_id}  [{verdict}]  agent={record.agent} contract={record.contract} "
          f"condition={record.condition}")
    if record.error is not None:
        print(f"  infrastructure error (excluded from the rates; --limbo-resume re-runs it): "
              f"{record.error}")
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
