"""Keeping pytest's assertion rewriting away from Limbo's modules (see
:func:`skip_pytest_assertion_rewriting`). A leaf module: the package root and the plugin's entry
point call it before they import anything else of Limbo."""

from __future__ import annotations

import sys

PACKAGE = "limbo_plugin"


def skip_pytest_assertion_rewriting() -> None:
    """Take Limbo's package out of pytest's assertion rewriting before its modules are imported.

    pytest rewrites every module of a distribution that declares a ``pytest11`` entry point (an
    installed wheel, or an editable install run from its source tree, whose ``.egg-info`` lists
    the sources). A rewritten module is parsed and compiled by pytest itself, and cached only
    where pytest may write byte code: with ``PYTHONDONTWRITEBYTECODE`` or a read-only
    ``site-packages``, every run and every xdist worker compiled all of Limbo again (0.8 G
    instructions per start-up, ``benchmarks/README.md``). Limbo's asserts are internal checks
    that need no rewritten messages. pytest offers no public way to take a package back out, so
    this reads the import hook's set of marked names; a pytest without it leaves things as they
    were.
    """
    for finder in sys.meta_path:
        marked = getattr(finder, "_must_rewrite", None)
        if isinstance(marked, set) and PACKAGE in marked:
            marked.discard(PACKAGE)
            decided = getattr(finder, "_marked_for_rewrite_cache", None)
            if isinstance(decided, dict):
                for name in [name for name in decided if name.startswith(PACKAGE + ".")]:
                    del decided[name]
