"""Optional features and the pip extras that install them.

``pip install limbo-bench`` installs what a scripted run needs (pytest, xdist, PyYAML, pydantic,
the JSON-schema checks, allure-pytest). Model-backed agents, the MCP and harness path and the
offline report come as extras, so an offline scripted run neither downloads nor imports
litellm (seconds to import) or the scientific stack. Whatever needs an extra asks
:func:`require` first, before the first episode: a missing one is a one-line
:class:`~limbo_plugin.errors.UsageError` naming the command that installs it.
"""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass

from limbo_plugin.errors import UsageError

DISTRIBUTION = "limbo-bench"


@dataclass(frozen=True)
class Extra:
    name: str
    modules: tuple[str, ...]
    """Top-level modules the extra provides (checked without importing them)."""
    gives: str


EXTRAS: dict[str, Extra] = {extra.name: extra for extra in (
    Extra("llm", ("litellm",), "model-backed agents (litellm:<model>)"),
    Extra("mcp", ("mcp", "tomli_w"), "the MCP server and agents (mcp:<policy>, harness:…, "
          "limbo mcp)"),
    Extra("report", ("scipy", "statsmodels", "matplotlib", "jinja2"),
          "limbo report's tables, model fits, figures and HTML"),
)}


def install_command(extra: str) -> str:
    return f"pip install '{DISTRIBUTION}[{extra}]'"


def installed(module: str) -> bool:
    """Whether ``module`` can be imported, without importing it."""
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):  # ValueError: sys.modules[module] is None (blocked)
        return False


def missing(extra: str) -> list[str]:
    return [m for m in EXTRAS[extra].modules if not installed(m)]


def require(extra: str, what: str) -> None:
    """Raise a one-line :class:`UsageError` when ``extra`` is not installed: ``what`` (e.g.
    ``--agent litellm:…``) needs it, and this is the command that installs it."""
    absent = missing(extra)
    if absent:
        raise UsageError(f"{what} needs the {extra} extra (missing: {', '.join(absent)}): "
                         f"{install_command(extra)}")
