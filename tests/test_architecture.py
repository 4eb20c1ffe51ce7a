"""The layering of ARCHITECTURE.md, enforced: imports point down the layers only, and the
optional heavy dependencies stay in the one module each that needs them."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "limbo_plugin"

LAYERS: list[tuple[str, tuple[str, ...]]] = [
    ("core", ("_version", "_rewriting", "_lazy", "errors", "usage", "extensions", "extras",
              "processes", "agent_processes",
              "toolapi", "templating", "stats", "scrubbing", "bridge", "atomic_files")),
    ("spec vocabulary", ("spec.loader", "spec.models", "spec.templates", "spec.layers",
                         "spec")),
    ("contracts", ("contracts", "readback")),
    ("world", ("world",)),
    ("record", ("records",)),
    ("record store", ("store",)),
    ("transport", ("faults",)),
    ("specs", ("spec.registry", "tasks")),
    ("grading", ("grading",)),
    ("conditions", ("conditions",)),
    ("server", ("server",)),
    ("agents", ("agents",)),
    ("run configuration", ("runconfig",)),
    ("episodes", ("episode", "experiments", "sandbox", "sharding", "sampling", "planning")),
    ("reports", ("report",)),
    ("entry points", ("plugin", "cli", "testing", "realmcp", "reproduction", "discovery",
                      "extend")),
    ("public API", ("",)),
]
"""Bottom up, as in ARCHITECTURE.md; a module belongs to the layer of its longest prefix. Every
package and top-level module is named: one nobody placed has no layer (the test below fails),
never a default one. ``""`` is the package root (``limbo_plugin/__init__.py``) alone."""

ONLY_IN = {"pytest": {"plugin"}, "_pytest": {"plugin.protocol"}, "litellm": {"agents.provider"},
           "allure": {"report.allure"}}
"""Third-party packages only the named modules may import. pytest's internals only where the
episode's run protocol does what pytest's phase hooks do (``tests/plugin/test_protocol.py``
holds it to pytest's own protocol, report for report)."""


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def layer_of(module: str) -> int:
    best, best_length = -1, -1
    for index, (_, prefixes) in enumerate(LAYERS):
        for prefix in prefixes:
            matches = module == prefix or (prefix != "" and module.startswith(prefix + "."))
            if matches and len(prefix) > best_length:
                best, best_length = index, len(prefix)
    return best


def imports(path: Path) -> set[str]:
    """Every module ``path`` imports, at any level (``TYPE_CHECKING`` and functions too)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
            found |= {f"{node.module}.{alias.name}" for alias in node.names}
    return found


def sources() -> list[Path]:
    return sorted(PACKAGE.rglob("*.py"))


def test_every_module_has_a_layer() -> None:
    unplaced = [module_name(p) for p in sources() if layer_of(module_name(p)) < 0]
    assert not unplaced


def test_imports_point_down_the_layers() -> None:
    upward = []
    for path in sources():
        module = module_name(path)
        for target in imports(path):
            if not target.startswith("limbo_plugin."):
                continue
            name = target.removeprefix("limbo_plugin.")
            if not (PACKAGE / name.replace(".", "/")).exists() and not (
                    PACKAGE / (name.replace(".", "/") + ".py")).exists():
                continue  # ``from package import name`` of a non-module name
            if layer_of(name) > layer_of(module):
                upward.append(f"{module} ({LAYERS[layer_of(module)][0]}) imports {name} "
                              f"({LAYERS[layer_of(name)][0]})")
    assert not upward, "\n".join(upward)


def test_no_module_imports_the_package_root() -> None:
    """The root (``limbo_plugin/__init__.py``) is the public API, at the top of the layers: a
    module inside the package that imports it (``from limbo_plugin import __version__``) reaches
    up past every layer, whatever the name it takes. The version has its own leaf module."""
    offenders = []
    for path in sources():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                bare = any(alias.name == "limbo_plugin" for alias in node.names)
            elif isinstance(node, ast.ImportFrom):
                bare = node.level == 0 and node.module == "limbo_plugin"
            else:
                continue
            if bare:
                offenders.append(f"{module_name(path) or '__init__'}:{node.lineno}")
    assert not offenders, f"imports of the bare package: {', '.join(offenders)}"


def test_limbos_commands_are_registered_in_cli_alone() -> None:
    """``limbo``'s subcommands are added to its parser in ``cli/`` and nowhere else, and no
    module outside ``cli/`` imports it: the command depends on what it runs, never the other
    way round."""
    outside = [p for p in sources() if not module_name(p).startswith("cli")]
    registering = [module_name(p) for p in outside
                   if any(isinstance(node, ast.Attribute)
                          and node.attr in ("add_parser", "add_subparsers")
                          for node in ast.walk(ast.parse(p.read_text(encoding="utf-8"))))]
    importing = [module_name(p) for p in outside
                 if any(t == "limbo_plugin.cli" or t.startswith("limbo_plugin.cli.")
                        for t in imports(p))]
    assert (registering, importing) == ([], [])


@pytest.mark.parametrize("package", sorted(ONLY_IN))
def test_heavy_and_host_dependencies_stay_where_they_belong(package: str) -> None:
    users = {module_name(p) for p in sources()
             if any(t == package or t.startswith(package + ".") for t in imports(p))}
    allowed = ONLY_IN[package]
    assert {u for u in users if not any(u == a or u.startswith(a + ".") for a in allowed)} == set()


def test_spec_and_world_never_reach_up() -> None:
    """The core of the guarantee in one line: the world and the spec vocabulary import neither
    the plugin, agents, conditions nor pytest."""
    for path in sources():
        module = module_name(path)
        if module.startswith(("world", "spec.loader", "spec.models")):
            bad = {t for t in imports(path) if t.startswith((
                "limbo_plugin.plugin", "limbo_plugin.agents", "limbo_plugin.conditions",
                "pytest", "limbo_plugin.episode"))}
            assert not bad, (module, bad)


def test_importing_the_plugin_stays_cheap() -> None:
    """The plugin is imported by every pytest run that has Limbo installed; it loads its specs,
    agents and conditions only when a session needs them."""
    script = ("import sys, limbo_plugin.plugin\n"
              "heavy = [m for m in ('litellm', 'jsonschema', 'limbo_plugin.agents', "
              "'limbo_plugin.conditions', 'limbo_plugin.spec.registry') if m in sys.modules]\n"
              "print(','.join(heavy))\n")
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         check=True).stdout.strip()
    assert out == ""


def test_the_record_layer_is_the_only_module_called_records() -> None:
    """``records`` is the record layer (``EpisodeRecord``); the report's record *files* live in
    ``store/files.py``, so an import of "records" never means two things."""
    assert [module_name(p) for p in sources() if p.stem == "records"] == ["records"]


@pytest.mark.parametrize("package", ["cli", "experiments", "testing"])
def test_split_packages_keep_their_modules_small(package: str) -> None:
    """These were single modules of 450–550 lines; split by job, each part reads in one go."""
    sizes = {p.name: len(p.read_text(encoding="utf-8").splitlines())
             for p in (PACKAGE / package).glob("*.py")}
    assert sizes and max(sizes.values()) <= 400, sizes


def test_the_default_records_path_is_spelled_once() -> None:
    """``records.DEFAULT_RECORDS`` is the one place; messages and help texts read it."""
    spelled = []
    for path in sources():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        docstrings = {id(node.body[0].value) for node in ast.walk(tree)
                      if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef))
                      and node.body and isinstance(node.body[0], ast.Expr)}
        spelled += [module_name(path) for node in ast.walk(tree)
                    if isinstance(node, ast.Constant) and isinstance(node.value, str)
                    and "reports/episodes.jsonl" in node.value and id(node) not in docstrings]
    assert spelled == ["records"]
