"""The plugin's options are one table (``limbo_plugin.plugin.options.OPTIONS``): each flag is
registered once, each agent option says which :class:`AgentOptions` field it sets (so its
error names the flag), each run-configuration field has its option, and ``--help`` lists every
one of them in Limbo's group."""

from __future__ import annotations

import re
from collections import Counter

import pytest

from limbo_plugin.agents.options import AgentOptions
from limbo_plugin.errors import UsageError
from limbo_plugin.plugin.options import OPTIONS
from limbo_plugin.records import RUN_FIELDS

DERIVED_AGENT_FIELDS = {"reports_dir"}
"""Agent options the plugin sets itself (harness transcripts go beside the records)."""


def test_every_option_is_declared_once() -> None:
    for attribute in ("name", "flag", "dest"):
        counts = Counter(getattr(opt, attribute) for opt in OPTIONS)
        assert [value for value, n in counts.items() if n > 1] == [], attribute
    inis = [opt.ini for opt in OPTIONS if opt.ini is not None]
    assert len(inis) == len(set(inis))
    assert all(opt.flag.startswith("--") and opt.help for opt in OPTIONS)


def test_every_agent_option_is_flagged_with_its_field() -> None:
    flagged = {opt.agent_field for opt in OPTIONS if opt.agent_field is not None}
    assert flagged == set(AgentOptions.model_fields) - DERIVED_AGENT_FIELDS
    assert {"--limbo-cassette", "--limbo-cassette-mode", "--limbo-provider-retries",
            "--limbo-provider-backoff", "--model-option"} == {
        opt.flag for opt in OPTIONS if opt.agent_field is not None}


def test_every_run_configuration_field_has_its_option() -> None:
    names = {opt.name for opt in OPTIONS if opt.kind == "value"}
    assert set(RUN_FIELDS) <= names


def test_a_bad_agent_option_names_its_flag() -> None:
    from limbo_plugin.plugin.settings import parse_agent_options

    for field, value in (("provider_retries", "0"), ("cassette_mode", "sometimes"),
                         ("provider_backoff_s", "-1")):
        with pytest.raises(UsageError) as info:
            parse_agent_options({field: value})
        (opt,) = [o for o in OPTIONS if o.agent_field == field]
        assert str(info.value).startswith(f"{opt.flag}: "), str(info.value)


def test_help_lists_every_option_once_in_limbos_group(pytester: pytest.Pytester) -> None:
    pytester.makeini("[pytest]\naddopts = -p no:cacheprovider\n")
    text = pytester.runpytest_subprocess("--help").stdout.str()
    group = text.split("Limbo: duplicate side effects of tool-using agents:", 1)[1]
    group = re.split(r"\n\S", group, maxsplit=1)[0]
    for opt in OPTIONS:
        shown = re.findall(rf"^  {re.escape(opt.flag)}(?=[= ]|$)", group, flags=re.MULTILINE)
        assert len(shown) == 1, (opt.flag, shown)
    listed = re.findall(r"^  (--[a-z-]+)", group, flags=re.MULTILINE)
    assert listed == [opt.flag for opt in OPTIONS]
    ini = text.split("[pytest] configuration options", 1)[1]
    for opt in OPTIONS:
        if opt.ini is not None:
            assert len(re.findall(rf"^  {opt.ini} \(", ini, flags=re.MULTILINE)) == 1, opt.ini
