"""Where Limbo finds what can be added to it: conditions, services, executors, request fates,
agent kinds and report tables, from its own modules and from other installed packages, in one
way.

A module declares what it adds in module-level tuples named after the kind::

    CONDITIONS = (Condition("paging_note", ...), ConditionPattern("slow_<n>", ...))
    SERVICES = (PagerService,)                        # Service subclasses
    EXECUTORS = (Executor("twice", execute_twice),)   # one per `execute:` kind of a fault mode
    FATES = (Fate("queued", pending=True),)           # a request fate an executor sets
    AGENT_KINDS = (AgentKind("lazy", "lazy:<reason>", check, build),)
    TABLES = (table_per_family,)                      # (episodes, repeat runs) -> Table | Skipped
    SPECS = (Path(__file__).parent / "specs",)        # spec YAML layered over Limbo's specs

Limbo reads them from its own modules (every module of ``limbo_plugin/conditions/`` and
``limbo_plugin/world/services/``, ``faults``, ``world/fates``, ``agents/registry`` and
``report/tables``), then
from every module named in the ``limbo`` entry-point group of an installed distribution::

    # the pyproject.toml of a user's package
    [project.entry-points.limbo]
    pager = "limbo_pager.extension"

so a user's package adds any of them without editing Limbo; ``limbo list extensions`` shows
what was found. An extension module imports what it declares from :mod:`limbo_plugin.extend`,
the public surface. ``LIMBO_NO_EXTENSIONS=1`` in the environment leaves every installed
extension out (Limbo's own declarations only): what Limbo's own test suite runs under, so a
broken package installed beside Limbo cannot fail it, and how to tell whether a problem is an
extension's. Entry points are read in name order, after Limbo's own declarations (their
report tables come after the paper's). A name declared twice, an entry point that does not
load or names no module, or a tuple holding the wrong kind of thing is a one-line
:class:`~limbo_plugin.errors.UsageError` naming the module, before the first episode runs.
"""

from __future__ import annotations

import importlib
import os
import pkgutil
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import cache
from importlib.metadata import EntryPoint, entry_points
from types import ModuleType
from typing import Generic, TypeGuard, TypeVar

from limbo_plugin.errors import UsageError

GROUP = "limbo"
"""The entry-point group a distribution lists its extension modules in."""
DISABLE = "LIMBO_NO_EXTENSIONS"
"""The environment variable that, set to anything but empty or ``0``, turns extensions off."""


def extensions_disabled() -> bool:
    return os.environ.get(DISABLE, "") not in ("", "0")

KINDS = ("CONDITIONS", "SERVICES", "EXECUTORS", "FATES", "AGENT_KINDS", "TABLES", "SPECS")
"""The module-level names a declaring module may define, one per kind of extension."""

T = TypeVar("T")


@dataclass(frozen=True)
class Declared(Generic[T]):
    """One declared thing and the module that declared it (named in errors and listings)."""

    value: T
    module: str


def own_modules(package: str) -> list[str]:
    """Every module of Limbo's ``package``, in name order: a new built-in condition or service
    is one module in its folder."""
    path = importlib.import_module(package).__path__
    return [f"{package}.{m.name}" for m in sorted(pkgutil.iter_modules(path),
                                                    key=lambda m: m.name)]


def declared(kind: str, own: Iterable[str], *, accepts: Callable[[object], TypeGuard[T]],
             what: str) -> list[Declared[T]]:
    """Everything declared under ``kind`` in Limbo's modules ``own`` (in order), then in every
    extension module; ``accepts`` checks each item (a :class:`UsageError` naming the module
    and ``what`` it should be when one is not)."""
    if kind not in KINDS:
        raise ValueError(f"unknown kind of extension {kind!r}; valid: {', '.join(KINDS)}")
    modules = [importlib.import_module(name) for name in own] + list(extension_modules())
    found: list[Declared[T]] = []
    for module in modules:
        items = getattr(module, kind, ())
        if not isinstance(items, tuple | list):
            raise UsageError(f"{module.__name__}.{kind} must be a tuple of {what}, "
                             f"not {type(items).__name__}")
        for item in items:
            if not accepts(item):
                raise UsageError(f"{module.__name__}.{kind} holds {item!r}, which is not "
                                 f"{what}")
            found.append(Declared(item, module.__name__))
    return found


def unique(found: Iterable[Declared[T]], name: Callable[[T], str], kind: str
           ) -> dict[str, Declared[T]]:
    """``found`` by name; a :class:`UsageError` naming both modules when a name is taken."""
    by_name: dict[str, Declared[T]] = {}
    for item in found:
        key = name(item.value)
        other = by_name.get(key)
        if other is not None:
            raise UsageError(f"{kind} {key!r} is declared twice: in {other.module} and in "
                             f"{item.module}")
        by_name[key] = item
    return by_name


@cache
def extension_modules() -> tuple[ModuleType, ...]:
    """The modules named in the ``limbo`` entry-point group, loaded once, in name order (none
    when :data:`DISABLE` is set)."""
    modules: list[ModuleType] = []
    if extensions_disabled():
        return ()
    for point in sorted(entry_points(group=GROUP), key=lambda p: (p.name, p.value)):
        modules.append(_load(point))
    return tuple(modules)


def extension_sources() -> list[tuple[str, str, str]]:
    """(entry point name, module, distribution) of every extension module, for listings."""
    points = sorted(entry_points(group=GROUP), key=lambda p: (p.name, p.value))
    return [(p.name, p.value, _distribution(p)) for p in points]


def _load(point: EntryPoint) -> ModuleType:
    where = f"entry point {point.name} = {point.value!r} of {_distribution(point)} " \
            f"(group {GROUP!r})"
    try:
        loaded = point.load()
    except Exception as exc:  # any failure of a user's module is theirs to fix: say where
        raise UsageError(f"{where} does not load: {type(exc).__name__}: {exc}") from None
    if not isinstance(loaded, ModuleType):
        raise UsageError(f"{where} must name a module declaring any of {', '.join(KINDS)}, "
                         f"not {type(loaded).__name__}")
    return loaded


def _distribution(point: EntryPoint) -> str:
    dist = point.dist
    return f"{dist.name} {dist.version}" if dist is not None else "an unnamed distribution"
