"""A harness's own per-model metadata, read from the harness itself (``model_catalog:``).

Some CLIs describe each model they know in a catalog that carries the model's system prompt:
Codex's ``base_instructions`` (``codex debug models`` prints it), about 18–26 thousand characters
of the harness's own instructions. The paper asks what a *harness* contributes, and its prompt
is part of it, so an adapter never writes its own prompt over it: for a model the harness knows,
the entry Limbo gives it is the harness's own, with only the adapter's ``overrides`` applied
(which tools the model may be offered); a ``fallback`` entry serves only models the harness does
not know (a local model name such as ``scripted``).

The catalog is read once per process per CLI and model, as the episode would run it (a
throwaway home, the shared cache), and never from the user's own configuration.
"""

from __future__ import annotations

import copy
import json
import os
import subprocess
import tempfile
from typing import Any

from limbo_plugin.agents.base import InfrastructureError
from limbo_plugin.agents.harness_install import harness_environment, shared_cache
from limbo_plugin.agents.harness_spec import PLACEHOLDERS, HarnessSpec, render, render_command
from limbo_plugin.server.wire import SERVER_NAME

CATALOG_TIMEOUT_S = 300.0
_CATALOGS: dict[tuple[str, str], list[dict[str, Any]]] = {}


def model_entry(spec: HarnessSpec, executable: str, model: str) -> dict[str, Any] | None:
    """The catalog entry for ``model``: the harness's own with the adapter's overrides, or the
    adapter's fallback if the harness does not know the model; ``None`` without a
    ``model_catalog``."""
    catalog = spec.model_catalog
    if catalog is None:
        return None
    for entry in harness_catalog(spec, executable):
        if entry.get(catalog.key) == model:
            return {**copy.deepcopy(entry), **copy.deepcopy(catalog.overrides)}
    rendered: dict[str, Any] | None = render(copy.deepcopy(catalog.fallback), {"model": model})
    return rendered


def is_known(spec: HarnessSpec, executable: str, model: str) -> bool:
    """Whether the harness ships its own catalog entry for ``model``."""
    catalog = spec.model_catalog
    return catalog is not None and any(
        entry.get(catalog.key) == model for entry in harness_catalog(spec, executable))


def harness_catalog(spec: HarnessSpec, executable: str) -> list[dict[str, Any]]:
    """Every entry of the harness's own catalog (once per process per CLI)."""
    key = (spec.name, executable)
    if key not in _CATALOGS:
        _CATALOGS[key] = _read_catalog(spec, executable)
    return _CATALOGS[key]


def _read_catalog(spec: HarnessSpec, executable: str) -> list[dict[str, Any]]:
    catalog = spec.model_catalog
    assert catalog is not None
    with tempfile.TemporaryDirectory(prefix=f"limbo-{spec.name}-catalog-") as home:
        values: dict[str, Any] = {name: "" for name in PLACEHOLDERS}
        values.update(executable=executable, home=home, workdir=home,
                      cache=str(shared_cache(spec)), server=SERVER_NAME)
        argv = render_command(catalog.command, values)
        env = {**harness_environment(spec, values), "NO_COLOR": "1"}
        for value in env.values():  # a config directory the adapter points under the home
            if value.startswith(home + os.sep):
                os.makedirs(value, exist_ok=True)
        try:
            result = subprocess.run(argv, cwd=home, env=env, stdin=subprocess.DEVNULL,
                                    capture_output=True, text=True, timeout=CATALOG_TIMEOUT_S)
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise InfrastructureError(f"{spec.name}: cannot read its model catalog with "
                                      f"{' '.join(argv)}: {exc}") from None
    try:
        data: Any = json.loads(result.stdout)
    except ValueError:
        raise InfrastructureError(
            f"{spec.name}: `{' '.join(argv)}` printed no JSON model catalog (exit "
            f"{result.returncode}): {(result.stderr or result.stdout).strip()[:300]}") from None
    for part in catalog.entries.split(".") if catalog.entries else []:
        data = data.get(part) if isinstance(data, dict) else None
    if not isinstance(data, list):
        raise InfrastructureError(f"{spec.name}: its model catalog has no list at "
                                  f"{catalog.entries!r}")
    return [entry for entry in data if isinstance(entry, dict)]
