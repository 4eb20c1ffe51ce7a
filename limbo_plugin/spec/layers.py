"""Spec YAML shipped by installed packages, layered over the specs folder Limbo loads.

An extension module (:mod:`limbo_plugin.extensions`) declares the folders of spec YAML its
package ships in a ``SPECS`` tuple::

    SPECS = (Path(__file__).parent / "specs",)

Each folder is laid out as Limbo's ``specs/`` and may hold ``services/*.yaml``,
``tasks/*.yaml`` and ``faults/modes.yaml`` (families and modes, no classes); the registry reads
them after the specs folder it was given, in entry-point order, so a package adds services,
fault modes and task templates without a copy of Limbo's specs. A name it adds that the
specs folder (or another package) already declares is a one-line spec error naming both files:
a package never replaces a spec silently, and a run that means to change one uses a specs
folder of its own (``--limbo-specs``). ``LIMBO_NO_EXTENSIONS=1`` leaves every layer out.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TypeGuard

from limbo_plugin.errors import UsageError
from limbo_plugin.extensions import declared

READ = ("services", "tasks", "faults")
"""What a layer may hold (``faults`` with ``modes.yaml`` alone); anything else is refused."""


@dataclass(frozen=True)
class SpecLayer:
    """A folder of spec YAML and the extension module that ships it."""

    root: Path
    module: str


def spec_layers() -> tuple[SpecLayer, ...]:
    """Every folder of spec YAML the installed extension modules declare, checked: an existing
    folder, holding nothing Limbo would not read."""
    found = declared("SPECS", [], accepts=_is_path, what="a folder of spec YAML (a Path)")
    layers = tuple(SpecLayer(Path(item.value).resolve(), item.module) for item in found)
    for layer in layers:
        _check(layer)
    return layers


def _is_path(item: object) -> TypeGuard[Path | str]:
    return isinstance(item, Path | str)


def _check(layer: SpecLayer) -> None:
    where = f"{layer.module}.SPECS"
    if not layer.root.is_dir():
        raise UsageError(f"{where} names {layer.root}, which is not a folder")
    extra = sorted(p.name for p in layer.root.iterdir()
                   if p.name not in READ and not p.name.startswith((".", "_")))
    faults = layer.root / "faults"
    if faults.is_dir():
        extra += [f"faults/{p.name}" for p in sorted(faults.iterdir())
                  if p.name != "modes.yaml" and not p.name.startswith((".", "_"))]
    if extra:
        raise UsageError(f"{where}: {layer.root} holds {', '.join(extra)}, which Limbo does not "
                         "read from a package; valid: services/*.yaml, tasks/*.yaml, "
                         "faults/modes.yaml")
