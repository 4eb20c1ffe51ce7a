"""A loaded experiment: its spec and where each value was written, the parts (arms) whose union
it is, the checks of the names it uses (each error at its file:line), and its worlds, run
configurations and episodes."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from limbo_plugin.errors import SpecError, UsageError
from limbo_plugin.experiments.design import (
    DESIGN_FIELDS,
    FROM_OPTION,
    MAX_EPISODES,
    Design,
    ExperimentSpec,
)
from limbo_plugin.experiments.expand import (
    Episode,
    configs_of,
    modes_of,
    templates_of,
    usable_templates,
    world_order,
    worlds_of,
)
from limbo_plugin.records import EpisodeKey
from limbo_plugin.runconfig import RunConfig
from limbo_plugin.spec.loader import LoadedYaml, PathKey, format_path, load_yaml, validate
from limbo_plugin.spec.registry import SpecRegistry


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
        self._check_model_labels()
        for part in self.parts():
            self._check_part(part, registry)

    def _check_model_labels(self) -> None:
        """A label names an agent the experiment lists (a misspelt one would label nothing)."""
        agents = [a for part in self.parts() for a in part.design.agents]
        if FROM_OPTION in agents:
            return
        for name in self.spec.models:
            if name not in agents:
                raise self.doc.error(("models", name), f"{name!r} is not an agent of this "
                                     "experiment; its agents: " + ", ".join(dict.fromkeys(agents)))

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
