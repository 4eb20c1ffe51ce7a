"""Harness adapters are data: the built-in ones load, a broken one is one line naming file and
line, and placeholders fill in as documented."""

from __future__ import annotations

from pathlib import Path

import pytest

from limbo_plugin.agents import check_agent, check_ready
from limbo_plugin.agents.harness_install import BUILT_IN, find_harness, harness_path
from limbo_plugin.agents.harness_spec import load_harness, render, render_command
from limbo_plugin.errors import SpecError, UsageError

MINIMAL = "name: mine\ncommand: [my-agent, \"{prompt}\"]\n"


@pytest.mark.parametrize("name", BUILT_IN)
def test_the_built_in_adapters_load_and_pin_their_cli(name: str) -> None:
    spec = find_harness(name)
    assert spec.name == name and spec.install is not None
    assert spec.install.version and spec.version_command
    assert spec.timeout_s > 0 and spec.usage is not None
    assert "{prompt}" in " ".join(spec.command)
    assert harness_path(name).parent.name == "harnesses"


@pytest.mark.parametrize(("text", "line", "message"), [
    (MINIMAL + "colour: blue\n", 3, "unknown field"),
    ("name: mine\n", 1, "command"),
    (MINIMAL + "timeout_s: -5\n", 3, "greater than 0"),
    ("name: mine\ncommand: [x, \"{promt}\"]\n", 2, "unknown placeholder {promt}"),
    ("name: mine\ncommand: [x, \"{mcp_url}\"]\n", 2, "not with mcp_transport: stdio"),
    ("name: mine\nmcp_transport: streamable-http\ncommand: [x, \"{mcp_command}\"]\n", 3,
     "not with mcp_transport: streamable-http"),
    (MINIMAL + "install: {npm: a, pip: b, version: '1', executable: a}\n", 3,
     "exactly one of npm"),
    (MINIMAL + "usage: {source: stdout, format: sqlite}\n", 3, "needs a query"),
    (MINIMAL + "tool_name: acme-tool\n", 3, "must contain {tool}"),
    ("name: mine\ncommand: [x\n", 3, "YAML syntax error"),
    ("name: mine\ncommand: [x, \"{model_entry}\"]\n", 2, "needs a model_catalog"),
    ("name: mine\ncommand: [x, \"--env={mcp_env}\"]\n", 2, "cannot be a command-line argument"),
    ("name: mine\nmcp_transport: streamable-http\ncommand: [x, \"--token={mcp_token}\"]\n", 3,
     "{mcp_token} is the episode's token and cannot be a command-line argument"),
    ("name: mine\nenv: {T: \"{mcp_token}\"}\ncommand: [x]\n", 2,
     "unknown placeholder {mcp_token} (not with mcp_transport: stdio)"),
    (MINIMAL + "model_catalog: {command: [x]}\n", 3, "fallback"),
])
def test_a_broken_adapter_is_one_line_with_file_and_line(tmp_path: Path, text: str, line: int,
                                                        message: str) -> None:
    path = tmp_path / "mine.yaml"
    path.write_text(text)
    with pytest.raises(SpecError) as caught:
        load_harness(path)
    rendered = str(caught.value)
    assert "\n" not in rendered
    assert rendered.startswith(f"{path}:{line}:"), rendered
    assert message in rendered


def test_agent_strings_are_checked_with_one_line_errors(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="harness:<name>:<model>"):
        check_agent("harness:codex")
    with pytest.raises(UsageError, match=r"unknown harness 'nope'; known: .*codex"):
        check_agent("harness:nope:gpt")
    with pytest.raises(UsageError, match="does not exist"):
        check_agent(f"harness:command:{tmp_path}/absent.yaml")
    (tmp_path / "folder.yaml").mkdir()
    with pytest.raises(UsageError, match=r"folder\.yaml is a directory; give the adapter's YAML"):
        check_agent(f"harness:command:{tmp_path}/folder.yaml")
    broken = tmp_path / "broken.yaml"
    broken.write_text("name: x\n")
    with pytest.raises(SpecError, match=r"broken.yaml:1"):
        check_agent(f"harness:command:{broken}")
    missing = tmp_path / "missing-program.yaml"
    missing.write_text("name: x\ncommand: [no-such-program-anywhere, \"{prompt}\"]\n")
    check_agent(f"harness:command:{missing}")  # the form is right: it collects
    with pytest.raises(UsageError, match="'no-such-program-anywhere' is not on PATH"):
        check_ready([f"harness:command:{missing}"])  # but it cannot run here
    with pytest.raises(UsageError, match=r"valid forms: scripted:<policy> \(.*\), mcp:<policy>"):
        check_agent("robot:arm")


def test_placeholders_fill_whole_values_splice_lists_and_escape_braces() -> None:
    values = {"model": "m1", "mcp_args": ["-m", "x"], "mcp_env": {"T": "s"},
              "tools": ["acme-a", "acme-b"], "home": "/h", "prompt": "do it"}
    content = {"args": "{mcp_args}", "env": "{mcp_env}", "path": "{home}/.cfg",
               "literal": "{{not a placeholder}}", "nested": [{"m": "{model}"}]}
    assert render(content, values) == {
        "args": ["-m", "x"], "env": {"T": "s"}, "path": "/h/.cfg",
        "literal": "{not a placeholder}", "nested": [{"m": "m1"}]}
    argv = render_command(["cli", "--tools", "{tools}", "--model={model}", "{prompt}"], values)
    assert argv == ["cli", "--tools", "acme-a", "acme-b", "--model=m1", "do it"]


def test_a_program_beside_the_adapter_is_found_before_any_episode(tmp_path: Path) -> None:
    """``{spec_dir}`` is known when the adapter loads: it is filled before the program is
    looked for, so a CLI kept beside its YAML file is found."""
    from limbo_plugin.agents.harness_install import resolve_executable

    program = tmp_path / "my-cli"
    program.write_text("#!/bin/sh\nexit 0\n")
    program.chmod(0o755)
    path = tmp_path / "mine.yaml"
    path.write_text('name: mine\ncommand: ["{spec_dir}/my-cli", "{prompt}"]\n')
    assert resolve_executable(load_harness(path)) == str(program)
