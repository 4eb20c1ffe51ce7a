"""Record/replay: a recorded run replays offline into identical records, safely under
concurrent writers."""

from __future__ import annotations

import itertools
import json
import multiprocessing
import subprocess
import sys
import textwrap
import threading
from pathlib import Path
from typing import Any

import pytest
from scaffoldkit import FAULT_FREE, MODEL, WORLDS, run_model

from limbo_plugin.agents.cassette import Cassette, request_key
from limbo_plugin.agents.provider import ModelTurn
from limbo_plugin.spec.registry import SpecRegistry
from limbo_plugin.testing.models import PolicyModel, finish_call
from limbo_plugin.testing.openai_server import ChatRequest, OpenAIServer, Reply, ScriptedToolCall


def _turn(text: str) -> ModelTurn:
    return ModelTurn(message={"role": "assistant", "content": text}, prompt_tokens=3,
                     completion_tokens=1)


class _SamplingModel:
    """Answers the first turn with a different wait each time, like a model at temperature 1."""

    def __init__(self) -> None:
        self._counter = itertools.count(1)
        self._lock = threading.Lock()

    def __call__(self, request: ChatRequest) -> Reply:
        if request.turn == 0:
            with self._lock:
                seconds = next(self._counter)
            return Reply(tool_calls=[ScriptedToolCall("wait", {"seconds": seconds})])
        return Reply(tool_calls=[finish_call()])


def test_record_then_replay_offline_gives_identical_records(
        tmp_path: Path, openai_server: OpenAIServer, registry: SpecRegistry) -> None:
    keys = WORLDS[:3]  # one template: the episodes share a conversation prefix
    tasks = [registry.template(keys[0].template).instantiate(0)]
    openai_server.model = PolicyModel("blind_retry", tasks=tasks, registry=registry)
    cassette = str(tmp_path / "cassette")
    recorded = [run_model(registry, k, openai_server, cassette=cassette, cassette_mode="record")
                for k in keys]
    calls = len(openai_server.requests)
    assert all(r.error is None for r in recorded)
    entries = list(Path(cassette).glob("*/*.json"))
    turns = sum(r.usage.model_calls for r in recorded if r.usage)
    # the shared prefix was asked once and stored once; later episodes reused it
    assert len(entries) == calls < turns

    openai_server.stop()  # replay must not need the network
    replayed = [run_model(registry, k, openai_server, cassette=cassette, cassette_mode="replay")
                for k in keys]
    assert [r.model_dump() for r in replayed] == [r.model_dump() for r in recorded]
    # auto mode finds every entry as well, still without a server
    again = run_model(registry, keys[1], openai_server, cassette=cassette, cassette_mode="auto")
    assert again.model_dump() == recorded[1].model_dump()


def test_sampling_model_shared_prefix_replays_what_each_episode_saw(
        registry: SpecRegistry, tmp_path: Path, openai_server: OpenAIServer) -> None:
    openai_server.model = _SamplingModel()
    cassette = str(tmp_path / "c")
    recorded = [run_model(registry, k, openai_server, cassette=cassette, cassette_mode="record")
                for k in WORLDS[:2]]
    # both episodes asked the same first question; the second adopted the first answer
    assert [r.trace[0].arguments for r in recorded] == [{"seconds": 1}] * 2
    openai_server.stop()
    replayed = [run_model(registry, k, openai_server, cassette=cassette, cassette_mode="replay")
                for k in WORLDS[:2]]
    assert [r.model_dump() for r in replayed] == [r.model_dump() for r in recorded]


def test_replay_miss_is_an_infrastructure_error_naming_the_key(
        registry: SpecRegistry, tmp_path: Path, openai_server: OpenAIServer) -> None:
    openai_server.model = _SamplingModel()
    cassette = str(tmp_path / "c")
    run_model(registry, FAULT_FREE, openai_server, cassette=cassette, cassette_mode="record")
    requests = len(openai_server.requests)
    record = run_model(registry, FAULT_FREE, openai_server, condition="aware", cassette=cassette,
                       cassette_mode="replay")
    assert len(openai_server.requests) == requests  # no network in replay mode
    assert record.error is not None and "has no recorded answer for this model call" in \
        record.error
    assert ("Record it by running the same selection with --limbo-cassette-mode auto and the "
            "model reachable; --limbo-resume alone cannot replay it") in record.error
    prefix = record.error.split("model call (")[1].split("…")[0]
    assert len(prefix) == 12 and not list(Path(cassette).glob(f"{prefix[:2]}/{prefix}*.json"))


def test_record_mode_rerecords_old_runs_and_auto_keeps_them(tmp_path: Path) -> None:
    old = Cassette(tmp_path, "record", run_id="run-1")
    assert old.lookup("ab" * 32) is None
    assert old.publish("ab" * 32, _turn("first"), {}).message["content"] == "first"
    # the same run adopts what it stored, even if a racing worker got another answer
    assert old.publish("ab" * 32, _turn("second"), {}).message["content"] == "first"
    adopted = old.lookup("ab" * 32)
    assert adopted is not None and adopted.message["content"] == "first"
    # a later recording run replaces it; auto and replay use whatever is stored
    new = Cassette(tmp_path, "record", run_id="run-2")
    assert new.lookup("ab" * 32) is None
    assert new.publish("ab" * 32, _turn("third"), {}).message["content"] == "third"
    for mode in ("auto", "replay"):
        stored = Cassette(tmp_path, mode).lookup("ab" * 32)
        assert stored is not None and stored.message["content"] == "third"
    assert Cassette(tmp_path, "auto").lookup("cd" * 32) is None


def test_keys_ignore_transport_options_and_entries_hold_no_secrets(
        registry: SpecRegistry, tmp_path: Path, openai_server: OpenAIServer) -> None:
    messages = [{"role": "user", "content": "hi"}]
    base = request_key(MODEL, messages, [], {"temperature": 0, "api_key": "sk-a",
                                             "api_base": "http://a"})
    assert base == request_key(MODEL, messages, [], {"temperature": 0, "api_key": "sk-b",
                                                     "timeout": 5, "extra_headers": {"x": "y"}})
    assert base != request_key(MODEL, messages, [], {"temperature": 1})
    assert base != request_key("openai/other", messages, [], {"temperature": 0})
    openai_server.model = _SamplingModel()
    cassette = tmp_path / "c"
    run_model(registry, FAULT_FREE, openai_server, cassette=str(cassette), cassette_mode="record")
    text = "".join(p.read_text() for p in cassette.glob("*/*.json"))
    assert text and "sk-limbo-local" not in text and openai_server.base_url not in text


def test_a_cassette_stores_only_output_options_never_a_credential(
        registry: SpecRegistry, tmp_path: Path, openai_server: OpenAIServer) -> None:
    """An allow-list, not a deny-list: options Limbo has never heard of stay out too."""
    secrets = {"azure_ad_token": "SECRET-azure", "client_secret": "SECRET-client",
               "aws_secret_access_key": "SECRET-aws", "vertex_credentials": "SECRET-vertex",
               "my_gateway_password": "SECRET-custom"}
    openai_server.model = _SamplingModel()
    cassette = tmp_path / "c"
    run_model(registry, FAULT_FREE, openai_server, cassette=str(cassette),
              cassette_mode="record",
              model_options=openai_server.model_options(temperature=0, seed=7, **secrets))
    entries = [json.loads(p.read_text()) for p in cassette.glob("*/*.json")]
    assert entries and "SECRET" not in json.dumps(entries)
    assert {json.dumps(e["request"]["options"], sort_keys=True) for e in entries} == {
        '{"seed": 7, "temperature": 0}'}
    messages = [{"role": "user", "content": "hi"}]
    assert request_key(MODEL, messages, [], {"seed": 7}) == request_key(
        MODEL, messages, [], {"seed": 7, "client_secret": "another"})


def _publisher(path: str, worker: int, keys: list[str], queue: Any) -> None:
    cassette = Cassette(path, "record", run_id="shared-run")
    got = {key: cassette.publish(key, _turn(f"worker {worker}"), {"worker": worker})
           .message["content"] for key in keys}
    queue.put(got)


def test_concurrent_workers_agree_on_every_entry(tmp_path: Path) -> None:
    keys = [f"{i:064x}" for i in range(40)]
    context = multiprocessing.get_context("fork")
    queue = context.Queue()
    workers = [context.Process(target=_publisher, args=(str(tmp_path), w, keys, queue))
               for w in range(4)]
    for worker in workers:
        worker.start()
    results = [queue.get(timeout=300) for _ in workers]  # hang guards, minutes
    for worker in workers:
        worker.join(timeout=300)
        assert worker.exitcode == 0
    stored = {key: json.loads(Cassette(tmp_path).entry_path(key).read_text())
              ["response"]["message"]["content"] for key in keys}
    for got in results:
        assert got == stored  # every worker uses what ended up on disk
    assert not list(tmp_path.glob("*/*.tmp"))


@pytest.mark.slow
def test_replay_needs_no_litellm_and_the_plugin_does_not_import_it(
        registry: SpecRegistry, tmp_path: Path, openai_server: OpenAIServer) -> None:
    openai_server.model = _SamplingModel()
    cassette = str(tmp_path / "c")
    recorded = run_model(registry, FAULT_FREE, openai_server, cassette=cassette,
                         cassette_mode="record")
    openai_server.stop()
    script = textwrap.dedent(f"""
        import json, sys
        import limbo_plugin.plugin, limbo_plugin.agents, limbo_plugin.agents.scaffold
        assert "litellm" not in sys.modules, "imported at plugin import"
        from limbo_plugin.agents.options import AgentOptions
        from limbo_plugin.episode import run_episode
        from limbo_plugin.records import EpisodeKey
        from limbo_plugin.runconfig import RunConfig
        from limbo_plugin.spec.registry import SpecRegistry
        key = EpisodeKey.model_validate_json({FAULT_FREE.model_dump_json()!r})
        registry = SpecRegistry.load({str(registry.root)!r})
        record = run_episode(key, RunConfig(agent="litellm:{MODEL}"), registry=registry,
                             agent_options=AgentOptions(
            cassette={cassette!r}, cassette_mode="replay",
            model_options={{"api_base": "http://127.0.0.1:9/v1"}}))
        assert "litellm" not in sys.modules, "imported for a replay"
        print(record.model_dump_json())
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    replayed = json.loads(done.stdout.strip().splitlines()[-1])
    assert replayed == json.loads(recorded.model_dump_json())


def test_a_cassette_keeps_no_form_of_a_key_the_model_echoed(
        tmp_path: Path, openai_server: OpenAIServer, registry: SpecRegistry,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Cassettes are committed and shared: a gateway or model echoing the key (plainly and in
    base64, in its text and in a tool call's arguments) leaves ``[secret …]`` in every entry,
    and the recording episode saw the same scrubbed answer that replay gives."""
    import base64

    key = "sk-limbo-cassette-echo-5be1f0c2"
    monkeypatch.setenv("OPENAI_API_KEY", key)
    encoded = base64.b64encode(key.encode()).decode()

    def echoing(request: ChatRequest) -> Reply:
        if request.turn == 0:
            return Reply(content=f"your key is {key} ({encoded})",
                         tool_calls=[ScriptedToolCall("wait", {"seconds": 1, "note": key})])
        return Reply(tool_calls=[finish_call()])

    openai_server.model = echoing
    cassette = tmp_path / "cassette"
    recorded = run_model(registry, FAULT_FREE, openai_server, cassette=str(cassette),
                         cassette_mode="record")
    assert recorded.error is None and openai_server.requests
    files = [p for p in cassette.rglob("*") if p.is_file()]
    assert len([p for p in files if p.suffix == ".json"]) == 2
    written = b"".join(p.read_bytes() for p in files)
    assert b"[secret OPENAI_API_KEY]" in written  # the control: the echo was stored
    for form in (key, encoded.rstrip("="), key.upper(), key.encode().hex()):
        assert form.encode() not in written, form
    replayed = run_model(registry, FAULT_FREE, openai_server, cassette=str(cassette),
                         cassette_mode="replay")
    assert replayed.model_dump(exclude={"run_id"}) == recorded.model_dump(exclude={"run_id"})
