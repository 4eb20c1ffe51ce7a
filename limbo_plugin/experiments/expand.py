"""An experiment design's expansion: its worlds (applicable template × instance × focal write ×
mode keys), its run configurations (the product of its dimensions, the command line overriding),
and the :class:`Episode` (world × configuration × repeat) each pytest item runs. Sorted and
seed-free: pytest-xdist requires every worker to collect the same items in the same order."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from limbo_plugin.errors import SpecError
from limbo_plugin.experiments.design import CONFIG_FIELD, DIMENSIONS, FROM_OPTION, Design
from limbo_plugin.records import BASELINE_FOCAL, EpisodeKey, make_test_id
from limbo_plugin.runconfig import RunConfig
from limbo_plugin.spec.registry import SpecRegistry


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
