"""Task templates (``specs/tasks/*.yaml``) and their instantiation from ``(template, instance)``.

A template declares its services, seeded parameters, the instruction, pre-existing records,
required effects, focal writes and a reference plan, all templated over the parameters (see
:mod:`limbo_plugin.templating`). Parameters are drawn from the base seed of ``(template,
instance)`` alone, one independent random stream per parameter, so every agent, condition and
contract faces the same task.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import cached_property, lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol

from limbo_plugin.errors import SpecError
from limbo_plugin.spec.loader import LoadedYaml, load_yaml, validate
from limbo_plugin.spec.models import FocalTrigger
from limbo_plugin.spec.templates import CUE, GENERATORS, ParamSpec, TemplateSpec
from limbo_plugin.templating import TemplateError, render
from limbo_plugin.world.ids import stable_int
from limbo_plugin.world.seeds import base_seed, rng_for

if TYPE_CHECKING:
    from limbo_plugin.contracts import ToolCatalog
    from limbo_plugin.spec.registry import SpecRegistry
    from limbo_plugin.world.ledger import Effect

INSTRUCTION_VARIANTS = ("default", "no_cue")


# -- instances -------------------------------------------------------------------------------
@dataclass(frozen=True)
class RequiredEffect:
    id: str
    tools: tuple[str, ...]
    where: dict[str, Any]
    count: int

    def matches(self, effect: Effect) -> bool:
        return self.matches_intent(effect.tool, effect.intent)

    def matches_intent(self, tool: str, intent: Mapping[str, Any]) -> bool:
        """Whether a write of ``tool`` with ``intent`` counts toward this requirement (what
        :meth:`matches` asks of an effect, and the behaviour coder of a call)."""
        if tool not in self.tools:
            return False
        return all(_matches(_path(intent, path), expected)
                   for path, expected in self.where.items())


@dataclass(frozen=True)
class FocalWrite:
    id: str
    tool: str
    where: dict[str, Any]
    n: int = 1

    def trigger(self) -> FocalTrigger:
        return FocalTrigger(tool=self.tool, where=dict(self.where), n=self.n)


@dataclass(frozen=True)
class PlanStep:
    """A step of the reference plan. ``args`` stay templates: they may refer to the results of
    earlier steps (``{steps.ticket.url}``), known only while the episode runs."""

    id: str
    tool: str
    args: dict[str, Any]
    items: list[Any] | None = None


@dataclass
class TaskInstance:
    template: str
    instance: int
    base_seed: int
    services: list[str]
    params: dict[str, Any]
    instruction_text: str
    seed_records: dict[str, Any]
    targets: list[str]
    required: list[RequiredEffect]
    focal_writes: list[FocalWrite]
    plan: list[PlanStep]
    spec_file: str = ""
    spec_line: int | None = None

    def instruction(self, variant: str = "default") -> str:
        if variant == "default":
            return self.instruction_text
        if variant == "no_cue":
            text = self.instruction_text.strip()
            return text[: -len(CUE)].rstrip()
        raise ValueError(f"unknown instruction variant {variant!r}; "
                         f"valid: {', '.join(INSTRUCTION_VARIANTS)}")

    def focal(self, focal_id: str) -> FocalWrite:
        for focal in self.focal_writes:
            if focal.id == focal_id:
                return focal
        valid = ", ".join(f.id for f in self.focal_writes)
        raise KeyError(f"{self.template} instance {self.instance} has no focal write "
                       f"{focal_id!r}; valid: {valid}")


class TemplateSources(Protocol):
    """What a template reads of the spec tree to build its instances: the native tool catalog
    (which tools its services have, which are writes) and the value pools. The registry is
    one; a template sees no more of it."""

    @property
    def pools(self) -> Mapping[str, list[Any]]: ...

    def catalog(self) -> ToolCatalog: ...


@dataclass
class TaskTemplate:
    """A loaded, validated template; instances are built on demand and cached."""

    spec: TemplateSpec
    file: Path
    doc: LoadedYaml
    sources: TemplateSources
    _instances: dict[int, TaskInstance] = field(default_factory=dict)

    @property
    def name(self) -> str:
        return self.spec.name

    @cached_property
    def line(self) -> int | None:
        return self.doc.line_of(("name",))

    def instantiate(self, instance: int) -> TaskInstance:
        if instance not in self._instances:
            self._instances[instance] = self._build(instance)
        return self._instances[instance]

    def _build(self, instance: int) -> TaskInstance:
        spec, seed = self.spec, base_seed(self.spec.name, instance)
        catalog = self.sources.catalog()
        tools = {t.name for t in catalog.for_services(spec.services)}

        def known(tool: str, *, write: bool = False) -> str:
            if tool not in tools:
                raise TemplateError(f"unknown tool {tool!r} for services "
                                    f"{', '.join(spec.services)}")
            if write and not catalog.contract(tool).is_write:
                raise TemplateError(f"{tool!r} is not a write")
            return tool

        params: dict[str, Any] = {"instance": instance, "pools": self.sources.pools}
        for name, param in spec.params.items():
            with self._at(("params", name), instance):
                params[name] = _draw(name, param, params, seed)
        with self._at(("instruction",), instance):
            instruction = render(spec.instruction, params)
        with self._at(("records",), instance):
            records = render(spec.records, params)
        with self._at(("targets",), instance):
            targets = [str(t) for t in render(spec.targets, params)]
        required: list[RequiredEffect] = []
        for i, req in enumerate(spec.required):
            with self._at(("required", i), instance):
                for rid, ctx in _expand(req.id, req.for_each, params):
                    names = render(req.tool if isinstance(req.tool, list) else [req.tool], ctx)
                    effect = RequiredEffect(id=rid, tools=tuple(known(t) for t in names),
                                            where=render(req.where, ctx), count=req.count)
                    _check_where(effect, catalog)
                    if any(e.id == rid for e in required):
                        raise TemplateError(f"required effect {rid!r} is declared twice; each "
                                            "names one effect the grader counts")
                    required.append(effect)
        focal_writes: list[FocalWrite] = []
        for i, focal in enumerate(spec.focal_writes):
            with self._at(("focal_writes", i), instance):
                expanded = _expand(focal.id, focal.for_each, params)[: focal.limit]
                for fid, ctx in expanded:
                    focal_writes.append(FocalWrite(id=fid,
                                                   tool=known(render(focal.tool, ctx), write=True),
                                                   where=render(focal.where, ctx), n=focal.n))
                    _check_focal_names_its_effect(focal_writes[-1], required)
        plan: list[PlanStep] = []
        results: dict[str, Any] = {}  # what the steps so far return, as stand-ins
        for i, step in enumerate(spec.plan):
            with self._at(("plan", i), instance):
                items = None
                if step.for_each is not None:
                    items = _reference(step.for_each, params)
                    if not isinstance(items, list):
                        raise TemplateError(f"for_each {step.for_each!r} is not a list")
                if "steps." not in step.tool:
                    known(str(render(step.tool, params)))
                plan.append(PlanStep(id=step.id, tool=step.tool, args=step.args, items=items))
            self._check_step(plan[-1], i, params, results, catalog, instance)
            results[step.id] = _StepResult(step.id) if items is None else [
                _StepResult(f"{step.id}.{n}") for n in range(len(items))]
        ids = [f.id for f in focal_writes]
        if len(ids) != len(set(ids)):
            raise self.doc.error(("focal_writes",), f"duplicate focal write ids: {ids}")
        for i, focal in enumerate(spec.focal_writes):
            with self._at(("focal_writes", i, "n"), instance):
                _check_reachable(focal.n, [f for f in focal_writes
                                           if f.id == focal.id or f.id.startswith(
                                               f"{focal.id}_")], plan, params)
        with self._at(("records",), instance):
            _check_seeds(catalog, spec.services, seed, records)
            _check_seed_ids(records)
        params.pop("pools")
        task = TaskInstance(
            template=spec.name, instance=instance, base_seed=seed, services=list(spec.services),
            params=params, instruction_text=str(instruction).strip(), seed_records=records,
            targets=targets, required=required, focal_writes=focal_writes, plan=plan,
            spec_file=str(self.file), spec_line=self.line,
        )
        return task

    def _at(self, path: tuple[str | int, ...], instance: int) -> _SpecContext:
        return _SpecContext(self.doc, path, instance)

    def _check_step(self, step: PlanStep, index: int, params: dict[str, Any],
                    results: dict[str, Any], catalog: Any, instance: int) -> None:
        """The scripted agents run the plan leniently (a result an earlier call did not return
        reads ``(unknown)``), so a plan mistake would only show as every baseline failing. Here
        each argument renders with stand-ins for the earlier steps' results — a reference to a
        step that does not come earlier, or to nothing, is an error — and what it renders to
        without them must pass the tool's schema (an amount above its maximum)."""
        runs = [{}] if step.items is None else [
            {"item": item, "index": n} for n, item in enumerate(step.items, 1)]
        for extra in runs:
            ctx = {**params, "steps": results, **extra}
            with self._at(("plan", index, "tool"), instance):
                tool = render(step.tool, ctx)
            args: dict[str, Any] = {}
            for name, template in step.args.items():
                with self._at(("plan", index, "args", name), instance):
                    for ref in STEP_REFERENCE.findall(repr(template)):
                        if ref not in results:
                            raise TemplateError(
                                f"{{steps.{ref}…}} names no earlier plan step (earlier: "
                                f"{', '.join(results) or 'none'})")
                    args[name] = render(template, ctx)
            if not isinstance(tool, str):
                continue  # a tool named by an earlier result: known only while running
            definition = catalog.get(tool)
            absent = [name for name in definition.input_schema.get("required", [])
                      if name not in step.args]
            if absent:  # not given at all: no earlier result can fill it
                raise self.doc.error(("plan", index, "args"),
                                     f"{tool} would refuse the call: it requires {absent[0]!r}, "
                                     f"which the step does not give (instance {instance})")
            concrete = {k: v for k, v in args.items() if "steps." not in repr(step.args[k])}
            accepts = _accepts_without_required(definition.input_schema)
            if accepts is not None and accepts(concrete):
                continue
            for error in definition.validator.iter_errors(concrete):
                if not error.absolute_path and error.validator == "required":
                    continue  # a required argument may come from an earlier result
                path: tuple[str | int, ...] = ("plan", index, "args")
                where = "/".join(str(p) for p in error.absolute_path)
                if error.absolute_path:
                    path += (str(error.absolute_path[0]),)
                message = error.message
                if len(message) > 200:  # it quotes the value, which may be long
                    message = f"{message[:80]}…{message[-80:]}"
                raise self.doc.error(path, f"{tool} would refuse "
                                     f"{where + ': ' if where else ''}{message} "
                                     f"(instance {instance})")


class _SpecContext:
    """Turns a template or seeding error into a SpecError pointing at the spec line."""

    def __init__(self, doc: LoadedYaml, path: tuple[str | int, ...], instance: int) -> None:
        self.doc, self.path, self.instance = doc, path, instance

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: Any, exc: BaseException | None, tb: Any) -> Literal[False]:
        if isinstance(exc, TemplateError | ValueError | KeyError | TypeError | IndexError) \
                and not isinstance(exc, SpecError):
            raise self.doc.error(self.path, f"{exc} (instance {self.instance})") from exc
        return False


STEP_REFERENCE = re.compile(r"\{\s*steps\.([^.|}\s]+)")
"""``{steps.<id>…}`` in a plan argument: the result of the earlier step ``<id>``."""
_PARTIAL_CHECKS: dict[int, tuple[dict[str, Any], Callable[[Any], bool] | None]] = {}


def _accepts_without_required(schema: dict[str, Any]) -> Callable[[Any], bool] | None:
    """The tool's compiled schema check, minus ``required`` (arguments from earlier results are
    left out), compiled once per schema: a plan step then costs microseconds to check."""
    cached = _PARTIAL_CHECKS.get(id(schema))
    if cached is None or cached[0] is not schema:
        from limbo_plugin.contracts import compile_fast_check

        cached = _PARTIAL_CHECKS[id(schema)] = (
            schema, compile_fast_check({k: v for k, v in schema.items() if k != "required"}))
    return cached[1]


class _StepResult(dict[str, Any]):
    """A stand-in for what a plan step returns, for checking the plan at load: every field
    exists (the tool's result is not known before it runs) and reads as another stand-in."""

    def __init__(self, label: str) -> None:
        super().__init__()
        self.label = label

    def __contains__(self, key: object) -> bool:
        return True

    def __missing__(self, key: str) -> _StepResult:
        return _StepResult(f"{self.label}.{key}")

    def __str__(self) -> str:
        return f"<{self.label}>"

    def __int__(self) -> int:  # through the money filters
        return 0

    def __float__(self) -> float:
        return 0.0


def _check_focal_names_its_effect(focal: FocalWrite, required: list[RequiredEffect]) -> None:
    """A focal write named like a required effect is that effect's write: its tool must be one
    the effect counts, or the fault hits a write the grader does not look at."""
    for effect in required:
        if effect.id == focal.id and focal.tool not in effect.tools:
            raise TemplateError(f"focal write {focal.id!r} has the name of the required effect "
                                f"{effect.id!r}, whose tool is {' or '.join(effect.tools)}, not "
                                f"{focal.tool}; name the tool the effect counts, or give the "
                                "focal write a name of its own")


def _check_reachable(n: int, focals: list[FocalWrite], plan: list[PlanStep],
                     params: dict[str, Any]) -> None:
    """A fault on the n-th call of a tool fires only if the task makes that many: past the
    calls its plan makes, an agent doing the task never meets it, and its episodes pass as if
    the fault had been survived."""
    if n == 1:
        return
    for focal in focals:
        calls = 0
        for step in plan:
            # a tool named by a template (an item's, an earlier result's) may be this one
            if "{" in step.tool or step.tool == focal.tool:
                calls += len(step.items) if step.items is not None else 1
        if n > calls:
            raise TemplateError(f"n: {n} faults call {n} of {focal.tool}, but the task's plan "
                                f"makes {calls}: an agent doing the task never meets the fault")


def _check_seed_ids(records: Any) -> None:
    """Two seed rows of one collection with one ``id``: the second would replace the first, or
    a read would find two records where the task says one."""
    if not isinstance(records, dict):
        return
    for service, collections in records.items():
        if not isinstance(collections, dict):
            continue
        for collection, rows in collections.items():
            seen: set[Any] = set()
            for row in rows if isinstance(rows, list) else []:
                key = row.get("id") if isinstance(row, dict) else None
                if key is not None and key in seen:
                    raise TemplateError(f"{service}.{collection} has two seed records with id "
                                        f"{key!r}")
                seen.add(key)


def _check_where_values(effect: RequiredEffect, definition: Any) -> None:
    """A ``where`` value is the argument's value, or ``{contains: text}`` for a part of a text:
    an object given for an argument that is no object (``{startswith: …}``), or an empty
    ``contains``, matches nothing, or everything."""
    properties = definition.input_schema.get("properties", {})
    for key, value in effect.where.items():
        if not isinstance(value, dict):
            continue
        if set(value) == {"contains"}:
            if not str(value["contains"]).strip():
                raise TemplateError(f"where {key}: contains '' matches every value; name the "
                                    "text the argument must contain")
            continue
        schema = properties.get(str(key).split(".")[0], {})
        if isinstance(schema, dict) and schema.get("type") not in (None, "object"):
            raise TemplateError(f"where {key}: {value!r} is an object, but {key} is a "
                                f"{schema.get('type')}; give its value, or {{contains: text}} "
                                "(the only operator)")


def _check_where(effect: RequiredEffect, catalog: Any) -> None:
    """A ``where`` key must name a parameter of every tool the effect names: the grader
    matches it against the effect's intent, so any other key would match nothing, ever."""
    for tool in effect.tools:
        _check_where_values(effect, catalog.get(tool))
        definition = catalog.get(tool)
        fields = [*definition.contract.intent_fields,
                  *definition.input_schema.get("properties", {})]
        batch = definition.contract.batch_field
        if batch:  # each row of a batch is its own effect, its intent naming the one row
            fields.append(batch.removesuffix("s"))
        for key in effect.where:
            if str(key).split(".")[0] not in fields:
                valid = ", ".join(dict.fromkeys(fields)) or "none"
                raise TemplateError(f"where key {key!r} is not a parameter of {tool} "
                                    f"(valid: {valid}); no effect would ever match it")


def _check_seeds(catalog: Any, services: list[str], seed: int, records: Any) -> None:
    """The seed records load into a world of the template's services, now, rather than fail
    every episode (an unknown collection, a row without ``id``, text instead of rows)."""
    from limbo_plugin.world.world import World

    if not isinstance(records, dict):
        raise TemplateError("records must map each service to its collections")
    try:
        World(catalog, services, base_seed=seed, seed_records=records)
    except Exception as exc:  # whatever a service's seeding trips over, said once at load
        text = " ".join(str(exc).split())[:300]
        raise TemplateError(f"the seed records do not load into the world: "
                            f"{type(exc).__name__}: {text}") from None


def _expand(base_id: str, for_each: str | None, params: dict[str, Any]
            ) -> list[tuple[str, dict[str, Any]]]:
    if for_each is None:
        return [(base_id, params)]
    items = _reference(for_each, params)
    if not isinstance(items, list):
        raise TemplateError(f"for_each {for_each!r} is not a list")
    expanded = []
    for i, item in enumerate(items, 1):
        ctx = {**params, "item": item, "index": i}
        name = render(base_id, ctx) if "{" in base_id else f"{base_id}_{i}"
        expanded.append((str(name), ctx))
    return expanded


def _draw(name: str, param: ParamSpec, params: dict[str, Any], seed: int) -> Any:
    rng = rng_for(seed, f"param:{name}")
    which = next(g for g in GENERATORS if g in param.model_fields_set)
    if which == "choice":
        options = _list(param.choice, params)
        return options[rng.randrange(len(options))]
    if which == "sample":
        options = _list(param.sample, params)
        k = param.k if isinstance(param.k, int) else rng.randint(*param.k)  # type: ignore[misc]
        if not 0 < k <= len(options):
            raise ValueError(f"cannot sample {k} of {len(options)} options")
        return rng.sample(options, k)
    if which == "int_range":
        low, high = param.int_range  # type: ignore[misc]
        return rng.randint(low, high)
    if which == "template":
        return render(param.template, params)
    if which == "value":
        return param.value
    if which == "id":
        return f"{param.id}_{stable_int(seed, 'id', name):016x}"[: len(param.id or "") + 13]
    if which == "map":
        return [render(param.to, {**params, "item": item, "index": i})
                for i, item in enumerate(_list(param.map, params), 1)]
    items = _list(param.join, params)
    return param.sep.join(str(render(param.item, {**params, "item": item, "index": i}))
                          for i, item in enumerate(items, 1))


def _list(source: Any, params: dict[str, Any]) -> list[Any]:
    value = _reference(source, params) if isinstance(source, str) else source
    if not isinstance(value, list) or not value:
        raise ValueError(f"expected a non-empty list, got {value!r}")
    return value


def _reference(source: str, params: dict[str, Any]) -> Any:
    """``"customers"`` and ``"{customers}"`` both name the parameter ``customers``."""
    return render(source if source.startswith("{") else "{" + source + "}", params)


def _path(data: Any, path: str) -> Any:
    for part in _parts(path):
        if isinstance(data, dict):
            data = data.get(part)
        else:
            return None
    return data


@lru_cache(maxsize=1024)
def _parts(path: str) -> tuple[str, ...]:
    """A ``where`` path split once (the grader matches every effect of every episode)."""
    return tuple(path.split("."))


def _matches(actual: Any, expected: Any) -> bool:
    if isinstance(expected, dict) and set(expected) == {"contains"}:
        return actual is not None and str(expected["contains"]).lower() in str(actual).lower()
    return bool(actual == expected)


def load_templates(directory: Path, files: dict[str, Path], registry: SpecRegistry
                   ) -> tuple[dict[str, TaskTemplate], dict[str, SpecError]]:
    """Load and validate every template of ``files`` (by name; the specs folder's ``tasks/``
    ``directory``, then the packages' layers; instances 0 and 1 are built to check references):
    the templates that load, and the error of each one that does not, by name."""
    templates: dict[str, TaskTemplate] = {}
    errors: dict[str, SpecError] = {}
    for name, file in files.items():
        try:
            templates[name] = load_template(file, registry)
        except SpecError as exc:
            errors[name] = exc
    if not files:
        raise SpecError(directory, "no task templates found")
    return templates, errors


def load_template(file: Path, registry: SpecRegistry) -> TaskTemplate:
    doc = load_yaml(file)
    spec = validate(doc, TemplateSpec)
    if spec.name != file.stem:
        raise doc.error(("name",), f"name {spec.name!r} must match the file name")
    unknown = [s for s in spec.services if s not in registry.services or s == "general"]
    if unknown:
        raise doc.error(("services",), f"unknown services: {', '.join(unknown)}; valid: "
                        + ", ".join(s for s in registry.services if s != "general"))
    template = TaskTemplate(spec=spec, file=file, doc=doc, sources=registry)
    for instance in (0, 1):
        template.instantiate(instance)
    return template
