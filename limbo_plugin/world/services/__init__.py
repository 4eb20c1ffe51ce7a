"""The simulated services. Each module holds one service's semantics; its tools live in YAML.

Each module declares the :class:`~.base.Service` subclasses it implements in a ``SERVICES``
tuple, and so may an extension module of another package (:mod:`limbo_plugin.extensions`): a
new service is its YAML and one module.
"""

from __future__ import annotations

from functools import cache
from typing import TypeGuard

from limbo_plugin.extensions import declared, own_modules, unique
from limbo_plugin.world.services.base import Service


@cache
def service_classes() -> dict[str, type[Service]]:
    """Every service implementation by its ``name``: this package's modules, then extensions."""
    found = declared("SERVICES", own_modules(__name__), accepts=_is_service,
                     what="a named Service subclass")
    return {name: d.value for name, d in unique(found, lambda c: c.name, "service").items()}


def _is_service(item: object) -> TypeGuard[type[Service]]:
    return isinstance(item, type) and issubclass(item, Service) and bool(item.name)


__all__ = ["service_classes"]
