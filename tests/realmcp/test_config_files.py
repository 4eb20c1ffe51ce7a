"""``limbo guard --config`` and ``limbo audit --rules`` files are read like the specs: a mistake
is one line naming the file, the line and the path inside it."""

from __future__ import annotations

from pathlib import Path

import pytest

from limbo_plugin.realmcp.config import ConfigError, GuardConfig, load_config
from limbo_plugin.realmcp.rules import DEFAULT_RULES, RulesError, load_rules


@pytest.mark.parametrize(("text", "where"), [
    ("tools:\n  - tool: x\n    writes: true\n  - tool: y\n    writes: maybe\n",
     "guard.yaml:5: at tools[1].writes"),
    ("tools:\n  - tool: x\n    writes: [\n", "guard.yaml:4: YAML syntax error"),
    ('{"tools": [{"tool": "x"}]}', "guard.yaml:1: at tools[0].writes"),
])
def test_a_bad_guard_config_names_its_line_and_path(tmp_path: Path, text: str,
                                                    where: str) -> None:
    config = tmp_path / "guard.yaml"
    config.write_text(text)
    with pytest.raises(ConfigError) as caught:
        load_config(config)
    message = str(caught.value)
    assert "\n" not in message and message.startswith(str(tmp_path)) and where in message


def test_an_empty_or_absent_guard_config_configures_nothing(tmp_path: Path) -> None:
    empty = tmp_path / "guard.yaml"
    empty.write_text("")
    assert load_config(empty) == load_config(None) == GuardConfig()
    with pytest.raises(ConfigError, match=r"missing\.yaml: cannot read file"):
        load_config(tmp_path / "missing.yaml")


def test_bad_audit_rules_name_their_line_and_path(tmp_path: Path) -> None:
    rules = tmp_path / "rules.yaml"
    text = DEFAULT_RULES.read_text(encoding="utf-8")
    rules.write_text(text.replace("write_phrases: [", "write_phrases: ['(unclosed', ", 1))
    with pytest.raises(RulesError) as caught:
        load_rules(rules)
    line = text[:text.index("write_phrases: [")].count("\n") + 1
    assert f"rules.yaml:{line}: at write_phrases" in str(caught.value)
    assert "bad regular expression" in str(caught.value)
    assert load_rules() == load_rules(DEFAULT_RULES)
