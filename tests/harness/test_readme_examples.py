"""The documentation's "your own agent" examples, run verbatim through the plugin: a Python agent
(``python:``) and an MCP agent CLI declared in YAML (``harness:command:``), each with a scripted
policy playing the model. Each must grade exactly as the policy does."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from harnesskit import records

from limbo_plugin.spec.registry import SpecRegistry
from limbo_plugin.testing.models import PolicyModel
from limbo_plugin.testing.openai_server import OpenAIServer

REGISTRY = SpecRegistry.load(Path(__file__).resolve().parents[2] / "specs")

DOCS = Path(__file__).resolve().parents[2] / "docs"
GUIDE = DOCS / "how-to" / "own-agent.md"
"""The guide holds every example; another page that shows one (the tutorial) shows it as is."""
SELECT = ["--experiment", "small", "-k", "lost_ack"]


EXAMPLE = re.compile(r"<!-- example: (\S+) -->\n```[a-z]*\n(.*?)```", re.DOTALL)
"""``<!-- example: PATH -->`` followed by a fenced block."""


def readme_examples() -> dict[str, str]:
    """The guide's examples: PATH → its text."""
    return dict(EXAMPLE.findall(GUIDE.read_text(encoding="utf-8")))


def _write(project: pytest.Pytester, *names: str) -> None:
    examples = readme_examples()
    for name in names:
        target = project.path / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(examples[name])


def test_the_guide_has_both_examples_and_other_pages_show_them_as_they_are() -> None:
    examples = readme_examples()
    assert set(examples) == {"my_agent.py", "specs/harnesses/my-agent.yaml",
                             "specs/harnesses/my_mcp_agent.py"}
    shown = [(path, name, text) for path in sorted(DOCS.rglob("*.md")) if path != GUIDE
             for name, text in EXAMPLE.findall(path.read_text(encoding="utf-8"))]
    assert any(path.name == "tutorial.md" for path, _, _ in shown)
    assert [(path.name, name) for path, name, text in shown if examples.get(name) != text] == []


@pytest.mark.slow
# One policy each keeps the suite quick; between them both outcomes are covered.
@pytest.mark.parametrize(("policy", "outcome"), [("blind_retry", {"failed": 2})])
def test_the_python_agent_example(project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch,
                                  policy: str, outcome: dict[str, int]) -> None:
    monkeypatch.setenv("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # offline
    _write(project, "my_agent.py")
    with OpenAIServer(PolicyModel(policy, registry=REGISTRY, max_instance=1)) as server:
        result = project.runpytest_subprocess(
            *SELECT, "--agent", "python:my_agent:MyAgent",
            "--model-option", "model=openai/scripted",
            "--model-option", f"api_base={server.base_url}", "--model-option", "api_key=x")
    result.assert_outcomes(**outcome)
    assert all(r["agent"] == "python:my_agent:MyAgent" and r["usage"]["model_calls"] > 0
               for r in records(project))
    assert {r["behaviour"] for r in records(project)} == {
        "blind_retry" if policy == "blind_retry" else "verify_then_skip"}


@pytest.mark.early
@pytest.mark.slow
@pytest.mark.parametrize(("policy", "outcome"), [("verify_first", {"passed": 2})])
def test_the_command_agent_example(project: pytest.Pytester, policy: str,
                                   outcome: dict[str, int]) -> None:
    _write(project, "specs/harnesses/my-agent.yaml", "specs/harnesses/my_mcp_agent.py")
    with OpenAIServer(PolicyModel(policy, registry=REGISTRY, max_instance=1)) as server:
        result = project.runpytest_subprocess(
            *SELECT, "--agent", "harness:command:my-agent", "--model-option", "model=scripted",
            "--model-option", f"api_base={server.base_url}")
    result.assert_outcomes(**outcome)
    for record in records(project):
        assert record["agent"] == "harness:command:my-agent"
        assert record["harness"]["name"] == "my-agent" and record["harness"]["tool_listings"]


def test_a_python_agent_that_cannot_be_imported_is_a_one_line_usage_error(
        project: pytest.Pytester) -> None:
    result = project.runpytest(*SELECT, "--agent", "python:no_such_module:Agent")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "no module named 'no_such_module'" in result.stderr.str()
    assert "Traceback" not in result.stderr.str()
