"""API keys never reach an output: a run with sentinel credentials, then a scan of every file.

The litellm agent runs against the local scripted model server with the key in the provider's
environment variable, another in ``--model-option api_key=…`` and a credential-looking option
(``azure_ad_token=…``); the run records a cassette and Allure results, and ``limbo report``
writes its tables, figures and HTML. No file the run or the report wrote may contain any of the
sentinels — in plain text, JSON-escaped or base64-encoded.
"""

from __future__ import annotations

import base64
import json
import subprocess
import sys
from pathlib import Path

import pytest

from limbo_plugin.spec.registry import SpecRegistry
from limbo_plugin.testing.models import PolicyModel
from limbo_plugin.testing.openai_server import OpenAIServer

SENTINELS = {
    "env": "sk-limbo-SENTINEL-env-7f3a9c",
    "option": "sk-limbo-SENTINEL-opt-51d2e8",
    "token": "limbo-SENTINEL-azure-token-0b6e44",
}


def encodings(secret: str) -> list[bytes]:
    return [secret.encode(), json.dumps(secret).encode(),
            base64.b64encode(secret.encode()).rstrip(b"=")]


def leaks(root: Path, skip: Path) -> list[str]:
    found = []
    for file in sorted(root.rglob("*")):
        if not file.is_file() or skip in file.parents:
            continue
        data = file.read_bytes()
        found += [f"{file.relative_to(root)}: {name}" for name, secret in SENTINELS.items()
                  if any(form in data for form in encodings(secret))]
    return found


@pytest.mark.early
@pytest.mark.slow
def test_no_api_key_reaches_records_history_cassettes_allure_or_reports(
        project: pytest.Pytester, registry: SpecRegistry,
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", SENTINELS["env"])
    with OpenAIServer(PolicyModel("verify_first", registry=registry)) as server:
        result = project.runpytest_subprocess(
            "--experiment", "small", "-k", "incident_open and (lost_ack or late_commit)",
            "--agent", "litellm:openai/scripted",
            "--model-option", f"api_base={server.base_url}",
            "--model-option", f"api_key={SENTINELS['option']}",
            "--model-option", f"azure_ad_token={SENTINELS['token']}",
            "--limbo-provider-backoff", "0", "--limbo-cassette", "cassette",
            "--alluredir", "allure-results")
        assert server.requests, "the model was called"
    result.assert_outcomes(passed=1, failed=1)
    report = subprocess.run(
        [sys.executable, "-m", "limbo_plugin.cli", "--specs", "specs", "report",
         "reports/episodes.jsonl", "--out", "report-out"],
        cwd=project.path, capture_output=True, text=True, timeout=300)
    assert report.returncode == 0, report.stderr[-2000:]
    written = {p.relative_to(project.path).parts[0] for p in project.path.rglob("*")
               if p.is_file()}
    assert {"reports", "cassette", "allure-results", "report-out"} <= written
    assert any(project.path.joinpath("report-out").rglob("*.html"))
    assert leaks(project.path, skip=project.path / "specs") == []
    console = result.stdout.str() + result.stderr.str() + report.stdout + report.stderr
    assert not [name for name, secret in SENTINELS.items() if secret in console]


def test_the_scan_finds_a_planted_key(tmp_path: Path) -> None:
    """The control: the scan would see a key in any of the forms it looks for."""
    (tmp_path / "a.json").write_text(json.dumps({"k": SENTINELS["env"]}))
    (tmp_path / "b.txt").write_bytes(base64.b64encode(SENTINELS["token"].encode()))
    assert leaks(tmp_path, skip=tmp_path / "none") == ["a.json: env", "b.txt: token"]
