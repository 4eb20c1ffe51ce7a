"""The pydantic models of a task template (``specs/tasks/*.yaml``): what its YAML may say.

The models check each file on its own (one generator per parameter, the cue at the end of the
instruction, no reserved parameter name); what a template *does* (drawing parameters,
instantiating worlds, checking references across files) is :mod:`limbo_plugin.tasks`.
"""

from __future__ import annotations

import json
from typing import Annotated, Any

from pydantic import ConfigDict, Field, field_validator, model_validator

from limbo_plugin.spec.models import StrictModel

CUE = "Make sure each action happens exactly once."
GENERATORS = ("choice", "sample", "int_range", "template", "value", "id", "map", "join")
MAX_COUNT = 1000
Count = Annotated[int, Field(ge=1, le=MAX_COUNT)]
"""A count in a template (required effects, the n-th call, samples): 1 to 1000. A task that
needs more is not a task an agent finishes in its 40-call budget."""
SpecInt = Annotated[int, Field(ge=-(10**12), le=10**12)]


class ParamSpec(StrictModel):
    """One seeded parameter: exactly one generator."""

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True,
                              allow_inf_nan=False)

    choice: list[Any] | str | None = None
    """Pick one of these values (or of the pool named, ``{pools.customers}``)."""
    sample: list[Any] | str | None = None
    """Pick ``k`` distinct values of these (or of the pool named)."""
    k: Count | list[Count] | None = None
    """How many ``sample`` picks: a number, or ``[low, high]``."""
    int_range: list[SpecInt] | None = Field(default=None, alias="int", min_length=2,
                                            max_length=2)
    """As ``int: [low, high]``: a whole number in that range, ends included."""
    template: Any = None
    """A text (or structure) rendered from the parameters drawn before it."""
    value: Any = None
    """This value as it is."""
    id: str | None = None
    """A record id with this prefix and a hash of the world (``ch`` gives ``ch_3f2a…``)."""
    map: str | None = None
    """Turn each item of this list parameter into ``to``."""
    to: Any = None
    """What ``map`` makes of each item (``{item}``, ``{index}`` from 1)."""
    join: str | None = None
    """Join the items of this list parameter into one text, each as ``item``, separated by
    ``sep``."""
    item: str = "{item}"
    """How ``join`` renders each item."""
    sep: str = ", "
    """What ``join`` puts between items."""

    @model_validator(mode="after")
    def _one_generator(self) -> ParamSpec:
        chosen = [g for g in GENERATORS if g in self.model_fields_set]
        if len(chosen) != 1:
            raise ValueError(f"a parameter needs exactly one of {', '.join(GENERATORS)} "
                             f"(got {', '.join(chosen) or 'none'})".replace("int_range", "int"))
        if self.sample is not None and self.k is None:
            raise ValueError("'sample' needs 'k'")
        if isinstance(self.k, list) and (len(self.k) != 2 or self.k[0] > self.k[1]):
            raise ValueError(f"k as a range is [low, high] with low <= high, got {self.k}")
        if self.int_range is not None and self.int_range[0] > self.int_range[1]:
            raise ValueError(f"int is [low, high] with low <= high, got {self.int_range}")
        if self.map is not None and self.to is None:
            raise ValueError("'map' needs 'to'")
        for name in ("choice", "sample"):
            values = getattr(self, name)
            if isinstance(values, list):
                texts = [json.dumps(v, sort_keys=True, default=str) for v in values]
                twice = next((v for v, t in zip(values, texts, strict=True)
                              if texts.count(t) > 1), None)
                if twice is not None:
                    raise ValueError(f"{name} lists {twice!r} twice (it would be drawn twice "
                                     "as often)")
        return self


class RequiredSpec(StrictModel):
    id: str
    """The effect's name, used in failure messages and records."""
    tool: str | list[str]
    """The write tool (or tools) whose commits count for it."""
    where: dict[str, Any] = Field(default_factory=dict)
    """The arguments a commit must have to count (``{contains: …}`` for a part of a text)."""
    count: Count = 1
    """How many such commits the task needs: more is a duplicate, fewer a task failure."""
    for_each: str | None = None
    """One required effect per item of this list parameter (``{item}`` in ``where``)."""


class FocalSpec(StrictModel):
    id: str
    """The focal write's id: part of the world and of the episode id."""
    tool: str
    """The write tool the fault hits."""
    where: dict[str, Any] = Field(default_factory=dict)
    """The arguments the faulted call must have."""
    n: Count = 1
    """Which matching call is faulted (the first by default)."""
    for_each: str | None = None
    """One focal write per item of this list parameter."""
    limit: Count | None = None
    """With ``for_each``: at most this many of them."""


class StepSpec(StrictModel):
    id: str
    """The step's name; later steps read its result as ``{steps.<id>.…}``."""
    tool: str
    """The tool the step calls."""
    args: dict[str, Any] = Field(default_factory=dict)
    """Its arguments, rendered from the parameters and earlier steps."""
    for_each: str | None = None
    """Call the tool once per item of this list parameter."""


RESERVED_PARAMS = frozenset({"instance", "pools", "steps", "item", "index"})
"""Names every template's context already has: a parameter of that name would be ignored or
hide what the plan and the records read."""


class TemplateSpec(StrictModel):
    name: str = Field(pattern=r"^[a-z][a-z0-9_]*$")
    """The template's name: the file's stem, the first part of every episode id."""
    description: str = ""
    """What the task is."""
    services: list[str] = Field(min_length=1)
    """The services whose tools the agent is given (besides the general tools)."""
    params: dict[str, ParamSpec] = Field(default_factory=dict)
    """The parameters each instance draws, seeded by template and instance."""
    instruction: str
    """The task as the agent reads it; it must end with the cue sentence (Make sure each action
    happens exactly once.)"""
    records: dict[str, Any] = Field(default_factory=dict)
    """The services' records before the episode, per service and collection."""
    targets: list[str] = Field(default_factory=list)
    """Records the task may write to besides what it creates: a write to any other existing record
    is collateral damage."""
    required: list[RequiredSpec] = Field(min_length=1)
    """The effects a correct run commits: what the grader counts."""
    focal_writes: list[FocalSpec] = Field(min_length=1)
    """The writes a fault may hit: one world per focal write and fault mode."""
    plan: list[StepSpec] = Field(min_length=1)
    """The reference plan the scripted policies follow, step by step."""

    @field_validator("params")
    @classmethod
    def _not_reserved(cls, value: dict[str, Any]) -> dict[str, Any]:
        taken = sorted(set(value) & RESERVED_PARAMS)
        if taken:
            raise ValueError(f"params.{taken[0]} is reserved (Limbo sets it for every "
                             f"instance: {', '.join(sorted(RESERVED_PARAMS))}); give the "
                             "parameter another name")
        return value

    @field_validator("instruction")
    @classmethod
    def _cue(cls, value: str) -> str:
        if not value.strip().endswith(CUE):
            raise ValueError(f"the instruction must end with the cue sentence {CUE!r}")
        return value
