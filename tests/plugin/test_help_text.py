"""``pytest --help`` shows each Limbo option with a value a user understands (``PATH``,
``K/N``), never argparse's internal destination (``LIMBO_OPT_AGENT``)."""

from __future__ import annotations

import re

import pytest

from limbo_plugin.plugin.options import VALUED


def test_every_limbo_option_has_a_readable_value(pytester: pytest.Pytester) -> None:
    pytester.makeini("[pytest]\naddopts = -p no:cacheprovider\n")
    text = pytester.runpytest_subprocess("--help").stdout.str()
    assert "LIMBO_OPT" not in text
    for opt in VALUED:
        (shown,) = re.findall(rf"^  {re.escape(opt.flag)}=(\S+)", text, flags=re.MULTILINE)
        assert re.fullmatch(r"[A-Z]+(/[A-Z]+|\|[a-z]+)?", shown), (opt.flag, shown)
    assert "--limbo-baseline=PATH|previous" in text
