"""Every condition (SPEC §6.2), found in the modules that declare them.

Each module of this package, and each extension module of another package
(:mod:`limbo_plugin.extensions`), may declare a ``CONDITIONS`` tuple of
:class:`~limbo_plugin.conditions.base.Condition` and
:class:`~limbo_plugin.conditions.base.ConditionPattern`; they are collected on first use, so a
new condition is one module and no edit here. :func:`find_condition` is the one lookup of a
condition by name: the run configuration validates with it and the episode builds with it.
"""

from __future__ import annotations

from functools import cache
from typing import TypeGuard

from limbo_plugin.conditions.base import Condition, ConditionPattern
from limbo_plugin.errors import UsageError
from limbo_plugin.extensions import declared, own_modules, unique

Declaration = Condition | ConditionPattern

__all__ = ["all_conditions", "condition_forms", "find_condition"]


@cache
def all_conditions() -> tuple[Declaration, ...]:
    """Every declared condition: prompt-only ones first, then middleware, then the ones that
    read ground truth, then name patterns; within each, in module order (Limbo's own modules,
    then extension modules)."""
    found = declared("CONDITIONS", own_modules("limbo_plugin.conditions"),
                     accepts=_is_declaration, what="a Condition or ConditionPattern")
    unique(found, _label, "condition")
    return tuple(sorted((d.value for d in found), key=_rank))


def _is_declaration(item: object) -> TypeGuard[Declaration]:
    return isinstance(item, Condition | ConditionPattern)


def condition_forms() -> list[str]:
    """Every condition name, and the form of each pattern (``wait_<seconds>``)."""
    return [_label(d) for d in all_conditions()]


def find_condition(name: str) -> Condition:
    """The condition ``name`` stands for; :class:`UsageError` listing the valid ones if none."""
    for declaration in all_conditions():
        if isinstance(declaration, Condition):
            if declaration.name == name:
                return declaration
        elif isinstance(name, str):
            resolved = declaration.resolve(name)
            if resolved is not None:
                return resolved
    raise UsageError(f"unknown condition {name!r}; valid: {', '.join(condition_forms())}")


def _label(declaration: Declaration) -> str:
    return declaration.name if isinstance(declaration, Condition) else declaration.form


def _rank(declaration: Declaration) -> int:
    if isinstance(declaration, ConditionPattern):
        return 3
    if declaration.reads_ground_truth:
        return 2
    return 0 if declaration.wraps is None else 1
