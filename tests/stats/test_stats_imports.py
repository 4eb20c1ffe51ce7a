"""Importing the statistics, and the per-run interval and TOST calls, stay free of heavy libraries.

The plugin imports its reporters on every pytest run; scipy alone costs about two seconds, so
neither the import nor the terminal summary's Wilson intervals may pull it (or statsmodels) in.
Checked in a fresh interpreter, since this test process has long imported them.
"""

from __future__ import annotations

import json
import subprocess
import sys

HEAVY = ("scipy", "statsmodels", "pandas", "patsy")


def _loaded_after(code: str) -> list[str]:
    probe = (
        f"{code}\nimport json, sys\nprint(json.dumps([m for m in {HEAVY!r} if m in sys.modules]))"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe], check=True, capture_output=True, text=True
    ).stdout
    loaded: list[str] = json.loads(out.strip().splitlines()[-1])
    return loaded


def test_import_loads_neither_scipy_nor_statsmodels() -> None:
    assert _loaded_after("import limbo_plugin.stats") == []


def test_intervals_paired_tost_and_the_gates_mcnemar_need_no_scipy() -> None:
    code = (
        "from limbo_plugin.stats import holm, mcnemar_exact, rate_with_interval, "
        "tost_paired_difference, wilson_interval\n"
        "holm([mcnemar_exact(3, 9), mcnemar_exact(12000, 11000)])\n"
        "wilson_interval(3, 10)\n"
        "rate_with_interval({'a': [1, 0, 0], 'b': [0, 1]})\n"
        "tost_paired_difference([1, 0, 1, 1], [1, 0, 0, 1])\n"
    )
    assert _loaded_after(code) == []


def test_the_probe_detects_a_heavy_import() -> None:
    # Guards the two tests above against a probe that could never see anything.
    assert "scipy" in _loaded_after("import scipy.stats")


def _stats_modules_after(code: str) -> list[str]:
    probe = (f"{code}\nimport json, sys\n"
             "print(json.dumps(sorted(m for m in sys.modules\n"
             "                        if m.startswith('limbo_plugin.stats'))))")
    out = subprocess.run([sys.executable, "-c", probe], check=True, capture_output=True,
                         text=True).stdout
    loaded: list[str] = json.loads(out.strip().splitlines()[-1])
    return loaded


def test_a_name_imports_its_own_module_only() -> None:
    # The end-of-run summary needs the intervals; the regression models stay unimported.
    loaded = _stats_modules_after("from limbo_plugin.stats import rate_with_interval")
    assert "limbo_plugin.stats.intervals" in loaded
    others = ("gee", "mixed", "shapley", "agreement", "paired", "independent")
    assert [name for name in others if f"limbo_plugin.stats.{name}" in loaded] == []
    assert "limbo_plugin.stats.gee" in _stats_modules_after(
        "from limbo_plugin.stats import gee_logit")


def test_every_exported_name_is_its_modules_own() -> None:
    import importlib

    import limbo_plugin.stats as stats

    for name in stats.__all__:
        home = importlib.import_module(stats._EXPORTS[name])
        assert getattr(stats, name) is getattr(home, name), name
    assert set(stats._EXPORTS) == set(stats.__all__)


def test_the_model_fits_load_statsmodels_modules_not_its_api() -> None:
    # statsmodels.api also loads time series, graphics and datasets: a third of statsmodels'
    # import time in every `limbo report`, for no fit of the report.
    code = (
        "import limbo_plugin.stats as s\n"
        "rows = [{'y': int(i % 3 == 0 or (i % 5 == 0 and i % 2 == 0)), 'f': 'ab'[i % 2],\n"
        "         't': f't{i % 4}'} for i in range(40)]\n"
        "s.shapley_pseudo_r2(rows, 'y', ['f', 't'])\n"
        "s.gee_logit(rows, 'y ~ f', cluster='t')\n"
        "import sys\n"
        "assert 'statsmodels.genmod.generalized_linear_model' in sys.modules\n"
        "assert 'statsmodels.genmod.generalized_estimating_equations' in sys.modules\n"
        "print(json.dumps([m for m in ('statsmodels.api', 'statsmodels.tsa',\n"
        "                              'statsmodels.datasets') if m in sys.modules]))"
    )
    out = subprocess.run([sys.executable, "-c", "import json\n" + code], check=True,
                         capture_output=True, text=True).stdout
    assert json.loads(out.strip().splitlines()[-1]) == []
