"""One generator per table of the paper (and the report's extra analyses), in report order.

Each takes the merged episodes and the repeat runs and returns a
:class:`~limbo_plugin.report.tables.base.Table` or a
:class:`~limbo_plugin.report.tables.base.Skipped` with the reason. :data:`TABLES` declares
Limbo's own; an extension module's ``TABLES`` (:mod:`limbo_plugin.extensions`) adds more after
them.

The names are defined in :mod:`~limbo_plugin.report.tables.catalog` and imported on first use:
importing one table module, or the table types alone (a figure worker unpickling tables), then
costs that module, not every generator with its dependencies.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from limbo_plugin._lazy import lazy_exports

_CATALOG = "limbo_plugin.report.tables.catalog"
_BASE = "limbo_plugin.report.tables.base"
_EXPORTS = {"FITS": _CATALOG, "SPEC_TABLES": "limbo_plugin.report.tables.spec_tables",
            "TABLES": _CATALOG, "all_tables": _CATALOG, "build_tables": _CATALOG,
            "Result": _BASE, "Skipped": _BASE, "Table": _BASE}
__all__ = ["FITS", "SPEC_TABLES", "TABLES", "Result", "Skipped", "Table", "all_tables",
           "build_tables"]

if TYPE_CHECKING:
    from limbo_plugin.report.tables.base import Result, Skipped, Table
    from limbo_plugin.report.tables.catalog import (
        FITS,
        TABLES,
        all_tables,
        build_tables,
    )
    from limbo_plugin.report.tables.spec_tables import SPEC_TABLES

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())
