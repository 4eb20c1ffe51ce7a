"""The registry of every spec under a ``specs/`` directory.

It is loaded by the entry points (the pytest plugin, once per session, and the ``limbo`` command)
and passed explicitly to everything below them; nothing looks it up from the environment on its
own, so two spec trees can live side by side in one process (the plugin tests rely on it).

Each spec file becomes a pydantic model at the boundary; cross-file references (a read-back tool, a
task's focal write tool, an experiment's template) are checked here too, and every problem is a
:class:`~limbo_plugin.errors.SpecError` naming the file, line and path.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from limbo_plugin.contracts import GENERAL_SERVICE, GENERAL_TOOLS, ToolCatalog
from limbo_plugin.errors import SpecError, UsageError
from limbo_plugin.faults import executors
from limbo_plugin.spec.layers import SpecLayer, spec_layers
from limbo_plugin.spec.loader import LoadedYaml, load_yaml, validate
from limbo_plugin.spec.models import (
    Compensation,
    ContractVariant,
    DocumentationSpec,
    DocumentationVariant,
    FaultCatalogSpec,
    FaultFamilySpec,
    FaultLayerSpec,
    FaultModeSpec,
    PoolsSpec,
    ReadBack,
    ServiceSpec,
    ToolSpecModel,
)
from limbo_plugin.spec.schemas import schema_problem
from limbo_plugin.templating import placeholder_roots
from limbo_plugin.world.fates import fates
from limbo_plugin.world.services import service_classes

if TYPE_CHECKING:
    from limbo_plugin.tasks import TaskTemplate

SPECS_ENV = "LIMBO_SPECS"
T = TypeVar("T")


def packaged_specs_dir() -> Path:
    """The default specs that come with Limbo: inside the installed package
    (``limbo_plugin/_specs``, copied there when the wheel is built), or, running from a checkout
    or an editable install, the checkout's own ``specs/``."""
    package = Path(__file__).resolve().parents[1]
    shipped = package / "_specs"
    if (shipped / "services").is_dir():
        return shipped
    return package.parent / "specs"


def default_specs_dir() -> Path:
    """``$LIMBO_SPECS``, else ``./specs`` if present, else the specs shipped with the package.

    For entry points only (plugin, command line, benchmarks): it depends on the environment.
    """
    env = os.environ.get(SPECS_ENV)
    if env:
        return Path(env).resolve()
    local = Path.cwd() / "specs"
    if (local / "services").is_dir():
        return local.resolve()
    return packaged_specs_dir()


FINISH_TOOL = "finish"
"""The tool every episode ends with (declared in ``services/general.yaml``)."""
FAULT_FREE = "none"
"""The fault-free mode and its family: what every comparison takes as its baseline."""


@dataclass
class SpecRegistry:
    """Services, contract and documentation variants, fault modes and task templates."""

    root: Path
    services: dict[str, ServiceSpec] = field(default_factory=dict)
    contracts: dict[str, ContractVariant] = field(default_factory=dict)
    docs: dict[str, DocumentationVariant] = field(default_factory=dict)
    faults: dict[str, FaultModeSpec] = field(default_factory=dict)
    families: dict[str, FaultFamilySpec] = field(default_factory=dict)
    fault_classes: dict[str, str] = field(default_factory=dict)
    tool_files: dict[str, Path] = field(default_factory=dict)
    pools: dict[str, list[Any]] = field(default_factory=dict)
    layers: tuple[SpecLayer, ...] = ()
    """The folders of spec YAML installed packages ship, read after :attr:`root`
    (:mod:`limbo_plugin.spec.layers`)."""
    template_files: dict[str, Path] = field(default_factory=dict)
    """Every task template's file, by template name: the root's ``tasks/``, then the layers'."""
    _templates: dict[str, TaskTemplate] | None = None
    _template_errors: dict[str, SpecError] = field(default_factory=dict)
    _catalogs: dict[tuple[str, str], ToolCatalog] = field(default_factory=dict)

    @classmethod
    def load(cls, root: str | Path) -> SpecRegistry:
        root = Path(root)
        if not (root / "services").is_dir():
            raise SpecError(root, "not a Limbo specs directory (it has no services/ folder)")
        registry = cls(root=root, layers=spec_layers())
        registry._load_services()
        registry._load_variants()
        registry._load_faults()
        registry._load_pools()
        registry._find_templates()
        return registry

    def _files(self, folder: str) -> list[Path]:
        """The YAML files in ``folder`` of the root, then of each layer, each in name order."""
        return [file for root in (self.root, *(layer.root for layer in self.layers))
                for file in sorted((root / folder).glob("*.yaml"))]

    # -- loading -------------------------------------------------------------------------------
    def _load_services(self) -> None:
        seen: dict[str, tuple[Path, int | None]] = {}
        docs: dict[str, LoadedYaml] = {}
        for file in self._files("services"):
            doc = load_yaml(file)
            spec = validate(doc, ServiceSpec)
            if spec.service in self.services:
                raise doc.error(("service",), f"service {spec.service!r} is declared twice "
                                f"(also in {docs[spec.service].file})")
            for i, tool in enumerate(spec.tools):
                for name, schema in tool.parameters.items():
                    problem = schema_problem(schema)
                    if problem is not None:
                        raise doc.error(("tools", i, "parameters", name, *problem.path),
                                        problem.message)
                if tool.name in seen:
                    other, line = seen[tool.name]
                    raise doc.error(("tools", i, "name"),
                                    f"tool {tool.name!r} is already declared in {other}:{line}")
                seen[tool.name] = (file, doc.line_of(("tools", i, "name")))
                self.tool_files[tool.name] = file
            self.services[spec.service] = spec
            docs[spec.service] = doc
        if not self.services:
            raise SpecError(self.root / "services", "no service specs found")
        for name, spec in self.services.items():
            _check_implemented(spec, docs[name])
        # Cross-references: read-backs and compensations must name declared tools.
        for name, spec in self.services.items():
            for i, tool in enumerate(spec.tools):
                refs = []
                if tool.contract.read_back:
                    refs.append((("tools", i, "contract", "read_back", "tool"),
                                 tool.contract.read_back.tool))
                if tool.contract.compensation:
                    refs.append((("tools", i, "contract", "compensation", "tool"),
                                 tool.contract.compensation.tool))
                for path, ref in refs:
                    if ref not in seen:
                        raise docs[name].error(path, f"unknown tool {ref!r}")
        tools = {t.name: t for s in self.services.values() for t in s.tools}
        for name, spec in self.services.items():
            for i, tool in enumerate(spec.tools):
                contract: tuple[str | int, ...] = ("tools", i, "contract")
                if tool.contract.is_write and not tool.contract.intent_fields:
                    raise docs[name].error(contract, f"write {tool.name!r} names "
                                           "no intent_fields: every call of it would count as "
                                           "the same intent; list the parameters that make one "
                                           "call a different request from another")
                if tool.contract.read_back is not None:
                    _check_read_back(tool.contract.read_back, tools, docs[name],
                                     (*contract, "read_back"), tool)
                if tool.contract.compensation is not None:
                    _check_compensation(tool.contract.compensation, tools, docs[name],
                                        (*contract, "compensation"), tool)
        if FINISH_TOOL not in tools:
            raise SpecError(self.root / "services", f"no service declares the {FINISH_TOOL!r} "
                            "tool an agent ends its episode with (Limbo's services/general.yaml "
                            "does): without it no episode can finish")
        lags = {t.name: t.contract.visibility_lag_s
                for s in self.services.values() for t in s.tools}
        for name, spec in self.services.items():
            for i, tool in enumerate(spec.tools):
                back = tool.contract.read_back
                if back and lags[back.tool] != tool.contract.visibility_lag_s:
                    raise docs[name].error(
                        ("tools", i, "contract", "visibility_lag_s"),
                        f"declares a lag of {tool.contract.visibility_lag_s} s but its read-back "
                        f"{back.tool!r} lags {lags[back.tool]} s",
                    )

    def _load_variants(self) -> None:
        for file in sorted((self.root / "contracts").glob("*.yaml")):
            doc = load_yaml(file)
            if file.stem == "documentation":
                for i, variant in enumerate(validate(doc, DocumentationSpec).variants):
                    if variant.name in self.docs:  # a later one would silently replace it
                        raise doc.error(("variants", i, "name"),
                                        f"documentation variant {variant.name!r} is declared "
                                        "twice")
                    self.docs[variant.name] = variant
                continue
            contract = validate(doc, ContractVariant)
            problem = schema_problem(contract.key_schema)
            if problem is not None:
                raise doc.error(("key_schema", *problem.path), problem.message)
            if contract.name != file.stem:
                raise doc.error(("name",), f"name {contract.name!r} must match the file name")
            if contract.keys_on_non_idempotent_writes:
                self._check_key_param(contract, doc)
            self.contracts[contract.name] = contract
        for needed, table in (("native", self.contracts), ("default", self.docs)):
            if needed not in table:
                raise SpecError(self.root / "contracts", f"variant {needed!r} is missing")

    def _check_key_param(self, contract: ContractVariant, doc: LoadedYaml) -> None:
        """The key a variant adds must be a new parameter of every write it is added to: an
        existing one would be silently replaced, and an empty name is no parameter at all."""
        if not contract.key_param.isidentifier():
            raise doc.error(("key_param",), f"key_param {contract.key_param!r} is not a "
                            "parameter name (letters, digits and _)")
        for service in self.services.values():
            for tool in service.tools:
                if (tool.contract.idempotency == "non_idempotent"
                        and contract.key_param in tool.parameters):
                    raise doc.error(("key_param",), f"key_param {contract.key_param!r} is "
                                    f"already a parameter of {tool.name!r}: the key would "
                                    "replace it; name a new parameter")

    def _load_faults(self) -> None:
        file = self.root / "faults" / "modes.yaml"
        doc = load_yaml(file)
        catalog = validate(doc, FaultCatalogSpec)
        fates()  # the executors' fates, checked before the first episode as the executors are
        self.fault_classes = {str(name): text for name, text in catalog.classes.items()}
        parts = [(doc, catalog.families, catalog.modes)]
        for layer in self.layers:
            shipped = layer.root / "faults" / "modes.yaml"
            if shipped.is_file():
                extra = load_yaml(shipped)
                more = validate(extra, FaultLayerSpec)
                parts.append((extra, more.families, more.modes))
        where: dict[str, Path] = {}
        for part, families, modes in parts:
            self._add_faults(part, families, modes, where)
        free = self.faults.get(FAULT_FREE)
        if FAULT_FREE not in self.families or free is None or free.family != FAULT_FREE:
            raise doc.error(("modes",), f"the fault-free mode {FAULT_FREE!r} of family "
                            f"{FAULT_FREE!r} is missing: every experiment's baseline, the "
                            "reports' fault-free row and the gate's eos threshold are that "
                            "mode; keep both names as they are")

    def _add_faults(self, doc: LoadedYaml, families: list[FaultFamilySpec],
                    modes: list[FaultModeSpec], where: dict[str, Path]) -> None:
        """The families and modes of one file (``where``: the file each name came from)."""
        for i, family in enumerate(families):
            if family.name in self.families or family.name in self.fault_classes:
                also = f" (also in {where[family.name]})" if family.name in where else ""
                raise doc.error(("families", i, "name"),
                                f"family {family.name!r} is declared twice (or names a "
                                f"class){also}")
            self.families[family.name] = family
            where[family.name] = doc.file
        for i, mode in enumerate(modes):
            if mode.name in self.faults:
                raise doc.error(("modes", i, "name"), f"mode {mode.name!r} is declared twice "
                                f"(also in {where['mode ' + mode.name]})")
            if mode.family not in self.families:
                raise doc.error(("modes", i, "family"),
                                f"unknown family {mode.family!r}; declared under families: "
                                + ", ".join(self.families))
            shortest = (mode.late_delay_s if mode.late_delay == "fixed" else
                        mode.late_delay_range_s[0] if mode.late_delay_range_s else None)
            if mode.execute == "late" and shortest is not None and shortest <= mode.cost_s:
                raise doc.error(("modes", i, "late_delay_s" if mode.late_delay == "fixed"
                                 else "late_delay_range_s"),
                                f"a late commit after {shortest:g} s lands before the "
                                f"{mode.cost_s:g} s the failure takes to report (cost_s): it "
                                "would not be in flight when the agent learns of the failure; "
                                f"make it longer than {mode.cost_s:g} s")
            if mode.execute not in executors():
                raise doc.error(("modes", i, "execute"),
                                f"unknown execute kind {mode.execute!r}; valid: "
                                + ", ".join(executors()))
            if (mode.family == FAULT_FREE) != (mode.hidden_outcome == "none"):
                raise doc.error(("modes", i, "family"), f"family {FAULT_FREE!r} holds the "
                                "fault-free mode alone (hidden_outcome none), and that mode no "
                                "other family: a faulted episode counted as fault-free, or the "
                                "other way round, would move every rate")
            self.faults[mode.name] = mode
            where["mode " + mode.name] = doc.file

    def _load_pools(self) -> None:
        file = self.root / "pools.yaml"
        if not file.exists():
            return
        doc = load_yaml(file)
        self.pools = validate(doc, PoolsSpec).root
        for name, values in self.pools.items():
            problem = _pool_problem(name, values)
            if problem is not None:
                index, message = problem
                raise doc.error((name,) if index is None else (name, index), message)

    def _find_templates(self) -> None:
        """Every template's file; one name in two files (a package's and the root's, or two
        packages') is an error naming both, before any template loads."""
        for file in self._files("tasks"):
            other = self.template_files.get(file.stem)
            if other is not None:
                raise SpecError(file, f"task template {file.stem!r} is declared twice (also in "
                                f"{other})")
            self.template_files[file.stem] = file

    # -- access --------------------------------------------------------------------------------
    def catalog(self, contract: str = "native", docs: str = "default") -> ToolCatalog:
        """The tool catalog for a contract and documentation variant (cached)."""
        key = (contract, docs)
        if key not in self._catalogs:
            self._catalogs[key] = ToolCatalog(
                services={k: v for k, v in self.services.items()},
                contract_variant=self.contract_variant(contract),
                docs_variant=self.docs_variant(docs),
            )
        return self._catalogs[key]

    def contract_variant(self, name: str) -> ContractVariant:
        return _pick("contract", name, self.contracts)

    def docs_variant(self, name: str) -> DocumentationVariant:
        return _pick("documentation variant", name, self.docs)

    def fault_mode(self, name: str) -> FaultModeSpec:
        return _pick("fault mode", name, self.faults)

    def fault_class(self, family: str) -> str | None:
        """``resolvable`` / ``unresolvable`` (SPEC §3 classes), or ``None`` for the others."""
        spec = self.families.get(family)
        if spec is None or spec.fault_class == "none":
            return None
        return spec.fault_class

    @property
    def family_order(self) -> tuple[str, ...]:
        """The families in the order the fault spec lists them (the order of report rows)."""
        return tuple(self.families)

    def fault_markers(self) -> dict[str, str]:
        """Every pytest marker a fault episode can carry (families and classes), described."""
        return {**{name: f.description for name, f in self.families.items()},
                **self.fault_classes}

    @property
    def templates(self) -> dict[str, TaskTemplate]:
        """The task templates that loaded; see :attr:`template_errors` for the others."""
        return self._loaded_templates()[0]

    @property
    def template_errors(self) -> dict[str, SpecError]:
        """Templates that did not load, by file name (stem): one broken template costs only
        its own episodes, so the rest of a run goes on and reports this error once."""
        return self._loaded_templates()[1]

    def _loaded_templates(self) -> tuple[dict[str, TaskTemplate], dict[str, SpecError]]:
        if self._templates is None:
            from limbo_plugin.tasks import load_templates

            self._templates, self._template_errors = load_templates(
                self.root / "tasks", self.template_files, self)
        return self._templates, self._template_errors

    def template(self, name: str) -> TaskTemplate:
        broken = self.template_errors.get(name)
        if broken is not None:
            raise broken
        return _pick("task template", name, self.templates)


def _check_implemented(spec: ServiceSpec, doc: LoadedYaml) -> None:
    """Every service in YAML has a class and every tool a handler (general tools: the world's)."""
    if spec.service == GENERAL_SERVICE:
        for i, tool in enumerate(spec.tools):
            if tool.name not in GENERAL_TOOLS:
                raise doc.error(("tools", i, "name"),
                                f"general tool {tool.name!r} has no implementation; the world "
                                f"implements {', '.join(GENERAL_TOOLS)}")
        return
    implemented = service_classes()
    implementation = implemented.get(spec.service)
    if implementation is None:
        raise doc.error(("service",),
                        f"service {spec.service!r} has no implementation: define a subclass of "
                        f"limbo_plugin.world.services.base.Service with name = "
                        f"{spec.service!r} and declare it in a SERVICES tuple "
                        f"(implemented: {', '.join(sorted(implemented))})")
    for i, tool in enumerate(spec.tools):
        if tool.name not in implementation.handlers:
            raise doc.error(("tools", i, "name"),
                            f"{implementation.__qualname__} has no handler for tool "
                            f"{tool.name!r}: mark a method with @handles({tool.name!r})")


def _pick(kind: str, name: str, table: dict[str, T]) -> T:
    try:
        return table[name]
    except KeyError:
        valid = ", ".join(sorted(table)) or "(none)"
        raise UsageError(f"unknown {kind} {name!r}; valid: {valid}") from None


def _pool_problem(name: str, values: list[Any]) -> tuple[int | None, str] | None:
    """What makes a pool draw other than it looks: nothing to draw, a value twice (drawn twice
    as often), a missing value, rows of different shapes (a template reading ``{row.email}``
    fails on some instances only) or two rows with one ``id``."""
    import json

    if not name.isidentifier() or not name.islower():
        return None, (f"pool name {name!r} is not lower-case letters, digits and _ (a template "
                      f"names it as {{pools.{name}}})")
    if not values:
        return None, f"pool {name!r} is empty: a parameter drawing from it has nothing to draw"
    seen: dict[str, int] = {}
    keys = set(values[0]) if isinstance(values[0], dict) else None
    ids: dict[Any, int] = {}
    for i, value in enumerate(values):
        if value is None:
            return i, f"pool {name!r} holds an empty value (null)"
        text = json.dumps(value, sort_keys=True, default=str)
        if text in seen:
            return i, f"pool {name!r} lists {value!r} twice (also at [{seen[text]}])"
        seen[text] = i
        if keys is not None:
            if not isinstance(value, dict) or set(value) != keys:
                return i, (f"pool {name!r}: every row has the fields of the first ("
                           + ", ".join(sorted(keys)) + ")")
            if "id" in value:
                if value["id"] in ids:
                    return i, (f"pool {name!r}: id {value['id']!r} is also the id of "
                               f"[{ids[value['id']]}]")
                ids[value["id"]] = i
    return None


def _check_roots(value: Any, known: set[str], doc: LoadedYaml, path: tuple[str | int, ...],
                 writer: ToolSpecModel, hint: str = "") -> None:
    """Every ``{placeholder}`` in ``value`` names something the write's call has: else it
    renders nothing and the query reads back the wrong records, or none."""
    unknown = sorted(placeholder_roots(value) - known)
    if unknown:
        raise doc.error(path, f"{{{unknown[0]}}} is not an argument of {writer.name!r}; valid: "
                        + ", ".join(sorted(known)) + (hint if unknown[0] == "item" else ""))


def _check_compensation(compensation: Compensation, tools: dict[str, ToolSpecModel],
                        doc: LoadedYaml, path: tuple[str | int, ...],
                        writer: ToolSpecModel) -> None:
    """The write that undoes an effect is a write, filled from the effect's arguments and its
    record's id."""
    if tools[compensation.tool].contract.read_only_hint:
        raise doc.error((*path, "tool"), f"compensation tool {compensation.tool!r} is a read: "
                        "it cannot undo a write")
    _check_roots(compensation.args, set(writer.parameters) | {"record_id"}, doc,
                 (*path, "args"), writer)


def _check_read_back(back: ReadBack, tools: dict[str, ToolSpecModel], doc: LoadedYaml,
                     path: tuple[str | int, ...], writer: ToolSpecModel) -> None:
    """A read-back must be a read, called with arguments it declares, filled from the write's
    own arguments, and say where in its answer the records are: otherwise verification reads
    nothing, or writes."""
    if back.per_item is not None and back.per_item not in writer.parameters:
        raise doc.error((*path, "per_item"), f"per_item {back.per_item!r} is not a parameter "
                        f"of {writer.name!r}; its parameters: {', '.join(writer.parameters)}")
    known = set(writer.parameters) | ({"item"} if back.per_item else set())
    for part in ("args", "match"):
        _check_roots(getattr(back, part), known, doc, (*path, part), writer,
                     "" if back.per_item else " ({item} needs per_item)")
    reader = tools[back.tool]
    if not reader.contract.read_only_hint:
        raise doc.error((*path, "tool"), f"read-back tool {back.tool!r} is a write (its "
                        "contract is not read_only): verifying with it would change the world")
    unknown = sorted(set(back.args) - set(reader.parameters))
    if unknown:
        raise doc.error((*path, "args", unknown[0]),
                        f"{back.tool!r} takes no argument {unknown[0]!r}; its parameters: "
                        + (", ".join(reader.parameters) or "none"))
    if back.items is None and back.match:
        raise doc.error(path, f"a read-back that matches fields needs items: the key of the "
                        f"list in {back.tool!r}'s answer")

