"""What every simulated service shares: dispatch, errors, lagged views and committing effects.

A service is a :class:`Service` subclass with a ``name`` (its YAML's ``service``) whose methods
carry the tool they implement: ``@handles("email_send")`` marks the execution of a tool at time
``ex.t`` (a read is a handler without effects), and ``@validates("<tool>")`` an optional check
against current state, run when a request is sent, so that a fault trigger stays armed past
requests the service rejects anyway (a handler re-checks, because a late commit executes long
after it was sent). A module declares the services it implements in a ``SERVICES`` tuple
(:mod:`limbo_plugin.extensions`), found by :func:`~limbo_plugin.world.services.service_classes`;
loading the specs checks that every service in YAML has a class and every tool a handler, so a
missing one is a spec error with its file and line, not a failure in the middle of an episode.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar

from limbo_plugin.world.ledger import Effect, EffectKind, Origin
from limbo_plugin.world.store import VersionedTable

if TYPE_CHECKING:
    from limbo_plugin.world.world import World

Args = dict[str, Any]
Body = dict[str, Any]
Handler = Callable[["Service", Args, "Execution"], Body]
Check = Callable[["Service", Args], None]
F = TypeVar("F", bound=Callable[..., Any])

_HANDLES = "__limbo_handles__"
_VALIDATES = "__limbo_validates__"


def handles(tool: str) -> Callable[[F], F]:
    """Mark a method ``(self, args, ex) -> body`` as the execution of ``tool``."""
    def mark(method: F) -> F:
        setattr(method, _HANDLES, tool)
        return method
    return mark


def validates(tool: str) -> Callable[[F], F]:
    """Mark a method ``(self, args) -> None`` (raising :class:`ServiceError`) as ``tool``'s check
    at send time."""
    def mark(method: F) -> F:
        setattr(method, _VALIDATES, tool)
        return method
    return mark


class ServiceError(Exception):
    """A real error the service answers with (validation, unknown id, key reuse)."""

    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message

    def body(self) -> Body:
        return {"error": {"type": "http", "status": self.status, "code": self.code,
                          "message": self.message}}


def not_found(kind: str, record_id: object) -> ServiceError:
    return ServiceError(404, "resource_missing", f"No such {kind}: {record_id}")


@dataclass(frozen=True)
class Execution:
    """One execution of a request at the service.

    ``tool`` is the tool the request calls, so a handler names it only in its ``@handles``:
    :meth:`Service.commit` and :meth:`Service.view_time` take it from here.
    ``seq`` and ``part`` name the request (see :class:`~limbo_plugin.world.world.Request`).
    ``sub`` namespaces record ids: ``""`` for the request itself, ``"r"`` for a redelivered copy.
    ``row_start``/``row_stop`` restrict a batch to a slice (partial batches and their resumption).
    """

    tool: str
    seq: int
    t: float
    origin: Origin
    key: str | None = None
    sub: str = ""
    row_start: int = 0
    row_stop: int | None = None
    part: int = 0

    @property
    def redelivered(self) -> bool:
        return self.sub == "r"


class Service:
    """Base class: a named service living inside one :class:`World` (see the module docstring).
    """

    name: ClassVar[str] = ""
    handlers: ClassVar[dict[str, Handler]] = {}
    checks: ClassVar[dict[str, Check]] = {}

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        handlers: dict[str, Handler] = {}
        checks: dict[str, Check] = {}
        for klass in reversed(cls.__mro__):
            for member in vars(klass).values():
                if hasattr(member, _HANDLES):
                    handlers[getattr(member, _HANDLES)] = member
                if hasattr(member, _VALIDATES):
                    checks[getattr(member, _VALIDATES)] = member
        cls.handlers, cls.checks = handlers, checks

    def __init__(self, world: World) -> None:
        self.world = world

    # -- dispatch ------------------------------------------------------------------------------
    def check(self, tool: str, args: Args) -> None:
        checker = self.checks.get(tool)
        if checker is not None:
            checker(self, args)

    def run(self, tool: str, args: Args, ex: Execution) -> Body:
        handler = self.handlers.get(tool)
        if handler is None:  # pragma: no cover - the spec registry checks every tool has one
            raise ServiceError(404, "unknown_endpoint", f"{self.name} has no endpoint {tool}")
        return handler(self, args, ex)

    def seed(self, records: dict[str, Any]) -> None:
        """Install pre-existing records; each service knows the shape of its own seed data."""
        if records:
            raise ValueError(f"service {self.name} takes no seed records")

    def record_tables(self) -> list[VersionedTable]:
        return []

    def seeded_ids(self) -> list[str]:
        """The ids of every record this service holds; called right after :meth:`seed`, so
        every one of them is pre-existing. Ids a service derives itself (database rows,
        seeded comments) are included, because the world reports ids, not the seed data."""
        return [rid for table in self.record_tables() for rid, _ in table.all_current()]

    def describe(self, record_id: str) -> dict[str, Any] | None:
        """The current state of a record this service holds (what an operator can look up)."""
        for table in self.record_tables():
            data = table.current(record_id)
            if data is not None:
                return {k: v for k, v in data.items() if k != "started_at"}
        return None

    # -- helpers -------------------------------------------------------------------------------
    def lag(self, tool: str) -> float:
        return float(self.world.catalog.contract(tool).visibility_lag_s)

    def view_time(self, ex: Execution) -> float:
        """Reads by ``ex.tool`` at ``ex.t`` see effects committed strictly before ``t − λ``."""
        return ex.t - self.lag(ex.tool)

    def new_id(self, prefix: str, ex: Execution, index: int | None = None) -> str:
        sub = ex.sub if index is None else f"{ex.sub}#{index}"
        return self.world.ids.make(prefix, ex.seq, sub, ex.part)

    def commit(self, args: Args, ex: Execution, record_ids: list[str], *,
               intent: dict[str, Any] | None = None, kind: EffectKind = "create",
               targets: list[str] | None = None,
               sets: dict[str, Any] | None = None,
               changed: list[str] | None = None) -> Effect:
        """Record the effect of ``ex`` (a write of ``ex.tool``) in the ledger; its intent is
        the contract's intent fields of ``args`` unless given."""
        tool = ex.tool
        contract = self.world.catalog.contract(tool)
        if intent is None:
            intent = {f: args.get(f) for f in contract.intent_fields}
        return self.world.ledger.commit(
            t=ex.t, service=self.name, tool=tool, intent=intent,
            args={k: v for k, v in args.items()}, record_ids=record_ids, key=ex.key,
            origin=ex.origin, request_seq=ex.seq, request_part=ex.part, kind=kind,
            targets=targets, sets=sets, changed=changed,
        )

