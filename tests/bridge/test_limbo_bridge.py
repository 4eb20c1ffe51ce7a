"""``limbo_bridge``, the glue framework-built agents share, run as such an agent runs it: a
separate interpreter with only the bridge's directory on its path (and the real ``openai`` and
``httpx`` exceptions a framework lets through)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import httpx
import httpx2
import openai
import pytest

from limbo_plugin.agents.harness_install import find_harness, install_dir
from limbo_plugin.agents.harness_spec import load_harness
from limbo_plugin.bridge import BRIDGE_DIR
from limbo_plugin.bridge.limbo_bridge import OUTAGE_EXIT, VARIABLES, provider_failure
from limbo_plugin.errors import SpecError

ROOT = Path(__file__).resolve().parents[2]
RECIPES = sorted((ROOT / "examples" / "agents").glob("*/*.yaml"))
ENVIRONMENT = {name: f"value of {name}" for name in VARIABLES}


def _agent(body: str, tmp_path: Path, env: dict[str, str] | None = None
           ) -> subprocess.CompletedProcess[str]:
    script = tmp_path / "agent.py"
    script.write_text("import limbo_bridge\n\nasync def main(episode):\n"
                      + "".join(f"    {line}\n" for line in body.splitlines())
                      + "\nlimbo_bridge.run(main)\n")
    return subprocess.run([sys.executable, "-S", str(script)], capture_output=True,
                          text=True, env={"PYTHONPATH": str(BRIDGE_DIR),
                                          **(ENVIRONMENT if env is None else env)},
                          timeout=60)


def test_the_bridge_imports_with_the_standard_library_alone(tmp_path: Path) -> None:
    # -I ignores PYTHONPATH: load it by path, in an interpreter without site-packages
    code = (f"import sys; sys.path.insert(0, {str(BRIDGE_DIR)!r}); import limbo_bridge; "
            "print(sorted(m for m in sys.modules if m.split('.')[0] in "
            "('limbo_plugin', 'openai', 'httpx', 'pydantic')))")
    result = subprocess.run([sys.executable, "-I", "-S", "-c", code], capture_output=True,
                            text=True, check=True)
    assert result.stdout.strip() == "[]"


def test_usage_is_one_json_line_per_request(tmp_path: Path) -> None:
    result = _agent("limbo_bridge.report_usage(120, 7, cached_tokens=100)\n"
                    "limbo_bridge.report_usage(130, 9)\n"
                    "print(episode.mcp_headers()['Authorization'], episode.prompt)", tmp_path)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert [json.loads(line) for line in lines[:2]] == [
        {"limbo": "usage", "prompt_tokens": 120, "completion_tokens": 7, "cached_tokens": 100},
        {"limbo": "usage", "prompt_tokens": 130, "completion_tokens": 9, "cached_tokens": 0}]
    assert lines[2] == "Bearer value of LIMBO_MCP_TOKEN value of LIMBO_PROMPT"


def test_a_provider_failure_is_a_model_error_line_and_its_own_exit_status(
        tmp_path: Path) -> None:
    result = _agent("class APIConnectionError(Exception): pass\n"
                    "try:\n    raise OSError('refused')\n"
                    "except OSError as e:\n"
                    "    raise RuntimeError('the run failed') from APIConnectionError("
                    "'Connection error.\\nmore')", tmp_path)
    assert result.returncode == OUTAGE_EXIT
    assert json.loads(result.stdout) == {"limbo": "model_error", "error": "APIConnectionError",
                                         "message": "Connection error."}


def test_the_agents_own_failure_is_not_an_outage(tmp_path: Path) -> None:
    result = _agent("raise KeyError('a bug in the agent')", tmp_path)
    assert result.returncode == 1
    assert "KeyError: 'a bug in the agent'" in result.stderr and result.stdout == ""


def test_run_outside_an_adapter_says_which_variables_are_missing(tmp_path: Path) -> None:
    result = _agent("pass", tmp_path, env={})
    assert result.returncode == 1
    assert result.stderr.strip().splitlines() == [
        f"limbo_bridge: {', '.join(VARIABLES)} not set: run this agent through its Limbo "
        "adapter (env: in its YAML sets them)"]


def _raised(error: BaseException, cause: BaseException | None = None) -> BaseException:
    try:
        raise error from cause
    except BaseException as caught:
        return caught


@pytest.mark.parametrize("error", [  # openai's errors carry its own HTTP client's (httpx2's)
    openai.APIConnectionError(request=httpx2.Request("POST", "http://127.0.0.1:9/v1")),
    openai.InternalServerError("boom", response=httpx2.Response(
        500, request=httpx2.Request("POST", "http://gw/v1")), body=None),
    openai.AuthenticationError("no key", response=httpx2.Response(
        401, request=httpx2.Request("POST", "http://gw/v1")), body=None),
    httpx.ConnectError("refused"),
])
def test_provider_errors_are_found_through_the_frameworks_wrapping(error: Exception) -> None:
    wrapped = _raised(RuntimeError("agent run failed"), error)
    assert provider_failure(wrapped) is error
    assert provider_failure(BaseExceptionGroup("task group", [ValueError(), error])) is error


def test_other_errors_are_not_provider_failures() -> None:
    assert provider_failure(_raised(ValueError("bad JSON from the agent"))) is None
    assert provider_failure(_raised(KeyError("x"), TimeoutError())) is None


@pytest.mark.parametrize("path", RECIPES, ids=lambda p: p.parent.name)
def test_every_recipe_adapter_loads_and_sets_every_bridge_variable(path: Path) -> None:
    spec = load_harness(path)
    assert spec.mcp_transport == "streamable-http" and spec.install is not None
    assert spec.install.requirements and (path.parent / spec.install.requirements).is_file()
    assert {name: spec.env.get(name) for name in VARIABLES} == VARIABLES
    assert spec.env["PYTHONPATH"] == "{limbo_bridge}"
    readme = (path.parent / "README.md").read_text(encoding="utf-8")
    first_command = readme.split("```bash\n", 1)[1].split("```", 1)[0]
    assert f"harness:command:{path.relative_to(ROOT)}" in first_command
    assert f"limbo harness install {path.relative_to(ROOT)}" in first_command


def test_a_requirements_file_is_part_of_the_install(tmp_path: Path) -> None:
    (tmp_path / "requirements.txt").write_text("framework==1.0\n")
    adapter = tmp_path / "mine.yaml"
    adapter.write_text("name: mine\ninstall: {pip: framework, version: '1.0', "
                       "requirements: requirements.txt, executable: python}\n"
                       "command: ['{executable}', '{spec_dir}/agent.py']\n")
    first = install_dir(find_harness(str(adapter)))
    (tmp_path / "requirements.txt").write_text("framework==1.0\ncompanion==2.0\n")
    second = install_dir(find_harness(str(adapter)))
    assert first != second and first.parent == second.parent
    (tmp_path / "requirements.txt").unlink()
    with pytest.raises(SpecError, match=r"mine\.yaml:2: .*requirements file 'requirements.txt' "
                                        r"is not beside the adapter"):
        load_harness(adapter)
