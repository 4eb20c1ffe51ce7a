"""Pydantic models for every spec kind: services, contract and documentation variants, fault modes.

Task templates, experiments and gates have their own models next to the code that uses them
(:mod:`limbo_plugin.tasks`, :mod:`limbo_plugin.experiments`, :mod:`limbo_plugin.report.gate`);
all of them forbid unknown fields so a typo in a spec is an error, not a silent default.
"""

from __future__ import annotations

import re
import string
from dataclasses import dataclass, field
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, RootModel, field_validator, model_validator

Idempotency = Literal[
    "read_only", "non_idempotent", "key_optional", "naturally_idempotent", "idempotent"
]
Verification = Literal["strong", "eventual", "none"]

MAX_SIM_SECONDS = 30 * 86_400
"""The longest simulated duration a spec may declare (a delay, a lag, a window): 30 days. Longer
is a typo (milliseconds for seconds, a stray exponent), and simulated time past it overflows
nothing but makes every wait, read-back and report meaningless."""
Seconds = Annotated[float, Field(gt=0, le=MAX_SIM_SECONDS, allow_inf_nan=False)]
"""A positive simulated duration, at most :data:`MAX_SIM_SECONDS`."""


NAME_PATTERN = r"^[a-z][a-z0-9_]*$"
"""A name that becomes a pytest keyword, marker, test id part or report row: lower-case letters,
digits and ``_`` (no ``::``, which splits a node id, no control characters or terminal escapes,
no characters a sort or a terminal cannot show alike)."""
RESERVED_NAMES = frozenset({
    # pytest's own markers: a family called `skip` or `xfail` would skip or xfail its episodes
    "skip", "skipif", "xfail", "parametrize", "usefixtures", "filterwarnings", "tryfirst",
    "trylast",
    # markers of the suites Limbo runs beside (`-m "not slow"` would deselect the family)
    "slow",
    # rows the reports add themselves
    "all_faulted", "all", "total",
})
"""Names a fault family, class or mode may not take: each becomes a pytest marker or keyword,
or a report row, and these already mean something there."""


def check_name(value: str, what: str) -> str:
    """``value`` if it is a usable ``what`` name, else a ``ValueError`` saying why."""
    if not re.fullmatch(NAME_PATTERN, value):
        raise ValueError(f"{what} name {value!r} is not lower-case letters, digits and _ "
                         "(it becomes a pytest keyword and a test id part)")
    if value in RESERVED_NAMES:
        raise ValueError(f"{what} name {value!r} is reserved (a pytest marker or a report row "
                         f"already means it); reserved: {', '.join(sorted(RESERVED_NAMES))}")
    return value


class StrictModel(BaseModel):
    """Every spec model: unknown fields are errors, and numbers must be finite."""

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)


class ReadBack(StrictModel):
    """How to check whether a write took effect, from the write's own arguments.

    ``args`` maps the read tool's arguments to templates over the write's arguments
    (``"{customer_id}"``); ``items`` is the key of the list in the read's result;
    ``match`` maps a field of a listed item to the write argument it must equal. For a batch
    write, ``per_item`` names the list argument: the read-back runs once per element, and
    ``{item}`` / ``{item.col}`` refer to the element.
    """

    tool: str
    """The read tool that shows the write."""
    args: dict[str, Any] = Field(default_factory=dict)
    """Its arguments, templated over the write's (``"{customer_id}"``)."""
    items: str | None = Field(default=None, min_length=1)
    """The key of the list in the read's result."""
    match: dict[str, Any] | str = Field(default_factory=dict)
    """The fields a listed item must have, templated over the write's arguments."""
    per_item: str | None = None
    """For a batch write: the list argument whose elements are read back one by one."""


class Compensation(StrictModel):
    """The write that undoes an effect, with its arguments templated over the effect."""

    tool: str
    """The write that undoes the effect."""
    args: dict[str, Any]
    """Its arguments, templated over the effect."""


class ToolContract(StrictModel):
    """Machine-readable contract of a tool, in the style of MCP tool annotations.

    Never shown to the agent; read by the world (key semantics), the middleware conditions and the
    scripted reference policies.
    """

    read_only_hint: bool
    """The tool only reads."""
    idempotent_hint: bool
    """Repeating the call with the same arguments changes nothing more."""
    destructive_hint: bool = False
    """The tool deletes or overwrites."""
    idempotency: Idempotency
    """``read_only``, ``non_idempotent``, ``key_optional`` (a key makes a repeat harmless),
    ``naturally_idempotent`` or ``idempotent``."""
    intent_fields: list[str] = Field(default_factory=list)
    """The arguments that make two calls the same write (a re-issue)."""
    key_param: str | None = None
    """The argument that carries an idempotency key, where the tool accepts one natively."""
    read_back: ReadBack | None = None
    """How to check whether a write took effect."""
    visibility_lag_s: int = Field(default=0, ge=0, le=MAX_SIM_SECONDS)
    """Simulated seconds before a commit shows in the read-back (eventual consistency)."""
    compensation: Compensation | None = None
    """How an effect is undone."""
    irreversible: bool = False
    """An effect that cannot be undone (an email sent)."""
    batch_field: str | None = None
    """For a batch write: the list argument whose rows commit one by one."""
    record_noun: str = Field(default="record", min_length=1)
    """What the tool's description calls one of its records (``charge``, ``ticket``)."""
    target_arg: str | None = None
    """The argument naming an existing record the write changes (for collateral damage)."""

    @property
    def verification(self) -> Verification:
        if self.read_back is None:
            return "none"
        return "eventual" if self.visibility_lag_s > 0 else "strong"

    @property
    def is_write(self) -> bool:
        return not self.read_only_hint

    @model_validator(mode="after")
    def _consistent(self) -> ToolContract:
        if self.read_only_hint and self.idempotency != "read_only":
            raise ValueError("a read-only tool must have idempotency 'read_only'")
        if not self.read_only_hint and self.idempotency == "read_only":
            raise ValueError("a write cannot have idempotency 'read_only'")
        if self.idempotency == "key_optional" and not self.key_param:
            raise ValueError("idempotency 'key_optional' needs a key_param")
        return self


class ToolSpecModel(StrictModel):
    """One tool as declared in ``specs/services/<service>.yaml``."""

    name: str = Field(pattern=r"^[a-z][a-z0-9_]*$")
    """The tool's name, as the agent sees it."""
    description: str
    """What the agent is told the tool does."""
    consistency: str | None = None
    """What the documentation says about the read path's lag."""
    parameters: dict[str, dict[str, Any]] = Field(default_factory=dict)
    """The JSON-schema properties of its arguments."""
    required: list[str] = Field(default_factory=list)
    """The arguments it requires."""
    contract: ToolContract
    """Its retry contract: never shown to the agent."""

    @model_validator(mode="after")
    def _required_declared(self) -> ToolSpecModel:
        unknown = [name for name in self.required if name not in self.parameters]
        if unknown:
            raise ValueError(f"required parameters not declared: {', '.join(unknown)}")
        twice = sorted({name for name in self.required if self.required.count(name) > 1})
        if twice:
            raise ValueError(f"required lists {twice[0]!r} twice")
        for name in self.contract.intent_fields:
            if name not in self.parameters:
                raise ValueError(f"intent field {name!r} is not a parameter")
        if self.contract.key_param and self.contract.key_param not in self.parameters:
            raise ValueError(f"key_param {self.contract.key_param!r} is not a parameter")
        return self


class ServiceSpec(StrictModel):
    service: str = Field(pattern=r"^[a-z][a-z0-9_]*$")
    """The service's name (a Python ``Service`` class handles its tools)."""
    description: str = ""
    """What the service is."""
    tools: list[ToolSpecModel]
    """Its tools."""


class ContractVariant(StrictModel):
    """What a contract variant changes relative to the native contract (SPEC §2.2)."""

    name: str
    """The variant's name, what ``--contract`` takes."""
    description: str
    """What the variant changes."""
    keys_on_non_idempotent_writes: bool = False
    """Every non-idempotent write accepts an idempotency key."""
    key_param: str = "idempotency_key"
    """The name of the key argument the variant adds."""
    key_schema: dict[str, Any] = Field(default_factory=dict)
    """The key argument's JSON schema (default: a string)."""
    key_sentence: str = ""
    """The sentence added to a keyed tool's description."""

    @field_validator("name")
    @classmethod
    def _usable_name(cls, value: str) -> str:
        return check_name(value, "contract")


WARNING_PLACEHOLDERS = frozenset({"record", "key"})


class DocumentationVariant(StrictModel):
    """How agent-facing descriptions are rendered (SPEC §2.3)."""

    name: str
    """The variant's name, what ``--docs`` takes."""
    description: str
    """What the variant changes."""
    consistency_sentences: bool = True
    """Whether descriptions say how long a write takes to show in its read-back."""
    non_idempotent_warning: str | None = None
    """A sentence added to every non-idempotent write (``{record}``, ``{key}``)."""
    keyed_warning: str | None = None
    """What replaces ``non_idempotent_warning`` on a write that accepts an idempotency key, so
    the warning never contradicts the key sentence before it (``{record}``, ``{key}``)."""

    @field_validator("non_idempotent_warning", "keyed_warning")
    @classmethod
    def _known_placeholders(cls, value: str | None) -> str | None:
        if value is None:
            return value
        try:
            fields = [(name, spec, conversion) for _, name, spec, conversion
                      in string.Formatter().parse(value) if name is not None]
        except ValueError as exc:  # a lone brace
            raise ValueError(f"{exc} (write {{{{ and }}}} for literal braces)") from None
        for name, spec, conversion in fields:
            if spec or conversion:  # {record:>2000000000} asks for 2 GB; {record!z} fails
                shown = f"{{{name}{'!' + conversion if conversion else ''}" \
                        f"{':' + spec if spec else ''}}}"
                raise ValueError(f"placeholder {shown[:60]} has a format spec or conversion; "
                                 f"write plain {{{name}}}")
        names = {name for name, _, _ in fields}
        unknown = sorted(names - WARNING_PLACEHOLDERS)
        if unknown:
            raise ValueError(f"unknown placeholder {{{unknown[0]}}}; valid: "
                             + ", ".join(f"{{{n}}}" for n in sorted(WARNING_PLACEHOLDERS)))
        return value

    @field_validator("name")
    @classmethod
    def _usable_name(cls, value: str) -> str:
        return check_name(value, "documentation variant")


class DocumentationSpec(StrictModel):
    variants: list[DocumentationVariant]
    """The documentation variants."""


HiddenOutcome = Literal["absent", "committed", "late", "partial", "duplicated", "none"]
Execute = Annotated[str, Field(min_length=1)]
"""How the service executes a faulted request: a kind with one
:class:`~limbo_plugin.faults.Executor` (Limbo's or an extension's), checked when the specs load."""
FaultClass = Literal["resolvable", "unresolvable"]


@dataclass(frozen=True)
class FocalTrigger:
    """Which call a fault attaches to: the ``n``-th call of ``tool`` whose args match ``where``.

    A task's focal write declares it (:meth:`limbo_plugin.tasks.FocalWrite.trigger`); the fault
    transport only reads it, so it lives here, on the spec side.
    """

    tool: str
    where: dict[str, Any] = field(default_factory=dict)
    n: int = 1

    def matches(self, tool: str, args: dict[str, Any]) -> bool:
        return tool == self.tool and all(args.get(k) == v for k, v in self.where.items())


_TIMING_FIELDS = frozenset({"late_delay", "late_delay_s", "late_delay_range_s",
                            "redelivery_after_s"})
_EXECUTION_FIELDS: dict[str, frozenset[str]] = {
    "never": frozenset(), "now": frozenset(), "partial": frozenset(),
    "late": frozenset({"late_delay", "late_delay_s", "late_delay_range_s"}),
    "now_and_redeliver": frozenset({"redelivery_after_s"}),
}
"""Which timing fields each of Limbo's execute kinds reads."""
_OUTCOMES: dict[str, tuple[str, ...]] = {
    "never": ("absent",), "now": ("committed", "none"), "late": ("late",),
    "partial": ("partial",), "now_and_redeliver": ("duplicated",),
}
"""The hidden outcomes each of Limbo's execute kinds makes."""


class FaultModeSpec(StrictModel):
    """One fault mode of SPEC §3: what the service does and what the agent sees."""

    name: str
    """The mode's name, the last part of an episode id (``limbo list modes``)."""
    group: Literal["T", "E", "S", "-"]
    """Its observation-equivalence group: ``T`` (timeouts), ``E`` (errors), ``S`` (success),
    ``-``."""
    family: str
    """Its fault family: the family table's row and a pytest marker."""
    hidden_outcome: HiddenOutcome
    """What really happened to the request: ``absent``, ``committed``, ``late``, ``partial``,
    ``duplicated`` or ``none``."""
    execute: Execute
    """How the service executes the faulted request (``never``, ``now``, ``late``, …)."""
    response: dict[str, Any] | None = None
    """The answer the agent gets."""
    response_kind: Literal["error", "success", "drifted"] = "error"
    """``error``, ``success`` or ``drifted`` (a success in another shape)."""
    cost_s: float = Field(default=1.0, ge=0, le=MAX_SIM_SECONDS)
    """Simulated seconds the faulted call takes."""
    late_delay: Literal["fixed", "log_uniform"] | None = None
    """For a late commit: ``fixed`` or ``log_uniform``."""
    late_delay_s: float | None = Field(default=None, gt=0, le=MAX_SIM_SECONDS)
    """A fixed late commit's delay after the request, in simulated seconds."""
    late_delay_range_s: tuple[Seconds, Seconds] | None = None
    """A log-uniform delay's ``[low, high]``, drawn per world."""
    redelivery_after_s: float | None = Field(default=None, ge=0, le=MAX_SIM_SECONDS)
    """When the transport delivers the request again."""
    outage_window_s: float | None = Field(default=None, gt=0, le=MAX_SIM_SECONDS)
    """How long the service stays down, for every call."""
    batch_only: bool = False
    """The mode applies to batch writes only."""
    drifted_api_version: str | None = None
    """The API version a drifted answer names."""
    exactly_once_needs_key: bool = False
    """No client can be exactly-once here without a key the service honours: on a keyless
    non-idempotent write the episode is an expected failure."""
    description: str = ""
    """What happens, as ``limbo list modes`` shows it."""

    @model_validator(mode="after")
    def _fields_its_execution_reads(self) -> FaultModeSpec:
        """Limbo's own execute kinds each read some fields and make one hidden outcome: a field
        another kind reads does nothing here, and an outcome the execution does not make would
        grade the episode against a world that did not happen."""
        reads = _EXECUTION_FIELDS.get(self.execute)
        if reads is None:  # an extension's kind: its executor decides
            return self
        for name in sorted(_TIMING_FIELDS - reads):
            if getattr(self, name) is not None:
                raise ValueError(f"{name} does nothing under execute {self.execute!r} (it is "
                                 "read by execute " + " or ".join(
                                     repr(k) for k, v in _EXECUTION_FIELDS.items() if name in v)
                                 + ")")
        made = _OUTCOMES[self.execute]
        if self.hidden_outcome not in made:
            raise ValueError(f"hidden_outcome {self.hidden_outcome!r} is not what execute "
                             f"{self.execute!r} makes ({' or '.join(made)})")
        return self

    @field_validator("response")
    @classmethod
    def _an_answer_agents_can_read(cls, value: dict[str, Any] | None
                                   ) -> dict[str, Any] | None:
        """The error an agent sees: its status is what says a 5xx (ambiguous) from a 429 or
        503 (refused), so it must be a real HTTP status, as a number."""
        error = value.get("error") if value is not None else None
        if not isinstance(error, dict):
            return value
        status = error.get("status")
        if status is not None and (type(status) is not int or not 100 <= status <= 599):
            raise ValueError(f"response error status {status!r} is not an HTTP status (a "
                             "whole number from 100 to 599)")
        after = error.get("retry_after_s")
        if after is not None and (isinstance(after, bool) or not isinstance(after, int | float)
                                  or not 0 <= after <= MAX_SIM_SECONDS):
            raise ValueError(f"response error retry_after_s {after!r} is not a number of "
                             "seconds from 0")
        return value

    @model_validator(mode="after")
    def _late_has_a_delay(self) -> FaultModeSpec:
        if self.execute == "late" and self.late_delay is None:
            raise ValueError("a late mode needs late_delay")
        if self.late_delay == "fixed" and self.late_delay_s is None:
            raise ValueError("late_delay 'fixed' needs late_delay_s")
        if self.late_delay_range_s is not None:
            low, high = self.late_delay_range_s
            if not low < high:
                raise ValueError(f"late_delay_range_s must be (low, high) with low < high, got "
                                 f"({low}, {high})")
        return self

    @field_validator("name")
    @classmethod
    def _usable_name(cls, value: str) -> str:
        return check_name(value, "fault mode")


class FaultFamilySpec(StrictModel):
    """A family of fault modes (SPEC §3): a pytest marker, a report row, and a class."""

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True,
                              allow_inf_nan=False)

    name: str = Field(pattern=r"^[a-z][a-z0-9_]*$")
    """The family's name: a report row and a pytest marker."""
    fault_class: FaultClass | Literal["none"] = Field(alias="class")
    """As ``class``: ``resolvable``, ``unresolvable`` or ``none``."""
    description: str
    """What happened to the request."""

    @field_validator("name")
    @classmethod
    def _usable_name(cls, value: str) -> str:
        return check_name(value, "fault family")


class FaultCatalogSpec(StrictModel):
    """``specs/faults/modes.yaml``: the fault classes, the families in display order, the modes."""

    classes: dict[FaultClass, str]
    """What each fault class means."""
    families: list[FaultFamilySpec] = Field(min_length=1)
    """The fault families, in the family table's order."""
    modes: list[FaultModeSpec]
    """The fault modes."""


class FaultLayerSpec(StrictModel):
    """``faults/modes.yaml`` of a package's spec folder: families and modes it adds to Limbo's
    (the fault classes are Limbo's alone)."""

    families: list[FaultFamilySpec] = Field(default_factory=list)
    """The families it adds, after Limbo's in the family table."""
    modes: list[FaultModeSpec] = Field(default_factory=list)
    """The modes it adds."""


class PoolsSpec(RootModel[dict[str, list[Any]]]):
    """Shared value pools (customers, products, services…) that task parameters draw from."""
