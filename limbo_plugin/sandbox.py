"""A world behind its fault transport, ready to call: the entry point for using Limbo by hand.

>>> from limbo_plugin.sandbox import Sandbox
>>> from limbo_plugin.spec.registry import SpecRegistry, default_specs_dir
>>> box = Sandbox(["email"], registry=SpecRegistry.load(default_specs_dir()))
>>> box.call("email_send", {"to": "a@b.example", "subject": "Hi", "body": "..."}).is_error
False
>>> len(box.ledger.effects)
1
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from limbo_plugin.contracts import ToolDefinition
from limbo_plugin.faults import FaultPlan, FaultTransport
from limbo_plugin.spec.registry import SpecRegistry
from limbo_plugin.toolapi import CallOrigin, ToolCall, ToolResult
from limbo_plugin.world.ledger import Ledger
from limbo_plugin.world.world import World


class Sandbox:
    """A world for ``services`` of ``registry`` under one contract and documentation variant."""

    def __init__(self, services: Iterable[str], *, registry: SpecRegistry,
                 contract: str = "native", docs: str = "default", base_seed: int = 0,
                 seed_records: dict[str, dict[str, Any]] | None = None,
                 fault: FaultPlan | None = None, operator: str = "truthful") -> None:
        self.registry = registry
        self.catalog = self.registry.catalog(contract, docs)
        self.world = World(self.catalog, services, base_seed=base_seed,
                           seed_records=seed_records, operator=operator)
        self.transport = FaultTransport(self.world, fault)

    def list_tools(self) -> list[ToolDefinition]:
        return list(self.world.tools.values())

    def call(self, name: str, arguments: Any = None, *, origin: CallOrigin = "agent"
             ) -> ToolResult:
        arguments = {} if arguments is None else arguments  # [], 0, False stay malformed
        return self.transport.call(ToolCall(name=name, arguments=arguments, origin=origin))

    @property
    def ledger(self) -> Ledger:
        return self.world.ledger

    @property
    def now(self) -> float:
        return self.world.clock.now
