"""Experiment specs (``specs/experiments/*.yaml``) and their expansion into episodes.

An experiment lists templates, instances, focal writes, fault modes, contracts, documentation
variants, instruction variants, conditions, operator variants and agents. Expansion is their
product, restricted to applicable (focal write, mode) pairs, sorted and seed-free: pytest-xdist
requires every worker to collect the same items in the same order.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import Field, field_validator

from limbo_plugin.errors import SpecError, UsageError
from limbo_plugin.faults import expected_failure
from limbo_plugin.records import BASELINE_FOCAL, EpisodeKey
from limbo_plugin.runconfig import RunConfig, validator
from limbo_plugin.spec.loader import LoadedYaml, load_yaml, validate
from limbo_plugin.spec.models import StrictModel
from limbo_plugin.spec.registry import SpecRegistry

FROM_OPTION = "@option"
"""In an experiment's list, "use the value given on the command line (or its default)"."""

Contracts = list[Annotated[str, validator("contract", also=(FROM_OPTION,))]]
Docs = list[Annotated[str, validator("docs", also=(FROM_OPTION,))]]
Instructions = list[Annotated[str, validator("instruction", also=(FROM_OPTION,))]]
Conditions = list[Annotated[str, validator("condition", also=(FROM_OPTION,))]]
Operators = list[Annotated[str, validator("operator", also=(FROM_OPTION,))]]
Agents = list[Annotated[str, validator("agent", also=(FROM_OPTION,))]]

DIMENSIONS = ("contracts", "docs", "instructions", "conditions", "operators", "agents")
CONFIG_FIELD = {"contracts": "contract", "docs": "docs", "instructions": "instruction",
                "conditions": "condition", "operators": "operator", "agents": "agent"}


class ExperimentSpec(StrictModel):
    name: str = Field(pattern=r"^[A-Za-z0-9_.-]+$")
    description: str = ""
    templates: Literal["all"] | list[str] = "all"
    instances: list[int] = Field(default_factory=lambda: [0, 1], min_length=1)
    focal_writes: Literal["all"] | list[str] = "all"
    max_focal_writes: int | None = Field(default=None, ge=1)
    modes: Literal["all"] | list[str] = "all"
    exclude_modes: list[str] = Field(default_factory=list)
    contracts: Contracts = Field(default_factory=lambda: [FROM_OPTION], min_length=1)
    docs: Docs = Field(default_factory=lambda: [FROM_OPTION], min_length=1)
    instructions: Instructions = Field(default_factory=lambda: [FROM_OPTION], min_length=1)
    conditions: Conditions = Field(default_factory=lambda: [FROM_OPTION], min_length=1)
    operators: Operators = Field(default_factory=lambda: [FROM_OPTION], min_length=1)
    agents: Agents = Field(default_factory=lambda: [FROM_OPTION], min_length=1)
    model_options: dict[str, Any] = Field(default_factory=dict)

    @field_validator("instances")
    @classmethod
    def _non_negative(cls, value: list[int]) -> list[int]:
        if any(i < 0 for i in value):
            raise ValueError("instances are numbered from 0")
        return value


@dataclass(frozen=True, order=True)
class Episode:
    """One test item: a world and a run configuration."""

    key: EpisodeKey
    config: RunConfig

    @property
    def id(self) -> str:
        return "-".join([self.key.id, *self.config.non_default_parts()])

    def sort_key(self) -> tuple[Any, ...]:
        k, c = self.key, self.config
        return (k.template, k.instance, k.focal_write, k.fault_mode, c.contract, c.docs,
                c.instruction, c.condition, c.operator, c.agent)


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
    """Keywords: template, mode, family, contract, condition, and the focal write's tool and
    service (every service of the task for a fault-free episode). Markers: the family and, if
    it has one, its class (SPEC §3)."""
    key, config = episode.key, episode.config
    task = registry.template(key.template).instantiate(key.instance)
    mode = registry.fault_mode(key.fault_mode)
    keywords = {key.template, key.fault_mode, mode.family, config.contract, config.condition}
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


def item_name(episode: Episode, *, with_agent: bool) -> str:
    """The pytest item name: the episode id, plus the agent when a run compares several."""
    if not with_agent:
        return episode.id
    return f"{episode.id}-" + episode.config.agent.replace(":", "-").replace("/", "_")


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

    def check_names(self, registry: SpecRegistry) -> None:
        """Every template, mode and focal write it names exists; a SpecError names the line.

        (Run-configuration values are validated with the spec itself, by :class:`RunConfig`'s
        checks; see :class:`ExperimentSpec`.)
        """
        spec = self.spec
        if spec.templates != "all":
            for i, name in enumerate(spec.templates):
                if name not in registry.templates:
                    raise self.doc.error(("templates", i), f"unknown template {name!r}; valid: "
                                         + ", ".join(sorted(registry.templates)))
        if spec.modes != "all":
            for i, mode in enumerate(spec.modes):
                if mode not in registry.faults:
                    raise self.doc.error(("modes", i), f"unknown fault mode {mode!r}; valid: "
                                         + ", ".join(registry.faults))
        for i, mode in enumerate(spec.exclude_modes):
            if mode not in registry.faults:
                raise self.doc.error(("exclude_modes", i), f"unknown fault mode {mode!r}")
        if spec.focal_writes != "all":
            known = {f.id for t in self._templates(registry) for inst in spec.instances
                     for f in registry.template(t).instantiate(inst).focal_writes}
            for i, focal in enumerate(spec.focal_writes):
                if focal not in known:
                    raise self.doc.error(("focal_writes", i),
                                         f"unknown focal write {focal!r} in these templates")

    def _templates(self, registry: SpecRegistry) -> list[str]:
        if self.spec.templates == "all":
            return sorted(registry.templates)
        return list(self.spec.templates)

    def modes(self, registry: SpecRegistry) -> list[str]:
        modes = list(registry.faults) if self.spec.modes == "all" else list(self.spec.modes)
        return [m for m in modes if m not in self.spec.exclude_modes]

    def worlds(self, registry: SpecRegistry) -> list[EpisodeKey]:
        """The worlds of this experiment: applicable (template, instance, focal, mode) keys."""
        return sorted(set(iter_worlds(registry, self._templates(registry), self.spec.instances,
                                      self.spec.focal_writes, self.modes(registry),
                                      self.spec.max_focal_writes)),
                      key=lambda k: (k.template, k.instance, k.focal_write, k.fault_mode))

    def configs(self, overrides: Mapping[str, str | None], defaults: RunConfig
                ) -> list[RunConfig]:
        """Run configurations: the product of the dimensions, command-line values overriding."""
        values: dict[str, list[str]] = {}
        for dimension in DIMENSIONS:
            field = CONFIG_FIELD[dimension]
            override = overrides.get(field)
            if override is not None:
                values[field] = [override]
                continue
            listed = getattr(self.spec, dimension)
            default = getattr(defaults, field)
            values[field] = list(dict.fromkeys(default if v == FROM_OPTION else v
                                               for v in listed))
        configs = [RunConfig()]
        for field, options in values.items():
            configs = [c.model_copy(update={field: v}) for c in configs for v in options]
        return configs

    def episodes(self, registry: SpecRegistry, overrides: Mapping[str, str | None],
                 defaults: RunConfig) -> list[Episode]:
        configs = self.configs(overrides, defaults)  # one object each, shared by the worlds
        episodes = [Episode(key=k, config=c) for k in self.worlds(registry) for c in configs]
        return sorted(episodes, key=Episode.sort_key)


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


__all__ = ["Episode", "EpisodeLabels", "Experiment", "ExperimentSpec", "SpecError",
           "episode_labels", "item_name", "iter_worlds", "load_experiment"]
