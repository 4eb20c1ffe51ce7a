"""Spec YAML a package ships, layered over the specs folder: what it may hold, and no name of
the folder's (or another package's) replaced silently. The package's ``SPECS`` is read from an
extension module built here; ``tests/plugin/test_extensions.py`` runs installed ones."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType

import pytest

from limbo_plugin import extensions
from limbo_plugin.errors import SpecError, UsageError
from limbo_plugin.spec.registry import SpecRegistry
from limbo_plugin.store.fingerprint import changes, run_fingerprint

SPECS = Path(__file__).resolve().parents[2] / "specs"


@pytest.fixture
def ship(monkeypatch: pytest.MonkeyPatch) -> Callable[..., None]:
    """Makes an extension module declaring ``SPECS`` the one installed extension."""
    module = ModuleType("limbo_specs_ext")
    monkeypatch.setattr(extensions, "extension_modules", lambda: (module,))

    def ship(*folders: Path | str) -> None:
        module.__dict__["SPECS"] = folders

    return ship


@pytest.fixture
def layer(tmp_path: Path) -> Iterator[Path]:
    (tmp_path / "faults").mkdir()
    yield tmp_path


def test_a_layer_adds_a_family_and_a_mode_after_limbos(ship: Callable[..., None],
                                                        layer: Path) -> None:
    (layer / "faults" / "modes.yaml").write_text(
        "families:\n  - {name: stuck, class: unresolvable, description: stuck}\n"
        "modes:\n  - {name: stuck_post, group: T, family: stuck, hidden_outcome: absent,\n"
        "     execute: never}\n")
    ship(layer)
    registry = SpecRegistry.load(SPECS)
    assert registry.family_order[-1] == "stuck" and registry.fault_mode("stuck_post")
    assert registry.layers[0].root == layer.resolve()


def test_a_mode_named_as_limbos_is_an_error_naming_both_files(ship: Callable[..., None],
                                                               layer: Path) -> None:
    (layer / "faults" / "modes.yaml").write_text(
        "modes:\n  - {name: timeout_pre, group: T, family: not_executed,\n"
        "     hidden_outcome: absent, execute: never}\n")
    ship(layer)
    with pytest.raises(SpecError) as error:
        SpecRegistry.load(SPECS)
    assert str(error.value) == (f"{layer / 'faults' / 'modes.yaml'}:2: at modes[0].name mode "
                                "'timeout_pre' is declared twice (also in "
                                f"{SPECS / 'faults' / 'modes.yaml'})")


@pytest.mark.parametrize(("make", "message"), [
    (lambda root: root / "missing", "limbo_specs_ext.SPECS names {root}/missing, which is not a "
     "folder"),
    (lambda root: (root / "experiments").mkdir() or root,
     "limbo_specs_ext.SPECS: {root} holds experiments, which Limbo does not read from a "
     "package; valid: services/*.yaml, tasks/*.yaml, faults/modes.yaml"),
    (lambda root: (root / "faults" / "gates.yaml").write_text("") or root,
     "limbo_specs_ext.SPECS: {root} holds faults/gates.yaml, which Limbo does not read from a "
     "package; valid: services/*.yaml, tasks/*.yaml, faults/modes.yaml"),
])
def test_a_layer_limbo_would_not_read_is_one_line(ship: Callable[..., None], layer: Path,
                                                  make: Callable[[Path], Path],
                                                  message: str) -> None:
    ship(make(layer))
    with pytest.raises(UsageError) as error:
        SpecRegistry.load(SPECS)
    assert str(error.value) == message.format(root=layer.resolve())


def test_a_resume_sees_a_change_in_a_packages_spec_yaml(ship: Callable[..., None],
                                                        layer: Path) -> None:
    """The records file's fingerprint holds the package's YAML too: an edit between two runs
    makes other worlds under the same ids, which a resume must refuse."""
    (layer / "faults" / "modes.yaml").write_text("modes: []\n")
    ship(layer)
    before = run_fingerprint(SPECS, {})
    (layer / "faults" / "modes.yaml").write_text("families: []\nmodes: []\n")
    assert changes(before, run_fingerprint(SPECS, {})) == [
        "specs/limbo_specs_ext/faults/modes.yaml changed"]
