"""What an experiment spec (``specs/experiments/*.yaml``) may say, as pydantic models: the
dimensions a design crosses, its arms, and their limits; loading and checks against the specs
are in :mod:`limbo_plugin.experiments.experiment`."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import AfterValidator, Field, field_validator, model_validator

from limbo_plugin.agents.options import check_model_options
from limbo_plugin.errors import UsageError
from limbo_plugin.runconfig import validator
from limbo_plugin.spec.models import StrictModel

MAX_INSTANCES = 500
MAX_INSTANCE = 999_999
"""An experiment lists at most :data:`MAX_INSTANCES` instances numbered up to
:data:`MAX_INSTANCE`: a million instances is a typo, not a study (every template × focal write ×
mode × configuration multiplies it; the paper's designs use at most eight)."""
MAX_EPISODES = 100_000
"""The most episodes one experiment may expand to: each is a pytest item, and collection holds
them all before the first runs. Beyond it, split the study into several experiments."""
FROM_OPTION = "@option"
"""In an experiment's list, "use the value given on the command line (or its default)"."""


def _numbered_from_zero(value: list[int]) -> list[int]:
    if any(i < 0 for i in value):
        raise ValueError("instances are numbered from 0")
    if any(i > MAX_INSTANCE for i in value):
        raise ValueError(f"instance numbers go up to {MAX_INSTANCE:,}")
    if len(set(value)) != len(value):
        raise ValueError("an instance is listed twice")
    return value


def _once_each(value: list[str]) -> list[str]:
    """A name listed twice would cross its dimension with itself: the same episodes twice,
    under one id, or an arm that means less than it says."""
    twice = sorted({name for name in value if value.count(name) > 1})
    if twice:
        raise ValueError(f"{twice[0]!r} is listed twice")
    return value


Names = Annotated[list[str], Field(min_length=1), AfterValidator(_once_each)]
"""A non-empty list of names, each once (an empty one selects nothing: leave it out, or say
``all``)."""
Templates = Literal["all"] | Names
Instances = Annotated[list[int], Field(min_length=1, max_length=MAX_INSTANCES),
                      AfterValidator(_numbered_from_zero)]
FocalWrites = Literal["all"] | Names
MaxFocalWrites = Annotated[int, Field(ge=1, le=1000)]
Modes = Literal["all"] | Names
# Each run-configuration list is non-empty, names each value once, and each value is checked
# by the registry of its field.
Contracts = Annotated[list[Annotated[str, validator("contract", also=(FROM_OPTION,))]],
                      Field(min_length=1), AfterValidator(_once_each)]
Docs = Annotated[list[Annotated[str, validator("docs", also=(FROM_OPTION,))]],
                 Field(min_length=1), AfterValidator(_once_each)]
Instructions = Annotated[list[Annotated[str, validator("instruction", also=(FROM_OPTION,))]],
                         Field(min_length=1), AfterValidator(_once_each)]
Conditions = Annotated[list[Annotated[str, validator("condition", also=(FROM_OPTION,))]],
                       Field(min_length=1), AfterValidator(_once_each)]
Operators = Annotated[list[Annotated[str, validator("operator", also=(FROM_OPTION,))]],
                      Field(min_length=1), AfterValidator(_once_each)]
Agents = Annotated[list[Annotated[str, validator("agent", also=(FROM_OPTION,))]],
                   Field(min_length=1), AfterValidator(_once_each)]

DIMENSIONS = ("contracts", "docs", "instructions", "conditions", "operators", "agents")
CONFIG_FIELD = {"contracts": "contract", "docs": "docs", "instructions": "instruction",
                "conditions": "condition", "operators": "operator", "agents": "agent"}


def _from_option() -> list[str]:
    return [FROM_OPTION]


class Design(StrictModel):
    """What an experiment crosses: the worlds (templates × instances × focal writes × modes) and
    the run configurations (contracts × docs × instructions × conditions × operators × agents).
    A run-configuration list defaults to ``[@option]``: the command line's value."""

    templates: Templates = "all"
    """The task templates to run: ``all``, or a list of names (``limbo list templates``)."""
    instances: Instances = Field(default_factory=lambda: [0, 1])
    """Which parameter draws of each template: instance numbers from 0."""
    focal_writes: FocalWrites = "all"
    """The focal writes a fault may hit: ``all``, or a list of their ids."""
    max_focal_writes: MaxFocalWrites | None = None
    """At most this many focal writes per template (in the template's order)."""
    modes: Modes = "all"
    """The fault modes: ``all`` (every mode that applies to the focal write), or a list of names
    (``limbo list modes``); ``none`` is the fault-free episode."""
    exclude_modes: Annotated[list[str], AfterValidator(_once_each)] = Field(
        default_factory=list)
    """Fault modes left out of ``modes``."""
    contracts: Contracts = Field(default_factory=_from_option)
    """The contract variants (``--contract``); ``@option``: the command line's value."""
    docs: Docs = Field(default_factory=_from_option)
    """The documentation variants (``--docs``); ``@option``: the command line's value."""
    instructions: Instructions = Field(default_factory=_from_option)
    """The instruction variants (``--instruction``); ``@option``: the command line's value."""
    conditions: Conditions = Field(default_factory=_from_option)
    """The recovery conditions (``--condition``); ``@option``: the command line's value."""
    operators: Operators = Field(default_factory=_from_option)
    """The operator variants (``--operator``); ``@option``: the command line's value."""
    agents: Agents = Field(default_factory=_from_option)
    """The agents (``--agent`` forms); ``@option``: the command line's value. ``--agent`` replaces
    the list."""


DESIGN_FIELDS = tuple(Design.model_fields)


class Arm(StrictModel):
    """One part of an experiment's design: the dimensions it sets replace the top level's; the
    rest are the top level's. ``name`` and ``description`` only document it (and name it in
    errors)."""

    name: str | None = Field(default=None, min_length=1)
    """The arm's name, used in errors."""
    description: str = ""
    """What the arm is for (documentation only)."""
    templates: Templates | None = None
    """Replaces the top level's ``templates``."""
    instances: Instances | None = None
    """Replaces the top level's ``instances``."""
    focal_writes: FocalWrites | None = None
    """Replaces the top level's ``focal_writes``."""
    max_focal_writes: MaxFocalWrites | None = None
    """Replaces the top level's ``max_focal_writes`` (``null``: no limit)."""
    modes: Modes | None = None
    """Replaces the top level's ``modes``."""
    exclude_modes: Annotated[list[str], AfterValidator(_once_each)] | None = None
    """Replaces the top level's ``exclude_modes``."""
    contracts: Contracts | None = None
    """Replaces the top level's ``contracts``."""
    docs: Docs | None = None
    """Replaces the top level's ``docs``."""
    instructions: Instructions | None = None
    """Replaces the top level's ``instructions``."""
    conditions: Conditions | None = None
    """Replaces the top level's ``conditions``."""
    operators: Operators | None = None
    """Replaces the top level's ``operators``."""
    agents: Agents | None = None
    """Replaces the top level's ``agents``."""

    @model_validator(mode="after")
    def _no_empty_dimension(self) -> Arm:
        for name in sorted(self.model_fields_set & set(DESIGN_FIELDS)):
            if getattr(self, name) is None and name != "max_focal_writes":
                raise ValueError(f"{name} is empty: give its values, or leave it out to keep "
                                 "the top level's")
        return self

    def overrides(self) -> dict[str, Any]:
        """The dimensions this arm sets (an explicit ``max_focal_writes: null`` included)."""
        return {name: getattr(self, name) for name in DESIGN_FIELDS
                if name in self.model_fields_set}


Tier = Literal["frontier", "weaker"]
TIERS: tuple[str, ...] = ("frontier", "weaker")
"""The model tiers the paper pools by (§6.1: the frontier models, the weaker ones)."""


class ModelLabel(StrictModel):
    """What the study says about one of its models: its tier, and whether pooled statistics
    include it (the paper leaves out gpt-4.1, which completed only 87% of E1, and shows it per
    model with a caveat: ``pooled: false`` and the caveat as ``note``)."""

    tier: Tier | None = None
    """``frontier`` or ``weaker``: which pooled row of Table 3 and Table 10 the model joins."""
    pooled: bool = True
    """Whether the pooled statistics include the model (``false``: shown per model only)."""
    note: str = ""
    """A caveat shown beside the model in the report."""


class ExperimentSpec(Design):
    """An experiment: its name (the file's), its design, and optionally ``arms`` whose union it
    is (the top level then supplies their defaults); ``model_options`` go to every model."""

    name: str = Field(pattern=r"^[A-Za-z0-9_.-]+$")
    """The experiment's name: the file's stem, what ``--experiment`` takes."""
    description: str = ""
    """What the experiment is (shown by ``limbo list experiments``)."""
    model_options: dict[str, Any] = Field(default_factory=dict)
    """Options passed to every model of the experiment, as ``--model-option`` (which wins)."""
    models: dict[str, ModelLabel] = Field(default_factory=dict)
    """Labels of the experiment's agents (tier, pooled), keyed by the agent as listed."""
    arms: Annotated[list[Arm], Field(min_length=1)] | None = None
    """Partial designs whose union (each episode once) is the experiment; the top level supplies
    what an arm does not set."""

    @field_validator("model_options")
    @classmethod
    def _allowed_options(cls, value: dict[str, Any]) -> dict[str, Any]:
        try:
            check_model_options(value, "model_options:")
        except UsageError as exc:
            raise ValueError(str(exc)) from None
        from limbo_plugin.scrubbing import is_credential_name

        secret = next((name for name in value if is_credential_name(name)), None)
        if secret is not None:
            raise ValueError(f"{secret} is a credential: a spec is committed and shared, so it "
                             f"holds no secret; pass it as --model-option {secret}=… or in the "
                             "provider's environment variable")
        return value


    def design(self) -> Design:
        """The top level alone, as a design."""
        return Design.model_construct(**{name: getattr(self, name) for name in DESIGN_FIELDS})
