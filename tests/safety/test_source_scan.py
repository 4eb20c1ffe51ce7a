"""No code path of the package can run what a user supplies: a source scan of ``limbo_plugin/``.

Specs, records, cassettes and model output are user data. Reading them must never construct
arbitrary objects or run code, so the package has no ``yaml.load``/``yaml.unsafe_load`` or a
loader other than the safe one, no ``eval``/``exec``/``compile``, no ``shell=True`` and no
``pickle``/``marshal``/``shelve``. The scan walks the syntax tree (not text), so comments and
docstrings that name these do not count, and an aliased import does not hide one.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "limbo_plugin"
SOURCES = sorted(PACKAGE.rglob("*.py"))
UNSAFE_MODULES = {"pickle", "cPickle", "marshal", "shelve", "dill", "cloudpickle"}
UNSAFE_BUILTINS = {"eval", "exec", "compile", "__import__"}
UNSAFE_YAML = {"load", "load_all", "unsafe_load", "unsafe_load_all", "full_load",
               "full_load_all", "Loader", "UnsafeLoader", "FullLoader"}


SAFE_LOADERS = {"SafeLoader", "CSafeLoader"}


def safe_loader_names(tree: ast.AST) -> set[str]:
    """Names bound to an expression that mentions only the safe loaders
    (``COMPOSER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)``)."""
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign | ast.AnnAssign) and node.value is not None:
            mentioned = {n.attr for n in ast.walk(node.value) if isinstance(n, ast.Attribute)}
            mentioned |= {n.value for n in ast.walk(node.value)
                          if isinstance(n, ast.Constant) and isinstance(n.value, str)
                          and n.value.endswith("Loader")}
            if mentioned & SAFE_LOADERS and not mentioned & UNSAFE_YAML:
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                names |= {t.id for t in targets if isinstance(t, ast.Name)}
    for node in ast.walk(tree):  # a subclass of safe loaders only (a resolver of its own)
        if (isinstance(node, ast.ClassDef) and node.bases
                and all(is_safe_loader(base, names) for base in node.bases)
                and not any(isinstance(item, ast.FunctionDef) for item in node.body)):
            names.add(node.name)
    return names


def is_safe_loader(value: ast.expr, safe_names: set[str]) -> bool:
    if isinstance(value, ast.Attribute):
        return value.attr in SAFE_LOADERS
    return isinstance(value, ast.Name) and value.id in safe_names


def findings(tree: ast.AST) -> list[str]:
    found: list[str] = []
    safe_names = safe_loader_names(tree)
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [f"import {a.name}" for a in node.names
                      if a.name.split(".")[0] in UNSAFE_MODULES]
        elif isinstance(node, ast.ImportFrom) and node.module:
            if node.module.split(".")[0] in UNSAFE_MODULES:
                found.append(f"from {node.module} import …")
            if node.module == "yaml":
                found += [f"from yaml import {a.name}" for a in node.names
                          if a.name in UNSAFE_YAML]
        elif isinstance(node, ast.Call):
            func = node.func
            if isinstance(func, ast.Name) and func.id in UNSAFE_BUILTINS:
                found.append(f"{func.id}(…)")
            if (isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name)
                    and func.value.id == "yaml" and func.attr in UNSAFE_YAML):
                found.append(f"yaml.{func.attr}(…)")
            for keyword in node.keywords:
                if keyword.arg == "shell" and not (isinstance(keyword.value, ast.Constant)
                                                   and keyword.value.value is False):
                    found.append("shell=…")
                if keyword.arg == "Loader" and not is_safe_loader(keyword.value, safe_names):
                    found.append("Loader= other than SafeLoader")
    return found


def test_the_scan_sees_the_whole_package() -> None:
    assert len(SOURCES) > 50 and PACKAGE / "spec" / "loader.py" in SOURCES


@pytest.mark.parametrize("source", SOURCES, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_no_unsafe_loading_or_execution(source: Path) -> None:
    assert findings(ast.parse(source.read_text(encoding="utf-8"))) == []


@pytest.mark.parametrize("snippet, finding", [
    ("import yaml\nyaml.load(text)", "yaml.load(…)"),
    ("import yaml\nyaml.load(text, Loader=yaml.Loader)", "yaml.load(…)"),
    ("from yaml import unsafe_load", "from yaml import unsafe_load"),
    ("yaml.parse(text, Loader=yaml.UnsafeLoader)", "Loader= other than SafeLoader"),
    ("L = yaml.FullLoader\nyaml.compose(text, Loader=L)", "Loader= other than SafeLoader"),
    ("class L(yaml.FullLoader):\n    x = 1\nyaml.compose(text, Loader=L)",
     "Loader= other than SafeLoader"),
    ("class L(yaml.SafeLoader):\n    def construct(self): pass\nyaml.compose(text, Loader=L)",
     "Loader= other than SafeLoader"),
    ("eval(expr)", "eval(…)"),
    ("exec(code)", "exec(…)"),
    ("subprocess.run(cmd, shell=True)", "shell=…"),
    ("subprocess.run(cmd, shell=flag)", "shell=…"),
    ("import pickle as p", "import pickle"),
    ("from marshal import loads", "from marshal import …"),
])
def test_the_scan_finds_each_unsafe_form(snippet: str, finding: str) -> None:
    assert finding in findings(ast.parse(snippet))


def test_the_scan_passes_safe_forms() -> None:
    safe = ("yaml.parse(text, Loader=yaml.SafeLoader)\nyaml.safe_load(text)\n"
            "C = getattr(yaml, 'CSafeLoader', yaml.SafeLoader)\nyaml.compose(t, Loader=C)\n"
            "subprocess.run(argv, shell=False)\nmodel.eval()\n# eval(x) in a comment\n")
    assert findings(ast.parse(safe)) == []
