"""What a pytest run collects and whether Limbo takes part in it at all.

Limbo is installed as a pytest plugin, so it is loaded in every project of the environment. It
stays out of a run (no reports/ folder, no file, no output) unless the run collects Limbo
episodes or is given a Limbo option. Where no test path is named on the command line, the
specs decide what is collected:

1. ``--limbo-specs DIR`` (command line or ini): DIR's experiments, and only those;
2. else the project's own ``<rootdir>/specs``, through pytest's usual collection;
3. else, when a Limbo option is given (``pytest --experiment default`` in any directory), the
   specs installed with Limbo (:func:`~limbo_plugin.spec.registry.packaged_specs_dir`).

Test paths named on the command line are always collected as given. Run without test paths
from a directory below a Limbo project's rootdir, pytest collects that directory (an ini's
``testpaths`` apply only where the rootdir is the directory pytest runs in), so no episode is
collected: :func:`subdirectory_hint` names the rootdir to run from instead.
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Iterable
from pathlib import Path
from typing import Any

# ``config`` below is pytest's Config; pytest itself is imported by the plugin module only.


def given_limbo_options(config: Any, options: Iterable[tuple[str, str]]) -> list[str]:
    """The Limbo options this run was given, as flags: ``options`` are (dest, flag) pairs of
    the plugin's valued options; an ini setting ``limbo_…`` counts as given."""
    given: list[str] = []
    for dest, flag in options:
        ini = f"limbo_{dest}" if not dest.startswith("limbo_") else dest
        if config.getoption(f"limbo_opt_{dest}", default=None) is not None or _ini(config, ini):
            given.append(flag)
    if config.getoption("limbo_model_options", default=None):
        given.append("--model-option")
    if config.getoption("limbo_resume", default=False):
        given.append("--limbo-resume")
    return given


def _ini(config: Any, name: str) -> bool:
    try:
        return bool(config.getini(name))
    except (ValueError, TypeError):  # given, with a value of the wrong type: said when read
        return True


def is_specs_dir(path: Path) -> bool:
    return (path / "services").is_dir()


def paths_named(config: Any) -> bool:
    """Whether test paths were named on the command line (pytest then collects exactly them)."""
    return bool(config.args_source is config.ArgsSource.ARGS)


def redirects_collection(config: Any, *, specs_option: bool, limbo_options: bool) -> bool:
    """Whether the rules in the module docstring point pytest's collection at the specs
    directory (the plugin then sets ``config.args``, what the session collects, to it)."""
    if paths_named(config):
        return False
    own = Path(str(config.rootpath)) / "specs"
    return specs_option or (limbo_options and not is_specs_dir(own))


def subdirectory_run(config: Any) -> Path | None:
    """The rootdir of the Limbo project this run started below, when it was started without test
    paths in one of the rootdir's subdirectories (and so collects that directory only); else
    ``None``. A Limbo project is a rootdir whose ``specs/`` holds experiments."""
    if paths_named(config):
        return None
    root = Path(str(config.rootpath))
    here = Path(config.invocation_params.dir)
    if here == root or root not in here.parents:
        return None
    experiments = root / "specs" / "experiments"
    if not is_specs_dir(root / "specs") or not any(experiments.glob("*.y*ml")):
        return None
    return root


def subdirectory_hint(config: Any, root: Path) -> str:
    """One line for a run from a subdirectory of ``root`` that collected no episode: the rootdir
    it would need, the same command run there, and the same command from here."""
    here = Path(config.invocation_params.dir)
    args = shlex.join(str(a) for a in config.invocation_params.args)
    command = f"pytest {args}".rstrip()
    here_command = f"pytest {shlex.quote(os.path.relpath(root / 'specs', here))} {args}".rstrip()
    return (f"limbo: no Limbo episode was collected: pytest collects the directory it runs in "
            f"({here}), and this Limbo project's rootdir is {root}; run "
            f"`cd {shlex.quote(str(root))} && {command}`, or name its specs from here: "
            f"`{here_command}`")


def names_experiments(config: Any) -> bool:
    """Whether a named test path is an experiment file or lies in an ``experiments`` folder."""
    if not paths_named(config):
        return False
    for arg in config.args:
        path = Path(arg.split("::")[0])
        if path.suffix in (".yaml", ".yml") or "experiments" in path.parts:
            return True
    return False


def nothing_collected_hint(specs_dir: Path, experiment: str, options: list[str],
                           redirected: bool) -> str:
    """One line for a run that was given Limbo options but collected no episode: why, and what
    to run instead."""
    given = ", ".join(options)
    experiments = specs_dir / "experiments"
    known = sorted(p.stem for p in experiments.glob("*.y*ml")) if experiments.is_dir() else []
    if known and experiment not in known:
        why = f"there is no experiment {experiment!r} in {experiments}"
        what = f"pick one of {', '.join(known)} (--experiment NAME)"
    elif redirected:
        why = f"-k/-m selected none of experiment {experiment!r} in {specs_dir}"
        what = (f"loosen them; `pytest --experiment {experiment} --collect-only -q` lists its "
                "episodes")
    else:
        why = f"the test paths of this run hold no Limbo experiment (the specs: {specs_dir})"
        what = (f"run `pytest --experiment {experiment}` without test paths, name an "
                "experiment file, or pass --limbo-specs=DIR (`limbo init` copies the default "
                "specs into this project)")
    return f"limbo: {given} given but no Limbo episode was collected: {why}; {what}"
