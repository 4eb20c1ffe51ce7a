"""The run configuration of an episode: everything about it that is not the world.

:class:`RunConfig` is validated once, where its values come in (command line, ``pytest.ini``,
an experiment spec, the ``limbo`` command): each field asks the registry that knows its valid
values (the agent kinds, the conditions, the instruction and operator variants) and, when the
spec registry is passed as validation context (``{"registry": registry}``), the contract and
documentation variants. Nothing downstream checks these values again.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Annotated, Any

from pydantic import AfterValidator, BaseModel, ConfigDict, ValidationError, ValidationInfo

from limbo_plugin.agents.registry import check_agent
from limbo_plugin.conditions.registry import find_condition
from limbo_plugin.errors import UsageError
from limbo_plugin.records import RUN_DEFAULTS, run_fingerprint
from limbo_plugin.tasks import INSTRUCTION_VARIANTS
from limbo_plugin.world.operator import OPERATOR_VARIANTS

if TYPE_CHECKING:
    from limbo_plugin.spec.registry import SpecRegistry

Check = Callable[[str, "SpecRegistry | None"], None]
"""Raises :class:`UsageError` naming the valid values when a value is not one of them."""


def _one_of(kind: str, valid: tuple[str, ...]) -> Check:
    def check(value: str, registry: SpecRegistry | None) -> None:
        if value not in valid:
            raise UsageError(f"unknown {kind} {value!r}; valid: {', '.join(valid)}")
    return check


def _contract(value: str, registry: SpecRegistry | None) -> None:
    if registry is not None:
        registry.contract_variant(value)


def _docs(value: str, registry: SpecRegistry | None) -> None:
    if registry is not None:
        registry.docs_variant(value)


def _agent(value: str, registry: SpecRegistry | None) -> None:
    check_agent(value)


def _condition(value: str, registry: SpecRegistry | None) -> None:
    find_condition(value)


CHECKS: dict[str, Check] = {
    "agent": _agent,
    "contract": _contract,
    "docs": _docs,
    "instruction": _one_of("instruction variant", INSTRUCTION_VARIANTS),
    "condition": _condition,
    "operator": _one_of("operator variant", OPERATOR_VARIANTS),
}
"""One check per run-configuration field; the experiment spec validates its lists with them."""


def registry_of(info: ValidationInfo) -> SpecRegistry | None:
    """The spec registry passed as validation context, if any."""
    context = info.context
    return context.get("registry") if isinstance(context, Mapping) else None


def validator(field: str, *, also: tuple[str, ...] = ()) -> AfterValidator:
    """A pydantic validator running ``field``'s check; values in ``also`` pass unchecked."""
    check = CHECKS[field]

    def validate(value: str, info: ValidationInfo) -> str:
        if value in also:
            return value
        try:
            check(value, registry_of(info))
        except UsageError as exc:
            raise ValueError(str(exc)) from None
        return value

    return AfterValidator(validate)


class RunConfig(BaseModel):
    """Everything about an episode that is not the world (validated; see the module docstring)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    agent: Annotated[str, validator("agent")] = RUN_DEFAULTS["agent"]
    contract: Annotated[str, validator("contract")] = RUN_DEFAULTS["contract"]
    docs: Annotated[str, validator("docs")] = RUN_DEFAULTS["docs"]
    instruction: Annotated[str, validator("instruction")] = RUN_DEFAULTS["instruction"]
    condition: Annotated[str, validator("condition")] = RUN_DEFAULTS["condition"]
    operator: Annotated[str, validator("operator")] = RUN_DEFAULTS["operator"]

    @classmethod
    def parse(cls, values: Mapping[str, Any], *, registry: SpecRegistry | None = None
              ) -> RunConfig:
        """Validate ``values``; a bad one is a one-line :class:`UsageError` listing valid ones."""
        try:
            return cls.model_validate(dict(values), context={"registry": registry})
        except ValidationError as exc:
            raise UsageError(first_problem(exc)) from None

    def fingerprint(self) -> str:
        return run_fingerprint(self)


def first_problem(exc: ValidationError) -> str:
    """The first error of ``exc`` in one line: our validators' message, or pydantic's."""
    error = exc.errors(include_url=False)[0]
    cause = error.get("ctx", {}).get("error")
    if isinstance(cause, ValueError):
        return str(cause)
    where = ".".join(str(part) for part in error["loc"])
    return f"{where}: {error['msg']}" if where else str(error["msg"])

