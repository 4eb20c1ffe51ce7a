"""A broken spec raises SpecError naming the file, the line and the path inside it.

Each test copies specs/ to a temporary directory, breaks one file, and loads the copy.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from limbo_plugin.errors import SpecError
from limbo_plugin.spec.loader import load_yaml_text
from limbo_plugin.spec.registry import SpecRegistry

SPECS = Path(__file__).resolve().parents[2] / "specs"


def broken_tree(tmp_path: Path, file: str, old: str, new: str, marker: str) -> tuple[Path, int]:
    """Copy specs/, replace ``old`` by ``new`` in ``file``; return the root and the line of
    ``marker`` in the edited file."""
    root = tmp_path / "specs"
    shutil.copytree(SPECS, root, ignore=shutil.ignore_patterns("tasks"))
    target = root / file
    text = target.read_text(encoding="utf-8")
    assert text.count(old) >= 1, f"{old!r} not in {file}"
    text = text.replace(old, new, 1)
    target.write_text(text, encoding="utf-8")
    return root, text[: text.index(marker)].count("\n") + 1


def load_error(root: Path) -> SpecError:
    with pytest.raises(SpecError) as info:
        SpecRegistry.load(root)
    return info.value


def test_unbroken_copy_loads(tmp_path: Path) -> None:
    """The control: the copied tree itself is valid, so each failure below is its edit's."""
    root, _ = broken_tree(tmp_path, "services/email.yaml", "service: email", "service: email",
                          "service")
    registry = SpecRegistry.load(root)
    assert "email_send" in registry.catalog().tools


CASES = {
    "yaml_syntax": ("services/billing.yaml", "      record_noun: charge\n",
                    "      record_noun: charge: oops\n", "record_noun: charge: oops",
                    "", "YAML syntax error"),
    "unknown_field": ("services/billing.yaml", "      record_noun: charge\n",
                      "      record_noun: charge\n      colour: red\n", "colour: red",
                      "tools[0].contract.colour", "unknown field"),
    "wrong_type": ("services/email.yaml", "      visibility_lag_s: 120\n      irreversible",
                   "      visibility_lag_s: soon\n      irreversible", "visibility_lag_s: soon",
                   "tools[0].contract.visibility_lag_s", "integer"),
    "unknown_read_back_tool": ("services/tickets.yaml", "tool: tickets_list\n",
                               "tool: tickets_lisst\n", "tool: tickets_lisst",
                               "tools[0].contract.read_back.tool", "tickets_lisst"),
    "unknown_compensation_tool": ("services/deploy.yaml", "tool: deploy_cancel_run",
                                  "tool: deploy_undo", "tool: deploy_undo",
                                  "tools[0].contract.compensation.tool", "deploy_undo"),
    "lag_disagrees_with_read_back": ("services/email.yaml",
                                     "      visibility_lag_s: 120\n      irreversible",
                                     "      visibility_lag_s: 60\n      irreversible",
                                     "visibility_lag_s: 60",
                                     "tools[0].contract.visibility_lag_s", "120"),
    "read_back_lag_changed": ("services/social.yaml",
                              "idempotency: read_only, visibility_lag_s: 120}",
                              "idempotency: read_only, visibility_lag_s: 30}",
                              "      visibility_lag_s: 120\n",
                              "tools[2].contract.visibility_lag_s", "lags 30 s"),
    "negative_lag": ("services/deploy.yaml", "      visibility_lag_s: 0\n",
                     "      visibility_lag_s: -5\n", "visibility_lag_s: -5",
                     "tools[0].contract.visibility_lag_s", "greater than or equal"),
    "bad_tool_name": ("services/email.yaml", "  - name: email_send\n",
                      "  - name: Email-Send\n", "Email-Send", "tools[0].name", "pattern"),
    "fault_wrong_type": ("faults/modes.yaml", "    cost_s: 30\n", "    cost_s: thirty\n",
                         "cost_s: thirty", "modes[0].cost_s", "number"),
    "fault_unknown_field": ("faults/modes.yaml", "    execute: never\n",
                            "    execute: never\n    exeucte_twice: true\n", "exeucte_twice",
                            "modes[0].exeucte_twice", "unknown field"),
    "fault_unknown_family": ("faults/modes.yaml", "    family: lost_ack\n",
                             "    family: lost_acks\n", "family: lost_acks", "modes[1].family",
                             "unknown family 'lost_acks'; declared under families: not_executed"),
    "family_unknown_class": ("faults/modes.yaml", "{name: partial_batch, class: resolvable,",
                             "{name: partial_batch, class: maybe,", "name: partial_batch, class",
                             "families[3].class", "'unresolvable'"),
    "late_mode_without_delay": ("faults/modes.yaml", "    late_delay: fixed\n", "",
                                "name: timeout_late\n", "modes[2]",
                                "a late mode needs late_delay"),
    "tool_without_handler": ("services/email.yaml", "  - name: email_search_sent\n",
                             "  - name: email_search_inbox\n", "email_search_inbox",
                             "tools[1].name",
                             "EmailService has no handler for tool 'email_search_inbox': mark "
                             "a method with @handles('email_search_inbox')"),
    "service_without_class": ("services/email.yaml", "service: email\n", "service: fax\n",
                              "service: fax", "service",
                              "service 'fax' has no implementation: define a subclass of "
                              "limbo_plugin.world.services.base.Service with name = 'fax'"),
    "general_tool_without_implementation": ("services/general.yaml", "  - name: wait\n",
                                            "  - name: sleep\n", "name: sleep",
                                            "tools[0].name", "general tool 'sleep'"),
    "contract_wrong_type": ("contracts/keys_everywhere.yaml",
                            "keys_on_non_idempotent_writes: true",
                            "keys_on_non_idempotent_writes: [1]",
                            "keys_on_non_idempotent_writes", "keys_on_non_idempotent_writes",
                            "boolean"),
}


@pytest.mark.parametrize("case", list(CASES))
def test_broken_spec_names_file_line_and_path(tmp_path: Path, case: str) -> None:
    """The error points at the offending value: file, 1-based line and the path inside it."""
    file, old, new, marker, path, words = CASES[case]
    root, line = broken_tree(tmp_path, file, old, new, marker)
    error = load_error(root)
    assert Path(error.file) == root / file
    assert error.line == line
    assert error.path == path
    assert words in error.message
    rendered = str(error)
    assert rendered.startswith(f"{root / file}:{line}:")
    if path:
        assert f"at {path}" in rendered


def test_model_level_error_points_at_the_tool(tmp_path: Path) -> None:
    """A contradiction inside one tool's contract names that contract."""
    root, line = broken_tree(
        tmp_path, "services/billing.yaml",
        "contract: {read_only_hint: true, idempotent_hint: true, idempotency: read_only}",
        "contract: {read_only_hint: true, idempotent_hint: true, idempotency: idempotent}",
        "idempotency: idempotent}")
    error = load_error(root)
    assert error.path == "tools[1].contract" and error.line == line
    assert "read-only" in error.message


def test_duplicate_tool_across_files(tmp_path: Path) -> None:
    """A tool declared in two service files names both places."""
    root, _ = broken_tree(tmp_path, "services/tickets.yaml", "  - name: tickets_get\n",
                          "  - name: email_send\n", "name: email_send")
    error = load_error(root)
    assert Path(error.file).name in ("email.yaml", "tickets.yaml")
    assert "email_send" in error.message and "already declared" in error.message
    assert error.path.endswith(".name")


def test_duplicate_key_and_merge_key_are_rejected() -> None:
    """Duplicate keys would silently drop a value; the loader refuses them with their line."""
    with pytest.raises(SpecError) as info:
        load_yaml_text("a: 1\nb:\n  c: 2\n  c: 3\n", "x.yaml")
    assert info.value.line == 4 and info.value.path == "b"
    with pytest.raises(SpecError):
        load_yaml_text("base: &b {x: 1}\nother:\n  <<: *b\n", "y.yaml")


def test_missing_variant_is_an_error(tmp_path: Path) -> None:
    """The native contract must exist."""
    root, _ = broken_tree(tmp_path, "contracts/native.yaml", "name: native", "name: native",
                          "name")
    (root / "contracts" / "native.yaml").unlink()
    error = load_error(root)
    assert "native" in error.message and Path(error.file) == root / "contracts"


def test_not_a_specs_directory(tmp_path: Path) -> None:
    """Pointing at an unrelated directory is a clear error, not a crash."""
    error = load_error(tmp_path)
    assert "services" in error.message


def _as_text_dates(value: object) -> object:
    import datetime

    if isinstance(value, dict):
        return {k: _as_text_dates(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_as_text_dates(v) for v in value]
    if isinstance(value, datetime.date):
        return str(value)
    return value


@pytest.mark.parametrize("text", [
    "a: plain\nb: '123'\nc: \"true\"\nd: !!str 7\ne: 123\nf: true\ng: 1.5\nh: ~\ni: 2024-01-02\n",
    "list: [x, 'y', 3, false, \"null\"]\nnested: {k: v, n: 0x10}\n",
])
def test_the_loader_reads_values_as_pyyaml_does(text: str) -> None:
    """Text scalars skip PyYAML's constructor; where YAML 1.1 and 1.2 agree, every value must
    still come out as ``yaml.safe_load`` gives it (dates as the text they are)."""
    import yaml

    assert load_yaml_text(text).data == _as_text_dates(yaml.safe_load(text))


@pytest.mark.parametrize(("text", "value"), [
    ("no", "no"), ("yes", "yes"), ("on", "on"), ("Off", "Off"), ("y", "y"), ("23:59", "23:59"),
    ("1_000", "1_000"), ("0b101", "0b101"), ("0o17", 15), ("0x1f", 31), ("1e3", 1000.0),
    ("TRUE", True), ("-7", -7), ("'010'", "010"),
])
def test_untagged_scalars_follow_yaml_1_2s_core_schema(text: str, value: object) -> None:
    """YAML 1.1 (PyYAML's) would make ``no`` false, ``23:59`` 1439 and ``0b101`` 5."""
    data = load_yaml_text(f"title: {text}\n").data
    assert data == {"title": value} and type(data["title"]) is type(value)


@pytest.mark.parametrize(("text", "message"), [
    ("010", "010 has a leading zero, which YAML 1.1 reads as octal and YAML 1.2 as decimal: "
            "quote it ('010') for text, or write 10 for the number"),
    ("!!bool maybe", "'maybe' is not a valid !!bool (YAML 1.2: false or true)"),
    ("!!bool yes", "'yes' is not a valid !!bool (YAML 1.2: false or true)"),
    ("!!int ''", "cannot read value '': invalid literal for int() with base 10: ''"),
    ("!!null x", "'x' is not a valid !!null (YAML 1.2: null or ~)"),
])
def test_ambiguous_or_mistagged_scalars_are_one_line_errors(text: str, message: str) -> None:
    with pytest.raises(SpecError) as caught:
        load_yaml_text(f"a: 1\ntitle: {text}\n", "spec.yaml")
    assert str(caught.value) == f"spec.yaml:2: at title {message}"


def test_every_shipped_spec_reads_as_pyyaml_reads_it() -> None:
    import yaml

    from limbo_plugin.spec.loader import load_yaml

    files = sorted(SPECS.rglob("*.yaml"))
    assert files
    for file in files:
        assert load_yaml(file).data == _as_text_dates(
            yaml.safe_load(file.read_text(encoding="utf-8"))), file


@pytest.mark.parametrize("separator", ["\u2028", "\u2029", "\x85"])
def test_line_numbers_are_an_editors_after_a_unicode_line_separator(separator: str) -> None:
    """YAML 1.1's parser counts U+2028, U+2029 and NEL as line breaks; an editor does not."""
    text = f'a: "one{separator}two"\nb: 1\nc: !!bool maybe\n'
    with pytest.raises(SpecError) as caught:
        load_yaml_text(text, "spec.yaml")
    assert caught.value.line == 3
