"""Builds the wheel with the default specs inside it.

The top-level ``specs/`` stays the one copy in the repository (the design's source of truth);
building a wheel copies it to ``limbo_plugin/_specs/``, where an installed Limbo finds it
(:func:`limbo_plugin.spec.registry.packaged_specs_dir`). An editable install reads ``specs/``
in the checkout directly. Everything else about the build is in ``pyproject.toml``.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

SPECS = Path(__file__).resolve().parent / "specs"


class BuildPyWithSpecs(build_py):
    """``build_py`` plus a copy of ``specs/`` (YAML only) into the built package."""

    def run(self) -> None:
        super().run()
        if getattr(self, "editable_mode", False):
            return  # the editable install reads the checkout's specs/ itself
        target = Path(self.build_lib) / "limbo_plugin" / "_specs"
        shutil.rmtree(target, ignore_errors=True)
        shutil.copytree(SPECS, target, ignore=lambda _dir, names: [
            n for n in names if not (n.endswith((".yaml", ".yml")) or (Path(_dir) / n).is_dir())])


setup(cmdclass={"build_py": BuildPyWithSpecs})
