"""A key that a gateway echoes, a CLI prints or an agent raises never reaches what Limbo writes.

The key is a fake one, in the environment (or passed to a harness), and it comes back in every
form it travels in — as is, JSON-escaped, as Python shows a parsed body, URL-encoded and
base64-encoded (``Basic base64(user:key)``) — in a provider error, an agent's exception, a
harness's stderr and its kept transcript. Each test first makes sure the key did reach the
text that is scrubbed (the control), then that no form of it is in the record, the records
file, the terminal, the transcripts or the Allure results.
"""

from __future__ import annotations

import base64
import json
import sys
import threading
import urllib.parse
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
import yaml

from limbo_plugin import scrubbing
from limbo_plugin.agents.harness import _tail
from limbo_plugin.agents.options import AgentOptions
from limbo_plugin.agents.provider import describe
from limbo_plugin.episode import MAX_ERROR_CHARS, agent_error, run_episode
from limbo_plugin.records import EpisodeKey, EpisodeRecord, record_line
from limbo_plugin.runconfig import RunConfig
from limbo_plugin.spec.registry import SpecRegistry

KEY = 'sk-limbo-fake/+key"quote\\bs-7f3a9c0d'
"""A fake key with the characters that make its forms differ: ``/``, ``+`` (URL and base64),
``"`` and ``\\`` (JSON and Python escaping)."""
OTHER = "gw-limbo-fake-passenv-51d2e8a4"
EPISODE = EpisodeKey(template="incident_open", instance=0, focal_write="ticket",
                     fault_mode="timeout_post")


def encodings(secret: str) -> dict[str, str]:
    """The forms a leak takes; the base64 one as part of ``Basic base64(user:key)``."""
    basic = base64.b64encode(f"user:{secret}".encode()).decode()
    return {"plain": secret, "json": json.dumps(secret)[1:-1],
            "json twice": json.dumps(json.dumps(secret))[1:-1],
            "python": repr(secret)[1:-1], "url": urllib.parse.quote(secret, safe=""),
            "base64": base64.b64encode(secret.encode()).decode().rstrip("="),
            "basic": basic[8:-4]}  # the part made of the key's bits only


def leaks(text: str, *secrets: str) -> list[str]:
    return [f"{secret[:12]}… {name}" for secret in secrets
            for name, form in encodings(secret).items() if form in text]


def all_forms(secret: str) -> str:
    forms = encodings(secret)
    forms["basic"] = base64.b64encode(f"user:{secret}".encode()).decode()
    return " | ".join(forms.values())


@pytest.fixture
def fake_key(monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    return KEY


# -- the scrubber ------------------------------------------------------------------------------
@pytest.mark.parametrize("form", list(encodings(KEY)))
def test_each_form_of_a_known_key_is_replaced(fake_key: str, form: str) -> None:
    text = f"before {all_forms(KEY)} after"
    assert encodings(KEY)[form] in text  # the control
    cleaned = scrubbing.scrub(text)
    assert leaks(cleaned, KEY) == []
    assert cleaned.startswith("before ") and cleaned.endswith(" after")
    assert "[secret OPENAI_API_KEY]" in cleaned


def test_base64_of_a_key_is_found_at_every_alignment(fake_key: str) -> None:
    for prefix in ("", "u", "us", "use", "user:"):
        blob = base64.b64encode(f"{prefix}{KEY}trailing".encode()).decode()
        assert "[secret OPENAI_API_KEY]" in scrubbing.scrub(blob), prefix


def test_short_values_and_other_variables_are_left_alone(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SHORT_API_KEY", "local")  # a placeholder, not a secret
    monkeypatch.setenv("LIMBO_SCRUB_TEST_DIR", "ordinary-text-here")  # not a credential name
    text = "a local run of ordinary-text-here"
    assert scrubbing.scrub(text) == text


def test_the_scrubber_is_rebuilt_when_a_credential_changes_not_any_variable(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """pytest sets ``PYTEST_CURRENT_TEST`` at every phase of every test: rebuilding the scrubber
    for that cost more than a scripted episode; a new key must still be picked up at once."""
    before = scrubbing.current()
    monkeypatch.setenv("PYTEST_CURRENT_TEST", "tests/x.py::y (call)")
    monkeypatch.setenv("LIMBO_SCRUB_TEST_DIR", "ordinary-text-here")
    assert scrubbing.current() is before
    fresh = "ant-limbo-fake-rebuild-9c41e7b2"  # a value no other test teaches the scrubber
    monkeypatch.setenv("ANTHROPIC_API_KEY", fresh)
    after = scrubbing.current()
    assert after is not before
    assert scrubbing.scrub(f"key {fresh}") == "key [secret ANTHROPIC_API_KEY]"
    monkeypatch.delenv("ANTHROPIC_API_KEY")
    assert fresh in scrubbing.scrub(f"key {fresh}")


def test_a_known_credential_variable_is_followed_through_changes_and_removal(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A credential name is classified once; its value is still read at every check: a new
    value, a removal and a return are each seen at the next scrub."""
    first, second = "ant-limbo-fake-first-5d0a13c7", "ant-limbo-fake-second-77e1b9f0"
    assert scrubbing.scrub(f"a {first}") == f"a {first}"
    monkeypatch.setenv("SERVICE_API_TOKEN", first)
    assert scrubbing.scrub(f"a {first}") == "a [secret SERVICE_API_TOKEN]"
    monkeypatch.setenv("SERVICE_API_TOKEN", second)
    assert scrubbing.scrub(f"a {second}") == "a [secret SERVICE_API_TOKEN]"
    monkeypatch.delenv("SERVICE_API_TOKEN")
    assert scrubbing.scrub(f"a {second}") == f"a {second}"
    monkeypatch.setenv("SERVICE_API_TOKEN", second)
    assert scrubbing.scrub(f"a {second}") == "a [secret SERVICE_API_TOKEN]"


def test_credentials_come_from_credential_names_and_options() -> None:
    assert [name for name in ("OPENAI_API_KEY", "WATSONX_APIKEY", "AWS_SESSION_TOKEN",
                              "AZURE_CLIENT_SECRET", "CLARIFAI_PAT", "HF_TOKEN", "HOME",
                              "PATH", "api_base", "timeout", "KEYBOARD_LAYOUT")
            if scrubbing.is_credential_name(name)] == [
        "OPENAI_API_KEY", "WATSONX_APIKEY", "AWS_SESSION_TOKEN", "AZURE_CLIENT_SECRET",
        "CLARIFAI_PAT", "HF_TOKEN"]
    options = {"api_base": "http://127.0.0.1:9/v1", "api_key": "sk-option-key-123",
               "azure_ad_token": "ad-token-value-456", "temperature": 0,
               "extra_headers": {"Authorization": "Bearer header-key-789", "X-Trace": "t-1"}}
    assert scrubbing.credentials_in(options) == {
        "sk-option-key-123": "api_key", "ad-token-value-456": "azure_ad_token",
        "Bearer header-key-789": "extra_headers.Authorization",
        "header-key-789": "extra_headers.Authorization"}


def test_a_record_holding_a_key_anywhere_is_written_without_it(
        fake_key: str, registry: SpecRegistry) -> None:
    record = run_episode(EPISODE, RunConfig(), registry=registry)
    record = record.model_copy(update={"error": f"gateway said {all_forms(KEY)}",
                                       "summary": f"done; {KEY}"})
    raw = record.model_dump_json()
    assert leaks(raw, KEY), "the control: the key is in the record as built"
    cleaned, line = record_line(record)
    assert leaks(line, KEY) == [] and leaks(cleaned.model_dump_json(), KEY) == []
    assert EpisodeRecord.model_validate_json(line).error == cleaned.error
    assert cleaned.error is not None and "[secret OPENAI_API_KEY]" in cleaned.error


def test_a_cut_message_keeps_no_piece_of_a_key(fake_key: str, tmp_path: Path) -> None:
    """Texts are cut to a length; a key straddling the cut is replaced before it, or half of
    it would stay."""
    error = agent_error(RuntimeError("x" * (MAX_ERROR_CHARS - 10) + KEY))
    assert KEY[:10] not in error and KEY[-10:] not in error
    provider = describe(RuntimeError("y" * 495 + KEY))
    assert KEY[:5] not in provider
    (tmp_path / "stderr").write_text(f"{KEY} and then some more text " + "z" * 380)
    tail = _tail(tmp_path / "stderr")
    assert KEY[-10:] not in tail and tail.startswith("…")


# -- where the texts come from -----------------------------------------------------------------
class EchoGateway(BaseHTTPRequestHandler):
    """A gateway that refuses the key and echoes it in its 401 body, in several forms."""

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        auth = self.headers.get("Authorization", "")
        key = auth.removeprefix("Bearer ")
        assert isinstance(self.server, EchoServer)
        self.server.seen.append(key)
        message = (f"denied {auth}; upstream said {json.dumps({'authorization': auth})}; "
                   f"basic {base64.b64encode(f'user:{key}'.encode()).decode()}; "
                   f"url {urllib.parse.quote(key, safe='')}")
        body = json.dumps({"error": {"message": message, "type": "invalid_request_error"}})
        self.send_response(401)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body.encode())

    def log_message(self, format: str, *args: object) -> None:
        pass


class EchoServer(ThreadingHTTPServer):
    """The echoing gateway on a loopback port; ``seen``: the key of every request."""

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), EchoGateway)
        self.seen: list[str] = []


@pytest.fixture
def echo_gateway() -> Iterator[EchoServer]:
    server = EchoServer()
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


def test_a_gateway_echoing_the_key_leaves_it_out_of_the_record(
        fake_key: str, registry: SpecRegistry, echo_gateway: EchoServer) -> None:
    url = f"http://127.0.0.1:{echo_gateway.server_port}/v1"
    record = run_episode(EPISODE, RunConfig(agent="litellm:openai/scripted"), registry=registry,
                         agent_options=AgentOptions(model_options={"api_base": url},
                                                    provider_retries=1))
    assert echo_gateway.seen == [KEY], "the control: the gateway got the key and echoed it"
    assert record.error is not None and "AuthenticationError" in record.error
    assert record.error.count("[secret OPENAI_API_KEY]") >= 4, record.error
    assert leaks(record_line(record)[1], KEY) == []


LEAKY_CLI = """\
import base64, json, os, sys, urllib.parse
for key in (os.environ["GATEWAY_KEY"], os.environ["MY_GATEWAY"]):
    print("auth failed for", key, json.dumps({"key": key}), repr(key),
          urllib.parse.quote(key, safe=""), base64.b64encode(("user:" + key).encode()).decode(),
          file=sys.stderr)
sys.exit(1)
"""


def test_a_harness_printing_its_keys_leaves_them_out_of_record_and_transcript(
        registry: SpecRegistry, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The adapter's key (``--model-option api_key``) and a variable it passes through
    (``passenv``, whatever its name) are printed by the CLI, which then exits 1."""
    monkeypatch.setenv("MY_GATEWAY", OTHER)
    cli = tmp_path / "leaky_cli.py"
    cli.write_text(LEAKY_CLI)
    adapter = tmp_path / "leaky.yaml"
    adapter.write_text(yaml.safe_dump({
        "name": "leaky", "model": "scripted", "passenv": ["MY_GATEWAY"],
        "env": {"GATEWAY_KEY": "{api_key}"}, "command": [sys.executable, str(cli)],
        "transcript": [{"source": "stderr"}]}))
    reports = tmp_path / "reports"
    options = AgentOptions(model_options={"api_base": "http://127.0.0.1:9/v1", "api_key": KEY},
                           reports_dir=str(reports))
    record = run_episode(EPISODE, RunConfig(agent=f"harness:command:{adapter}"),
                         registry=registry, agent_options=options)
    assert record.error is not None and "stderr: auth failed for" in record.error
    assert "[secret " in record.error, record.error
    assert leaks(record_line(record)[1], KEY, OTHER) == []
    assert record.harness is not None and record.harness.transcript is not None
    kept = [path for path in Path(record.harness.transcript).iterdir() if path.is_file()]
    assert kept, "the stderr is kept as the transcript"
    text = "".join(path.read_text() for path in kept)
    assert "auth failed for" in text and text.count("[secret ") >= 10, text
    assert leaks(text, KEY, OTHER) == []


# -- through pytest: the terminal, the records file, Allure ------------------------------------
LEAKY_AGENT = """\
import base64, json, logging, os, sys, urllib.parse

KEY = os.environ["OPENAI_API_KEY"]
FORMS = " ".join([KEY, json.dumps(KEY), repr(KEY), urllib.parse.quote(KEY, safe=""),
                  base64.b64encode(("user:" + KEY).encode()).decode()])


class Leaky:
    def run(self, session):
        print("stdout:", FORMS)
        print("stderr:", FORMS, file=sys.stderr)
        logging.getLogger("leaky").warning("log: %s", FORMS)
        raise RuntimeError("the gateway refused " + FORMS)
"""


def test_no_form_of_a_key_reaches_the_terminal_the_records_or_allure(
        project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    """An agent prints the key in every form (stdout, stderr, a log) and raises with it: the
    episode is an error whose text, captured output and Allure attachments all hold
    ``[secret OPENAI_API_KEY]`` instead."""
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    (project.path / "leaky_agent.py").write_text(LEAKY_AGENT)
    result = project.runpytest_subprocess(
        "--experiment", "small", "-k", "incident_open and lost_ack", "-p", "no:randomly",
        "--agent", "python:leaky_agent:Leaky", "--alluredir", "allure-results", "-rA")
    result.assert_outcomes(errors=1)
    terminal = result.stdout.str() + result.stderr.str()
    assert "the gateway refused [secret OPENAI_API_KEY]" in terminal, terminal[-3000:]
    assert "Captured stdout" in terminal and "Captured stderr" in terminal, terminal[-3000:]
    assert leaks(terminal, KEY) == [], terminal[-3000:]
    (record,) = [json.loads(line) for line in
                 (project.path / "reports" / "episodes.jsonl").read_text().splitlines()]
    assert "[secret OPENAI_API_KEY]" in record["error"]
    allure = list((project.path / "allure-results").iterdir())
    attached = "".join(path.read_text(errors="replace") for path in allure)
    assert "stdout: [secret OPENAI_API_KEY]" in attached, "the control: output is attached"
    for path in [*allure, *(project.path / "reports").rglob("*")]:
        if path.is_file():
            assert leaks(path.read_text(errors="replace"), KEY) == [], path


HIDDEN = {
    "DATABASE_URL": ("postgres://app:pg-pass-5c1e9a7b@db.internal:5432/app", "pg-pass-5c1e9a7b"),
    "REDIS_URL": ("redis://:redis-pass-0d3f8e21@cache.internal:6379/0", "redis-pass-0d3f8e21"),
    "SENTRY_DSN": ("https://sentrykey0a1b2c3d4e5f@o1.ingest.example/42", "sentrykey0a1b2c3d4e5f"),
    "SLACK_WEBHOOK_URL": ("https://hooks.slack.example/services/T0/B0/webhook9f8e7d6c5b4a",
                          "webhook9f8e7d6c5b4a"),
    "NPM_CONFIG__AUTH": ("bnBtLXVzZXI6bnBtLXBhc3MtN2U2ZDVj", "bnBtLXVzZXI6bnBtLXBhc3MtN2U2ZDVj"),
}
"""Credentials in variables whose names say nothing of a key: the value, and the part of it
that is the secret (a URL's password, a DSN's key, a webhook's path)."""

WARNING_AGENT = """\
import html, json, os, warnings

VALUES = [os.environ[name] for name in {names!r}] + [os.environ["OPENAI_API_KEY"]]
KEY = os.environ["OPENAI_API_KEY"]
FORMS = " ".join([KEY.encode().hex(), KEY.encode().hex().upper(), KEY.upper(),
                  "".join("\\\\u%04x" % ord(c) for c in KEY),
                  "".join("&#%d;" % ord(c) for c in KEY), html.escape(KEY)])


class Warns:
    def run(self, session):
        for value in VALUES:
            warnings.warn("agent saw " + value)
        print("stdout:", " ".join(VALUES), FORMS)
        raise RuntimeError("gave up with " + " ".join(VALUES) + " " + FORMS)
"""


def _hidden_forms() -> dict[str, str]:
    forms = {f"{name} value": value for name, (value, _) in HIDDEN.items()}
    forms |= {f"{name} secret": secret for name, (_, secret) in HIDDEN.items()}
    forms |= {"key": KEY, "key hex": KEY.encode().hex(), "key HEX": KEY.encode().hex().upper(),
              "key upper": KEY.upper(), "key \\u": "".join(f"\\u{ord(c):04x}" for c in KEY),
              "key &#": "".join(f"&#{ord(c)};" for c in KEY)}
    return forms


@pytest.mark.slow
def test_warnings_and_unnamed_credentials_reach_no_output(
        project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    """An agent warns with, prints and raises every credential — connection strings, a DSN, a
    webhook, npm's auth, and the API key hex-, upper-, ``\\u``- and entity-encoded — under
    ``-n 2``: the warnings summary, the records, JUnit and Allure hold none of them."""
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    for name, (value, _) in HIDDEN.items():
        monkeypatch.setenv(name, value)
    (project.path / "warning_agent.py").write_text(WARNING_AGENT.format(names=list(HIDDEN)))
    result = project.runpytest_subprocess(
        "--experiment", "small", "-k", "incident_open and (lost_ack or late_commit)", "-n", "2",
        "--agent", "python:warning_agent:Warns", "--alluredir", "allure-results",
        "--junitxml", "junit.xml", "-rA", "-W", "always::UserWarning")
    terminal = result.stdout.str() + result.stderr.str()
    assert "warnings summary" in terminal and "agent saw [secret" in terminal, terminal[-3000:]
    assert "[secret DATABASE_URL]" in terminal and "[secret SENTRY_DSN]" in terminal
    outputs = {"terminal": terminal}
    for path in [*(project.path / "allure-results").iterdir(), project.path / "junit.xml",
                 *(project.path / "reports").rglob("*")]:
        if path.is_file():
            outputs[str(path.relative_to(project.path))] = path.read_text(errors="replace")
    leaked = [f"{where}: {form}" for where, text in outputs.items()
              for form, secret in _hidden_forms().items() if secret in text]
    assert leaked == []


def test_credentials_in_urls_dsns_webhooks_and_auth_variables_are_known(
        monkeypatch: pytest.MonkeyPatch) -> None:
    for name, (value, _) in HIDDEN.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("HOMEPAGE_URL", "https://docs.example/limbo/getting-started")
    monkeypatch.setenv("MIRROR_URL", "https://mirror-user@pkgs.example/simple")  # no password
    text = " ".join(f"{value} | {secret}" for value, secret in HIDDEN.values())
    cleaned = scrubbing.scrub(text + " https://docs.example/limbo/getting-started "
                              "https://mirror-user@pkgs.example/simple")
    assert [name for name, (_, secret) in HIDDEN.items() if secret in cleaned] == []
    assert cleaned.endswith(" https://docs.example/limbo/getting-started "
                            "https://mirror-user@pkgs.example/simple")
    for name in HIDDEN:
        assert f"[secret {name}]" in cleaned, name


@pytest.mark.parametrize("form", ["hex", "HEX", "upper", "\\u", "&#", "&#x"])
def test_a_key_hex_cased_escaped_or_as_entities_is_replaced(fake_key: str, form: str) -> None:
    encoded = {"hex": KEY.encode().hex(), "HEX": KEY.encode().hex().upper(),
               "upper": KEY.upper(), "\\u": "".join(f"\\u{ord(c):04x}" for c in KEY),
               "&#": "".join(f"&#{ord(c)};" for c in KEY),
               "&#x": "".join(f"&#x{ord(c):x};" for c in KEY)}[form]
    cleaned = scrubbing.scrub(f"<p>{encoded}</p>")
    assert cleaned == "<p>[secret OPENAI_API_KEY]</p>"
