"""Names a package exports without importing their modules until first use.

The package root and :mod:`limbo_plugin.stats` export many names from many modules. Importing
all of them eagerly would load the report and the regression models in every pytest run, for a
summary that needs a few functions. A leaf module: it imports nothing of Limbo.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from importlib import import_module
from typing import Any


def lazy_exports(package: str, exports: Mapping[str, str], namespace: dict[str, Any]
                 ) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The module-level ``__getattr__`` and ``__dir__`` of ``package`` for ``exports`` (name →
    the module defining it): a name is imported with its own module on first use and then kept
    in ``namespace`` (the package's ``globals()``), so later lookups are plain attributes."""

    def __getattr__(name: str) -> Any:
        module = exports.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(import_module(module), name)
        namespace[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted(namespace.get("__all__", exports))

    return __getattr__, __dir__
