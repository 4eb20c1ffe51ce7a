"""``limbo list``: the names Limbo knows (templates, fault modes, conditions, policies,
experiments, tools), read from the specs and registries."""

from __future__ import annotations

import argparse

from limbo_plugin.cli.common import Subcommands, registry_of


def register(sub: Subcommands) -> None:
    listing = sub.add_parser("list", help="list the names Limbo knows")
    listing.add_argument("what", choices=["templates", "modes", "conditions", "policies",
                                          "experiments", "tools"], help="which names")
    listing.set_defaults(handler=cmd_list)


def cmd_list(args: argparse.Namespace) -> int:
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
