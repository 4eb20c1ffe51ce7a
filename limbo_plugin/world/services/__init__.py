"""The simulated services. Each module holds one service's semantics; its tools live in YAML.

Every module of this package is imported here, so that each :class:`~.base.Service` subclass
registers itself in :data:`SERVICE_CLASSES`: a new service is its YAML and one module.
"""

import importlib
import pkgutil

from limbo_plugin.world.services.base import SERVICE_CLASSES

for _module in sorted(m.name for m in pkgutil.iter_modules(__path__)):
    importlib.import_module(f"{__name__}.{_module}")

__all__ = ["SERVICE_CLASSES"]
