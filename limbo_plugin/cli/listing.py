"""``limbo list``: the names Limbo knows (templates, fault modes, conditions, policies,
experiments, tools), read from the specs and registries."""

from __future__ import annotations

import argparse
from pathlib import Path

from limbo_plugin.cli.common import Subcommands, registry_of


def register(sub: Subcommands) -> None:
    listing = sub.add_parser("list", help="list the names Limbo knows")
    listing.add_argument("what", choices=["templates", "modes", "conditions", "policies",
                                          "experiments", "tools", "agents", "tables",
                                          "extensions"], help="which names")
    listing.set_defaults(handler=cmd_list)


def cmd_list(args: argparse.Namespace) -> int:
    if args.what in DECLARED:
        print("\n".join(DECLARED[args.what]()))
        return 0
    registry = registry_of(args)
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


def list_agents() -> list[str]:
    """Every agent kind (Limbo's, then extensions'): its form and the model it calls."""
    from limbo_plugin.agents.registry import all_agent_kinds

    return [f"{kind.form:40} {'calls a model' if kind.model else 'no model'}"
            for kind in all_agent_kinds().values()]


def list_tables() -> list[str]:
    """Every report table generator, in report order, and the module declaring it."""
    from limbo_plugin.report.tables import all_tables

    return [f"{table.__name__:32} {table.__module__}" for table in all_tables()]


def list_extensions() -> list[str]:
    """Every installed extension module (entry point, module, distribution) and what it
    declares, with each folder of spec YAML it ships; or why there are none."""
    from limbo_plugin.extensions import (
        DISABLE,
        GROUP,
        KINDS,
        extension_modules,
        extension_sources,
        extensions_disabled,
    )

    if extensions_disabled():
        return [f"extensions are turned off ({DISABLE} is set)"]
    sources = extension_sources()
    if not sources:
        return [f"no installed package lists a module in the {GROUP!r} entry-point group"]
    lines = []
    for (name, module, distribution), loaded in zip(sources, extension_modules(), strict=True):
        kinds = ", ".join(f"{kind} ({len(getattr(loaded, kind))})" for kind in KINDS
                          if getattr(loaded, kind, ()))
        lines.append(f"{name:16} {module:32} {distribution:24} {kinds or 'declares nothing'}")
        lines += [f"{'':16} specs: {Path(folder).resolve()}"
                  for folder in getattr(loaded, "SPECS", ())]
    return lines


DECLARED = {"agents": list_agents, "tables": list_tables, "extensions": list_extensions}
"""What ``limbo list`` shows from code, without the specs."""
