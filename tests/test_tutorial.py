"""The tutorial, run as a reader would: its agent file and its shell commands, verbatim, in an
empty directory, against the scripted OpenAI-compatible server. What the page shows — the family
table, the comparison, the passing keyed run, the report — is what the commands print."""

from __future__ import annotations

import importlib.util
import os
import re
import socket
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
TUTORIAL = (ROOT / "docs" / "tutorial.md").read_text(encoding="utf-8")
WAIT = ("{python} -c \"import socket, time\nfor _ in range(300):\n    try:\n"
        "        socket.create_connection(('127.0.0.1', {port}), 1).close(); break\n"
        "    except OSError: time.sleep(0.1)\"")
"""A readiness probe after each server start: the next command needs it listening."""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def script(port: int) -> str:
    """The page's shell blocks after the install, as one script: the commands as written, with
    ``pytest`` and ``limbo`` run by this interpreter and the server on a free port."""
    blocks = re.findall(r"```bash\n(.*?)```", TUTORIAL, re.DOTALL)
    assert blocks[0].startswith("python -m pip install") and blocks[1].startswith("mkdir")
    text = "\n".join(blocks[2:])
    python = sys.executable
    text = re.sub(r"^python ", f"{python} ", text, flags=re.MULTILINE)
    text = re.sub(r"^pytest ", f"{python} -m pytest -p no:cacheprovider -p no:randomly ", text,
                  flags=re.MULTILINE)
    text = re.sub(r"^limbo ", f"{python} -m limbo_plugin.cli ", text, flags=re.MULTILINE)
    text = text.replace("8765", str(port))
    text = text.replace(f"--port {port} &", f"--port {port} &\n"
                        + WAIT.format(python=python, port=port))
    # pytest exits 1 where episodes duplicate (the measurement), so no `set -e`; whatever
    # happens, the servers the script started in the background end with it
    return "trap 'kill $(jobs -p) 2>/dev/null' EXIT\n" + text


@pytest.mark.early
@pytest.mark.slow
def test_the_tutorial_runs_as_written(tmp_path: Path) -> None:
    if importlib.util.find_spec("litellm") is None:  # not imported here: it fetches a price map
        pytest.skip("the llm extra (pip install -e '.[llm,report]')")
    agent = re.search(r"<!-- example: my_agent.py -->\n```python\n(.*?)```", TUTORIAL,
                      re.DOTALL)
    assert agent is not None
    (tmp_path / "my_agent.py").write_text(agent.group(1))
    env = {k: v for k, v in os.environ.items() if k != "PYTEST_ADDOPTS"}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(tmp_path), env.get("PYTHONPATH")]))
    env["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"  # offline
    done = subprocess.run(["bash", "-c", script(free_port())], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=900, check=False)
    out = done.stdout
    assert done.returncode == 0, (out[-3000:], done.stderr[-3000:])  # limbo report's
    # what the page shows is what ran
    for block in re.findall(r"```text\n(.*?)```", TUTORIAL, re.DOTALL):
        for line in block.splitlines():
            shown = line.split("  …")[0].rstrip()
            if shown and not shown.startswith("-"):
                assert shown in out, shown
    assert "18 failed" in out and "12 failed, 6 passed" in out and "18 passed" in out
    assert "OPS-4131" in out and "OPS-4139" in out  # the ticket created twice, as the page says
    assert (tmp_path / "reports" / "report" / "index.html").is_file()
