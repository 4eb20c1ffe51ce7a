"""Experiment specs (``specs/experiments/*.yaml``) and their expansion into episodes.

An experiment lists templates, instances, focal writes, fault modes, contracts, documentation
variants, instruction variants, conditions, operator variants and agents. Expansion is their
product, restricted to applicable (focal write, mode) pairs, sorted and seed-free: pytest-xdist
requires every worker to collect the same items in the same order.

A study's design is rarely one product: the paper's E1 adds instances for two sparse writes only,
E5 crosses each delay mode with its own grid of bounds, E4 runs its guard ablations on two models
only. An experiment may therefore list ``arms``: partial designs, each overriding any dimension of
the top level (which then only supplies defaults). Its episodes are the union over the arms,
de-duplicated and sorted like any experiment's, so an episode two arms share runs once and the
collection stays identical on every worker. An experiment without arms is its own single design.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, Field, field_validator, model_validator

from limbo_plugin.agents.options import check_model_options
from limbo_plugin.agents.registry import AgentPlan
from limbo_plugin.errors import SpecError, UsageError
from limbo_plugin.faults import expected_failure
from limbo_plugin.records import BASELINE_FOCAL, EpisodeKey, make_test_id
from limbo_plugin.runconfig import RunConfig, validator
from limbo_plugin.spec.loader import LoadedYaml, PathKey, format_path, load_yaml, validate
from limbo_plugin.spec.models import StrictModel
from limbo_plugin.spec.registry import SpecRegistry

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


Templates = Literal["all"] | list[str]
Instances = Annotated[list[int], Field(min_length=1, max_length=MAX_INSTANCES),
                      AfterValidator(_numbered_from_zero)]
FocalWrites = Literal["all"] | list[str]
MaxFocalWrites = Annotated[int, Field(ge=1, le=1000)]
Modes = Literal["all"] | list[str]
# Each run-configuration list is non-empty and each value is checked by the registry of its field.
Contracts = Annotated[list[Annotated[str, validator("contract", also=(FROM_OPTION,))]],
                      Field(min_length=1)]
Docs = Annotated[list[Annotated[str, validator("docs", also=(FROM_OPTION,))]],
                 Field(min_length=1)]
Instructions = Annotated[list[Annotated[str, validator("instruction", also=(FROM_OPTION,))]],
                         Field(min_length=1)]
Conditions = Annotated[list[Annotated[str, validator("condition", also=(FROM_OPTION,))]],
                       Field(min_length=1)]
Operators = Annotated[list[Annotated[str, validator("operator", also=(FROM_OPTION,))]],
                      Field(min_length=1)]
Agents = Annotated[list[Annotated[str, validator("agent", also=(FROM_OPTION,))]],
                   Field(min_length=1)]

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
    instances: Instances = Field(default_factory=lambda: [0, 1])
    focal_writes: FocalWrites = "all"
    max_focal_writes: MaxFocalWrites | None = None
    modes: Modes = "all"
    exclude_modes: list[str] = Field(default_factory=list)
    contracts: Contracts = Field(default_factory=_from_option)
    docs: Docs = Field(default_factory=_from_option)
    instructions: Instructions = Field(default_factory=_from_option)
    conditions: Conditions = Field(default_factory=_from_option)
    operators: Operators = Field(default_factory=_from_option)
    agents: Agents = Field(default_factory=_from_option)


DESIGN_FIELDS = tuple(Design.model_fields)


class Arm(StrictModel):
    """One part of an experiment's design: the dimensions it sets replace the top level's; the
    rest are the top level's. ``name`` and ``description`` only document it (and name it in
    errors)."""

    name: str | None = Field(default=None, min_length=1)
    description: str = ""
    templates: Templates | None = None
    instances: Instances | None = None
    focal_writes: FocalWrites | None = None
    max_focal_writes: MaxFocalWrites | None = None
    modes: Modes | None = None
    exclude_modes: list[str] | None = None
    contracts: Contracts | None = None
    docs: Docs | None = None
    instructions: Instructions | None = None
    conditions: Conditions | None = None
    operators: Operators | None = None
    agents: Agents | None = None

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


class ExperimentSpec(Design):
    """An experiment: its name (the file's), its design, and optionally ``arms`` whose union it
    is (the top level then supplies their defaults); ``model_options`` go to every model."""

    name: str = Field(pattern=r"^[A-Za-z0-9_.-]+$")
    description: str = ""
    model_options: dict[str, Any] = Field(default_factory=dict)
    arms: Annotated[list[Arm], Field(min_length=1)] | None = None

    @field_validator("model_options")
    @classmethod
    def _allowed_options(cls, value: dict[str, Any]) -> dict[str, Any]:
        try:
            check_model_options(value, "model_options:")
        except UsageError as exc:
            raise ValueError(str(exc)) from None
        return value


    def design(self) -> Design:
        """The top level alone, as a design."""
        return Design.model_construct(**{name: getattr(self, name) for name in DESIGN_FIELDS})


@dataclass(frozen=True, order=True)
class Episode:
    """One test item: a world and a run configuration."""

    key: EpisodeKey
    config: RunConfig
    repeat: int = 0
    """Which run of the episode this is (``--limbo-repeat``), from 0; the world is the same."""

    @property
    def id(self) -> str:
        """The test id: the pytest item's name, the record's ``test_id``, what ``limbo show``
        takes (:func:`limbo_plugin.records.make_test_id`)."""
        return make_test_id(self.key.id, self.config, self.repeat)

    def sort_key(self) -> tuple[Any, ...]:
        k, c = self.key, self.config
        return (k.template, k.instance, k.focal_write, k.fault_mode, c.contract, c.docs,
                c.instruction, c.condition, c.operator, c.agent, self.repeat)


@dataclass(frozen=True)
class EpisodeLabels:
    """How users select and read an episode: keywords (``-k``), marker names (``-m``), why it
    is expected to fail (``xfail``), and the template spec it comes from (file, line)."""

    keywords: frozenset[str]
    markers: tuple[str, ...]
    xfail_reason: str | None
    spec_file: str
    spec_line: int | None


def episode_labels(episode: Episode, registry: SpecRegistry) -> EpisodeLabels:
    """Keywords: template, mode, family, contract, condition, the agent (``scripted-same_key``:
    so ``-k scripted`` selects by agent even where the default agent is not in the test id),
    and the focal write's tool and service (every service of the task for a fault-free
    episode). Markers: the family and, if
    it has one, its class (SPEC §3)."""
    key, config = episode.key, episode.config
    task = registry.template(key.template).instantiate(key.instance)
    mode = registry.fault_mode(key.fault_mode)
    keywords = {key.template, key.fault_mode, mode.family, config.contract, config.condition,
                config.agent.replace(":", "-")}
    reason = None
    if key.fault_mode != "none":
        focal = registry.catalog(config.contract).get(task.focal(key.focal_write).tool)
        assert focal is not None  # templates name only tools of their services
        keywords |= {focal.name, focal.service}
        reason = expected_failure(mode, focal)
    else:
        keywords |= set(task.services)
    fault_class = registry.fault_class(mode.family)
    markers = (mode.family,) if fault_class is None else (mode.family, fault_class)
    return EpisodeLabels(keywords=frozenset(keywords), markers=markers, xfail_reason=reason,
                         spec_file=task.spec_file, spec_line=task.spec_line)


@dataclass(frozen=True)
class Part:
    """One design of an experiment, where it was written (``at``: the arm's path in the spec, or
    the top level's ``()``) and what an error about it is called."""

    design: Design
    at: PathKey
    label: str
    sets: frozenset[str]
    """The dimensions written at ``at``; the others come from the top level."""

    def path(self, field: str) -> PathKey:
        """Where ``field`` of this part was written: in the arm, or at the top level."""
        return (*self.at, field) if field in self.sets else (field,)


REPEAT_SUFFIX = re.compile(r"-rep\d+$")


def compares_agents(episodes: Iterable[Episode]) -> bool:
    """Whether the episodes run more than one agent (their item names then say which)."""
    return len({e.config.agent for e in episodes}) > 1


def agents_of_items(node_ids: Iterable[str], root: Path, registry: SpecRegistry,
                    overrides: Mapping[str, str | None], defaults: RunConfig) -> set[str]:
    """The agents the collected items ``node_ids`` run (see :func:`plans_of_items`)."""
    return {plan.agent for plan in plans_of_items(node_ids, root, registry, overrides, defaults)}


def plans_of_items(node_ids: Iterable[str], root: Path, registry: SpecRegistry,
                   overrides: Mapping[str, str | None], defaults: RunConfig,
                   model_options: Mapping[str, Any] | None = None) -> set[AgentPlan]:
    """The agents, with their conditions and model options, of the collected items
    ``node_ids`` (``specs/experiments/e3.yaml::<name>``). The pytest-xdist controller collects
    nothing itself; it learns what the workers selected (after ``-k`` and ``-m``) by expanding
    their experiment files again. ``model_options`` are the command line's, over each
    experiment's own."""
    by_file: dict[str, list[str]] = {}
    for node_id in node_ids:
        file, sep, name = node_id.partition("::")
        if sep and file.endswith((".yaml", ".yml")):
            by_file.setdefault(file, []).append(name)
    plans: set[AgentPlan] = set()
    for file, names in by_file.items():
        try:
            experiment = load_experiment(root / file, registry)
        except (SpecError, OSError):
            continue  # not an experiment, or a broken one (collected as a spec-error item)
        options = {**experiment.spec.model_options, **(model_options or {})}
        episodes = experiment.episodes(registry, overrides, defaults)
        plan_of = {e.id: AgentPlan.of(e.config.agent, e.config.condition, options)
                   for e in episodes}
        for name in names:  # a repeat (-rep2) runs its episode's plan
            plan = plan_of.get(name) or plan_of.get(REPEAT_SUFFIX.sub("", name))
            if plan is not None:
                plans.add(plan)
    return plans


@dataclass
class Experiment:
    spec: ExperimentSpec
    file: Path
    doc: LoadedYaml

    @property
    def name(self) -> str:
        return self.spec.name

    def line_of(self, field: str) -> int | None:
        return self.doc.line_of((field,))

    def parts(self) -> list[Part]:
        """The designs whose union the experiment is: its arms, or its top level alone."""
        top = self.spec.design()
        if not self.spec.arms:
            return [Part(top, (), "the experiment", frozenset(DESIGN_FIELDS))]
        parts = []
        for i, arm in enumerate(self.spec.arms):
            overrides = arm.overrides()
            label = f"arm {arm.name!r}" if arm.name else f"arm {i + 1}"
            parts.append(Part(top.model_copy(update=overrides), ("arms", i), label,
                              frozenset(overrides)))
        return parts

    def check_names(self, registry: SpecRegistry) -> None:
        """Every template, mode and focal write each part names exists, every arm is named once
        and adds episodes; a SpecError names the line.

        (Run-configuration values are validated with the spec itself, by :class:`RunConfig`'s
        checks; see :class:`Design`.)
        """
        self._check_arm_names()
        for part in self.parts():
            self._check_part(part, registry)

    def _check_arm_names(self) -> None:
        seen: set[str] = set()
        for i, arm in enumerate(self.spec.arms or ()):
            if arm.name is not None:
                if arm.name in seen:
                    raise self.doc.error(("arms", i, "name"),
                                         f"two arms are named {arm.name!r}; arm names are unique")
                seen.add(arm.name)

    def _check_part(self, part: Part, registry: SpecRegistry) -> None:
        design = part.design
        if design.templates != "all":
            for i, name in enumerate(design.templates):
                if name not in registry.templates and name not in registry.template_errors:
                    raise self.doc.error((*part.path("templates"), i),
                                         f"unknown template {name!r}; valid: "
                                         + ", ".join(sorted(registry.templates)))
        if design.modes != "all":
            for i, mode in enumerate(design.modes):
                if mode not in registry.faults:
                    raise self.doc.error((*part.path("modes"), i),
                                         f"unknown fault mode {mode!r}; valid: "
                                         + ", ".join(registry.faults))
        for i, mode in enumerate(design.exclude_modes):
            if mode not in registry.faults:
                raise self.doc.error((*part.path("exclude_modes"), i),
                                     f"unknown fault mode {mode!r}")
        if design.focal_writes != "all":
            known = {f.id for t in templates_of(design, registry) for inst in design.instances
                     for f in registry.template(t).instantiate(inst).focal_writes}
            for i, focal in enumerate(design.focal_writes):
                if focal in known or self.broken_templates(registry):
                    continue
                if "focal_writes" in part.sets:
                    raise self.doc.error((*part.path("focal_writes"), i),
                                         f"unknown focal write {focal!r} in these templates")
                raise self.doc.error(part.at, f"focal write {focal!r} (from the top level) is "
                                     f"in none of the templates of {part.label}")
        if part.at and not worlds_of(design, registry) and not self.broken_templates(registry):
            raise self.doc.error(part.at, f"{part.label} has no episode: none of its modes "
                                 "applies to its focal writes")

    def broken_templates(self, registry: SpecRegistry) -> list[SpecError]:
        """The errors of the templates this experiment names (or all) that do not load, or
        fail to instantiate one of its instances: their episodes are lost, and each error is
        reported once, not the whole run."""
        errors: dict[str, SpecError] = {}
        for part in self.parts():
            for error in usable_templates(part.design, registry)[1]:
                errors.setdefault(str(error), error)
        return list(errors.values())

    def worlds(self, registry: SpecRegistry) -> list[EpisodeKey]:
        """The worlds of this experiment: applicable (template, instance, focal, mode) keys."""
        return sorted({k for part in self.parts() for k in worlds_of(part.design, registry)},
                      key=world_order)

    def configs(self, overrides: Mapping[str, str | None], defaults: RunConfig
                ) -> list[RunConfig]:
        """Run configurations of every part (each a product; command-line values override)."""
        found = {c: None for part in self.parts()
                 for c in configs_of(part.design, overrides, defaults)}
        return list(found)

    def arms(self, registry: SpecRegistry, overrides: Mapping[str, str | None],
             defaults: RunConfig) -> dict[tuple[EpisodeKey, RunConfig], str]:
        """The arm each episode comes from: the first arm, in the spec's order, whose design
        holds it (``arm 2`` for an unnamed second arm). Empty for an experiment without arms."""
        out: dict[tuple[EpisodeKey, RunConfig], str] = {}
        for i, (part, arm) in enumerate(zip(self.parts(), self.spec.arms or (), strict=False)):
            name = arm.name or f"arm {i + 1}"
            configs = configs_of(part.design, overrides, defaults)
            for key in worlds_of(part.design, registry):
                for config in configs:
                    out.setdefault((key, config), name)
        return out

    def episodes(self, registry: SpecRegistry, overrides: Mapping[str, str | None],
                 defaults: RunConfig, *, repeat: int = 1) -> list[Episode]:
        """The union over the parts of worlds × run configurations (each ``repeat`` times,
        the runs of one episode side by side), sorted."""
        episodes: set[Episode] = set()
        expected = 0
        for part in self.parts():
            configs = configs_of(part.design, overrides, defaults)
            worlds = worlds_of(part.design, registry)
            expected += len(worlds) * len(configs) * repeat
            if expected > MAX_EPISODES:
                raise SpecError(self.file, f"the experiment expands to more than "
                                f"{MAX_EPISODES:,} episodes ({len(worlds):,} worlds × "
                                f"{len(configs)} configuration(s) × {repeat} repeat(s) in one "
                                "part); split it into smaller experiments",
                                line=self.line_of("instances"), path="instances")
            episodes.update(Episode(key=k, config=c, repeat=r) for k in worlds
                            for c in configs for r in range(repeat))
        return sorted(episodes, key=Episode.sort_key)


    def selects_nothing(self, registry: SpecRegistry) -> SpecError:
        """Why an experiment whose templates all load selects no episode: one line naming the
        dimension that left nothing (a run would otherwise exit 5 with no reason)."""
        part = self.parts()[0]
        design = part.design
        modes = modes_of(design, registry)
        if not modes:
            field, reason = "exclude_modes", "it excludes every mode it lists"
        elif design.focal_writes != "all":
            field = "focal_writes"
            reason = (f"none of its focal writes ({', '.join(design.focal_writes)}) has a world "
                      "under its modes")
        else:
            field, reason = "modes", "none of its modes applies to its templates' focal writes"
        return SpecError(self.file, f"the experiment selects no episode: {reason}",
                         line=self.doc.line_of(part.path(field)),
                         path=format_path(part.path(field)))


def world_order(key: EpisodeKey) -> tuple[str, int, str, str]:
    return (key.template, key.instance, key.focal_write, key.fault_mode)


def templates_of(design: Design, registry: SpecRegistry) -> list[str]:
    """The templates whose episodes run: those named (or all) that load and instantiate."""
    return usable_templates(design, registry)[0]


def usable_templates(design: Design, registry: SpecRegistry
                     ) -> tuple[list[str], list[SpecError]]:
    """The templates ``design`` names (or all) that load and instantiate each of its
    instances, and the errors of those that do not (a broken template costs only its own
    episodes)."""
    named = (sorted({*registry.templates, *registry.template_errors})
             if design.templates == "all" else list(design.templates))
    usable, errors = [], []
    for name in named:
        try:
            template = registry.template(name)
            for instance in design.instances:
                template.instantiate(instance)
        except SpecError as exc:
            errors.append(exc)
        else:
            usable.append(name)
    return usable, errors


def modes_of(design: Design, registry: SpecRegistry) -> list[str]:
    modes = list(registry.faults) if design.modes == "all" else list(design.modes)
    return [m for m in modes if m not in design.exclude_modes]


def worlds_of(design: Design, registry: SpecRegistry) -> set[EpisodeKey]:
    return set(iter_worlds(registry, templates_of(design, registry), design.instances,
                           design.focal_writes, modes_of(design, registry),
                           design.max_focal_writes))


def configs_of(design: Design, overrides: Mapping[str, str | None], defaults: RunConfig
               ) -> list[RunConfig]:
    """One design's run configurations: the product of its dimensions, a value given on the
    command line replacing that dimension's list."""
    values: dict[str, list[str]] = {}
    for dimension in DIMENSIONS:
        field = CONFIG_FIELD[dimension]
        override = overrides.get(field)
        if override is not None:
            values[field] = [override]
            continue
        listed = getattr(design, dimension)
        default = getattr(defaults, field)
        values[field] = list(dict.fromkeys(default if v == FROM_OPTION else v for v in listed))
    configs = [RunConfig()]
    for field, options in values.items():
        configs = [c.model_copy(update={field: v}) for c in configs for v in options]
    return configs


def iter_worlds(registry: SpecRegistry, templates: Iterable[str], instances: Iterable[int],
                focal_writes: Literal["all"] | list[str], modes: list[str],
                max_focal_writes: int | None = None) -> Iterator[EpisodeKey]:
    """Every applicable world: partial batches only on batch writes; ``none`` once per instance."""
    for template in templates:
        for instance in instances:
            task = registry.template(template).instantiate(instance)
            focals = [f for f in task.focal_writes
                      if focal_writes == "all" or f.id in focal_writes][:max_focal_writes]
            for mode in modes:
                spec = registry.fault_mode(mode)
                if mode == "none":
                    yield EpisodeKey(template=template, instance=instance,
                                     focal_write=BASELINE_FOCAL, fault_mode=mode)
                    continue
                for focal in focals:
                    contract = registry.catalog().contract(focal.tool)
                    if spec.batch_only and not contract.batch_field:
                        continue
                    yield EpisodeKey(template=template, instance=instance,
                                     focal_write=focal.id, fault_mode=mode)


def load_experiment(file: str | Path, registry: SpecRegistry) -> Experiment:
    file = Path(file)
    doc = load_yaml(file)
    spec = validate(doc, ExperimentSpec, context={"registry": registry})
    if spec.name != file.stem:
        raise doc.error(("name",), f"name {spec.name!r} must match the file name {file.stem!r}")
    experiment = Experiment(spec=spec, file=file, doc=doc)
    experiment.check_names(registry)
    return experiment


def find_experiment(name: str, registry: SpecRegistry) -> Path:
    directory = registry.root / "experiments"
    file = directory / f"{name}.yaml"
    if not file.exists():
        valid = ", ".join(sorted(p.stem for p in directory.glob("*.yaml"))) or "(none)"
        raise UsageError(f"unknown experiment {name!r}; valid: {valid}")
    return file


__all__ = ["Arm", "Design", "Episode", "EpisodeLabels", "Experiment", "ExperimentSpec",
           "SpecError", "agents_of_items", "compares_agents", "episode_labels", "iter_worlds",
           "load_experiment", "plans_of_items"]
