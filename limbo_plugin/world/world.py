"""The world: clock, ledger, ids, idempotency keys, the task's services and the request log.

It executes requests at the service; it knows nothing of faults (the transport in
:mod:`limbo_plugin.faults` decides whether, when and how often a request executes) and nothing of
agents. Idempotency keys are handled here, once, for every tool whose effective contract accepts
one, so the ``keys_everywhere`` variant needs no per-service code.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from limbo_plugin.contracts import GENERAL_TOOLS, ToolCatalog, ToolDefinition
from limbo_plugin.world.clock import VirtualClock, iso
from limbo_plugin.world.ids import IdFactory
from limbo_plugin.world.ledger import Effect, Ledger
from limbo_plugin.world.services import service_classes
from limbo_plugin.world.services.base import Body, Execution, Service, ServiceError


@dataclass
class Request:
    """One request that reached the transport, with its hidden fate (ground truth).

    ``seq`` is the number of the agent call the request is or serves; ``part`` is 0 for the
    agent's own request and 1, 2, … for the requests a harness made on its behalf, in order.
    Together they name the request, and every record id it creates derives from them.
    """

    seq: int
    tool: str
    args: dict[str, Any]
    origin: Literal["agent", "harness"]
    t_sent: float
    is_write: bool
    response: dict[str, Any] | None = None
    is_error: bool = False
    fate: str = "sent"
    """A name declared in the fates table (:mod:`limbo_plugin.world.fates`), which says what it
    means."""
    record_ids: list[str] = field(default_factory=list)
    rows_done: int | None = None
    rows_total: int | None = None
    due_at: float | None = None
    redelivered_ids: list[str] = field(default_factory=list)
    fault: str | None = None
    part: int = 0

    def to_json(self) -> dict[str, Any]:
        return {
            "seq": self.seq, "part": self.part, "tool": self.tool, "args": self.args,
            "origin": self.origin,
            "t_sent": self.t_sent, "is_error": self.is_error, "fate": self.fate,
            "record_ids": self.record_ids, "rows_done": self.rows_done, "due_at": self.due_at,
            "redelivered_ids": self.redelivered_ids, "fault": self.fault,
        }


@dataclass
class KeyEntry:
    tool: str
    params: dict[str, Any]
    response: Body | None
    complete: bool
    rows_done: int = 0
    ids: list[str] = field(default_factory=list)


@dataclass
class ExecutionResult:
    body: Body | None = None
    error: Body | None = None
    effects: list[Effect] = field(default_factory=list)
    replayed: bool = False

    @property
    def record_ids(self) -> list[str]:
        return [rid for e in self.effects if e.kind == "create" for rid in e.record_ids]


@dataclass
class FinalReport:
    status: str
    summary: str
    uncertain_operations: list[str]
    t: float


class World:
    """A deterministic, resettable world for a set of services under one tool catalog."""

    def __init__(self, catalog: ToolCatalog, services: Iterable[str], *, base_seed: int,
                 seed_records: dict[str, dict[str, Any]] | None = None,
                 operator: str = "truthful") -> None:
        self.catalog = catalog
        self.base_seed = base_seed
        self.clock = VirtualClock()
        self.ledger = Ledger()
        self.ids = IdFactory(base_seed)
        self.operator = operator
        self.services: dict[str, Service] = {}
        implemented = service_classes()
        for name in services:
            if name not in implemented:
                raise KeyError(f"unknown service {name!r}; valid: {', '.join(implemented)}")
            self.services[name] = implemented[name](self)
        for name, records in (seed_records or {}).items():
            if name not in self.services:
                raise KeyError(f"seed records for service {name!r}, which this world lacks")
            self.services[name].seed(records)
        self.seeded_ids: frozenset[str] = frozenset(
            rid for service in self.services.values() for rid in service.seeded_ids())
        """Every pre-existing record, by the id the world gave it (the grader protects these)."""
        self.tools: dict[str, ToolDefinition] = {
            t.name: t for t in catalog.for_services(self.services)
        }
        self.keys: dict[tuple[str, str], KeyEntry] = {}
        self.requests: list[Request] = []
        self._own: set[int] = set()  # agent calls whose own request (part 0) was sent
        self._extra: dict[int, int] = {}  # per agent call: the last further part given
        self.final: FinalReport | None = None
        self.escalations = 0

    # -- requests ------------------------------------------------------------------------------
    def open_request(self, tool: str, args: dict[str, Any], origin: Literal["agent", "harness"],
                     seq: int | None = None) -> Request:
        """Log a request of agent call ``seq`` (``None``: the next number, as by hand).

        The agent's own request is part 0 of its call even when a harness's read-back reached
        the service first; the harness's requests are parts 1, 2, … So ids depend on the world
        seed and the agent's call sequence alone, never on the condition (SPEC §1.3).
        """
        if seq is None:
            seq = max((*self._own, *self._extra), default=0) + 1
        if origin == "agent" and seq not in self._own:
            part = 0
            self._own.add(seq)
        else:
            part = self._extra.get(seq, 0) + 1
            self._extra[seq] = part
        definition = self.tools.get(tool)
        request = Request(seq=seq, part=part, tool=tool, args=args, origin=origin,
                          t_sent=self.clock.now,
                          is_write=bool(definition and definition.is_write))
        self.requests.append(request)
        return request

    def key_of(self, tool: str, args: dict[str, Any]) -> str | None:
        return self.tools[tool].key_in(args)

    def validate(self, tool: str, args: dict[str, Any]) -> Body | None:
        """The error the service would answer ``args`` with when sent now, or ``None``."""
        definition = self.tools.get(tool)
        if definition is None:
            return {"error": {"type": "unknown_tool", "message": f"unknown tool {tool!r}"}}
        problem = definition.schema_error(args)
        if problem is not None:
            return {"error": {"type": "http", "status": 400, "code": "invalid_arguments",
                              "message": f"invalid arguments for {tool}: {problem}"}}
        try:
            self.services[definition.service].check(tool, args)
            self._check_key(tool, args)
        except ServiceError as exc:
            return exc.body()
        return None

    def _check_key(self, tool: str, args: dict[str, Any]) -> KeyEntry | None:
        key = self.key_of(tool, args)
        if key is None or not self.tools[tool].is_write:
            return None
        entry = self.keys.get((self.tools[tool].service, key))
        if entry is not None and (entry.tool != tool or entry.params != _params(tool, args, self)):
            raise ServiceError(
                400, "idempotency_key_reused",
                "Keys for idempotent requests can only be used with the same parameters they "
                f"were first used with. Try using a key other than '{key}' if you meant to "
                "execute a different request.",
            )
        return entry

    def execute(self, request: Request, *, origin: str | None = None, sub: str = "",
                row_stop: int | None = None) -> ExecutionResult:
        """Execute ``request`` at the service now; keys are checked here, at execution time."""
        tool = request.tool
        definition = self.tools[tool]
        service = self.services[definition.service]
        key = self.key_of(tool, request.args)
        ex = Execution(tool=tool, seq=request.seq, part=request.part, t=self.clock.now,
                       origin=origin or request.origin,  # type: ignore[arg-type]
                       key=key, sub=sub, row_stop=row_stop)
        before = len(self.ledger.effects)
        try:
            if definition.is_write and key is not None:
                body, replayed = self._execute_keyed(service, request, ex)
            else:
                body, replayed = service.run(tool, request.args, ex), False
        except ServiceError as exc:
            return ExecutionResult(error=exc.body(),
                                   effects=self.ledger.effects[before:])
        return ExecutionResult(body=body, effects=self.ledger.effects[before:], replayed=replayed)

    def _execute_keyed(self, service: Service, request: Request, ex: Execution
                       ) -> tuple[Body, bool]:
        tool, args = request.tool, request.args
        entry = self._check_key(tool, args)
        batch_field = self.tools[tool].contract.batch_field
        total = len(args[batch_field]) if batch_field else None
        if entry is not None and entry.complete:
            return dict(entry.response or {}), True
        if entry is not None:  # an interrupted batch resumes where it stopped
            resumed = replace(ex, origin="batch_resume", row_start=entry.rows_done)
            body = service.run(tool, args, resumed)
            entry.ids = entry.ids + list(body.get("ids", []))
            body = {**body, "inserted": len(entry.ids), "ids": list(entry.ids)}
            entry.rows_done, entry.complete, entry.response = total or 0, True, body
            return dict(body), False
        body = service.run(tool, args, ex)
        complete = ex.row_stop is None or total is None or ex.row_stop >= total
        self.keys[(service.name, ex.key or "")] = KeyEntry(
            tool=tool, params=_params(tool, args, self), response=body if complete else None,
            complete=complete, rows_done=(total or 0) if complete else (ex.row_stop or 0),
            ids=list(body.get("ids", [])) if batch_field else [],
        )
        return body, False

    # -- general tools -------------------------------------------------------------------------
    def call_general(self, tool: str, args: dict[str, Any]) -> tuple[Body, bool]:
        """Run ``wait``, ``escalate_to_human`` or ``finish``; returns ``(body, is_error)``."""
        problem = self.tools[tool].schema_error(args)
        if problem is not None:
            self.clock.advance(1)
            return {"error": {"type": "http", "status": 400, "code": "invalid_arguments",
                              "message": f"invalid arguments for {tool}: {problem}"}}, True
        if tool == "wait":
            self.clock.advance(args["seconds"])
            return {"waited_s": args["seconds"], "now": iso(self.clock.now)}, False
        if tool == "escalate_to_human":
            from limbo_plugin.world.operator import operator_answer

            self.escalations += 1
            self.clock.advance(900)
            return operator_answer(self), False
        if tool == "finish":
            self.clock.advance(1)
            self.final = FinalReport(status=args["status"], summary=args.get("summary", ""),
                                     uncertain_operations=list(args.get("uncertain_operations",
                                                                        [])),
                                     t=self.clock.now)
            return {"ok": True, "status": args["status"]}, False
        raise KeyError(tool)  # pragma: no cover - GENERAL_TOOLS is closed

    def describe_record(self, record_id: str) -> dict[str, Any]:
        for service in self.services.values():
            found = service.describe(record_id)
            if found is not None:
                return found
        return {"id": record_id}

    @staticmethod
    def is_general(tool: str) -> bool:
        return tool in GENERAL_TOOLS

    def finish_in_flight(self) -> None:
        """Episode end: every request still in flight completes, as it would in reality."""
        self.clock.drain()


def _params(tool: str, args: dict[str, Any], world: World) -> dict[str, Any]:
    param = world.tools[tool].contract.key_param
    return {k: v for k, v in args.items() if k != param}
