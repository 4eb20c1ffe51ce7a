"""``limbo guard``: the benchmark's guard in front of a real server (and of Limbo's own sandbox,
where ``--condition guard`` gives the answer it must match)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from guard_equivalence import compare, sandbox_guard_config
from realkit import ADA, drive_policy, limbo, proxy_command, report_json

from limbo_plugin.conditions.vbr import BLOCKED
from limbo_plugin.records import EpisodeKey

LOST_ACK = EpisodeKey(template="incident_open", instance=0, focal_write="ticket",
                      fault_mode="timeout_post")
LATE = EpisodeKey(template="release_announcement", instance=0, focal_write="email",
                  fault_mode="timeout_late")
KEYED_LOST_ACK = EpisodeKey(template="cross_post", instance=0, focal_write="post_mastodon",
                            fault_mode="timeout_post")


@pytest.fixture(scope="module")
def sandbox_config(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("guard") / "sandbox-guard.json"
    path.write_text(json.dumps(sandbox_guard_config()))
    return path


@pytest.mark.slow
@pytest.mark.parametrize("key", [LOST_ACK, LATE, KEYED_LOST_ACK],
                         ids=["lost_ack", "late_commit", "keyed_lost_ack"])
def test_limbo_guard_gives_the_records_of_condition_guard(key, sandbox_config) -> None:
    inside, outside = compare(key, sandbox_config)
    inside.pop("behaviour"), outside.pop("behaviour")
    assert inside["fired"] is True
    assert outside == inside
    if key.fault_mode == "timeout_post":  # a read-back or a key settles a lost ack
        assert inside["duplicates"] == 0


def _guarded(tmp_path: Path, memory: tuple[list[str], dict[str, str]], config: Path | None,
             mode: str = "timeout_post") -> tuple:
    server, env = memory
    log = tmp_path / "proxy.jsonl"
    extra = ("--config", str(config)) if config else ()
    behind = proxy_command(mode, log, server, *extra)
    guard = ["python", "-m", "limbo_plugin.cli", "guard",
             *(["--config", str(config)] if config else []), "--", *behind]
    done = drive_policy("blind_retry", guard, [("create_entities", ADA)], env=env)
    return done, report_json(log)["create_entities"]


@pytest.mark.slow
def test_in_front_of_the_guard_blind_retry_is_verified_not_duplicated(
        tmp_path, memory, memory_verify) -> None:
    done, counts = _guarded(tmp_path, memory, memory_verify)
    assert (counts["faulted"], counts["duplicated"], counts["verified"]) == (1, 0, 1)
    first, retry = done.calls[0][2], done.calls[1][2]
    assert first.error_type == "timeout" and "harness_note" in first.content  # annotate
    assert not retry.is_error and "harness_note" in retry.content  # answered from read-back
    assert retry.content["name"] == "Ada"


@pytest.mark.slow
def test_without_a_read_back_the_guard_blocks_the_retry(tmp_path, memory) -> None:
    done, counts = _guarded(tmp_path, memory, None)  # the audit found no read-back to run
    assert (counts["faulted"], counts["duplicated"], counts["left"]) == (1, 0, 1)
    refused = [answer for name, _, answer in done.calls if name == "create_entities"][1]
    assert refused.error_type == BLOCKED and "will not send this identical" in refused.text()
    assert "escalate_to_human" not in refused.text()  # server-memory lists none


def test_guard_start_errors_are_one_line(tmp_path) -> None:
    done = limbo("guard", "--", "python", "-c", "import sys; sys.exit('no credentials')")
    assert done.returncode == 2 and done.stderr.count("\n") == 1
    assert "cannot guard" in done.stderr and "no credentials" in done.stderr
    bad = tmp_path / "guard.yaml"
    bad.write_text("tools:\n  - tool: x\n    writes: maybe\n")
    for option in ("--config", "--guard-config"):  # the second: for the Inspector CLI
        done = limbo("guard", option, str(bad), "--", "python", "-c", "pass")
        assert done.returncode == 2 and str(bad) in done.stderr and "writes" in done.stderr


CROSS_POST = EpisodeKey(template="cross_post", instance=0, focal_write="baseline",
                        fault_mode="none")


@pytest.mark.slow
@pytest.mark.parametrize("guarded", [False, True], ids=["bare", "guarded"])
def test_proxy_injected_duplicates_vanish_where_keys_or_read_backs_exist(
        guarded: bool, sandbox_config: Path, tmp_path: Path) -> None:
    """blind_retry on cross_post with every write's first call answered by a timeout after it
    committed (``limbo proxy --inject timeout_post`` in front of the sandbox server): X has
    neither key nor read-back, Mastodon takes a key, email can be read back after its lag."""
    from guard_equivalence import GuardedPolicy
    from realkit import REGISTRY

    from limbo_plugin.episode import run_episode
    from limbo_plugin.runconfig import RunConfig

    log = tmp_path / "proxy.jsonl"
    through = ["-m", "limbo_plugin.cli", "proxy", "--inject", "timeout_post", "--log",
               str(log), "--"]
    agent = GuardedPolicy("blind_retry", sandbox_config if guarded else None, through)
    record = run_episode(CROSS_POST, RunConfig(agent="mcp:blind_retry"), registry=REGISTRY,
                         agent=agent)
    counts = report_json(log)
    rows = {t: (c["faulted"], c["duplicated"], c["keyed"], c["verified"], c["left"])
            for t, c in counts.items() if c["intents"]}
    if not guarded:
        assert rows == {"x_publish": (1, 1, 0, 0, 0), "mastodon_publish": (1, 1, 0, 0, 0),
                        "email_send": (1, 1, 0, 0, 0)}
        assert record.duplicates == 3
    else:
        assert rows == {"x_publish": (1, 0, 0, 0, 1),        # blocked: escalate first
                        "mastodon_publish": (1, 0, 1, 0, 0),  # the pinned key deduplicates
                        "email_send": (1, 0, 0, 1, 0)}        # read back after its lag
        assert record.duplicates == 0


def test_the_guides_codex_entry_makes_the_guard_required() -> None:
    """Without ``required = true`` ``codex exec`` may start before the guard has listed its tools
    and be offered none: the MCP server guide's snippet must carry it, and parse as TOML."""
    import re
    import tomllib

    guide = (Path(__file__).resolve().parents[2] / "docs" / "how-to" / "mcp-server.md")
    section = guide.read_text(encoding="utf-8").split("## `limbo guard`", 1)[1]
    snippet = re.search(r"```toml\n(.*?)```", section, re.DOTALL)
    assert snippet is not None
    entry = tomllib.loads(snippet.group(1))["mcp_servers"]["memory"]
    assert entry["required"] is True and entry["args"][0] == "guard"
    assert "--guard-config" in section  # the Inspector CLI takes --config for itself


def test_the_guard_keeps_the_output_schema_of_every_tool_it_only_forwards() -> None:
    """A client validates structured answers against a tool's output schema; the guard drops
    that schema only for the writes it acts on (where it may answer with a record or a refusal
    of its own), and lists every other tool exactly as the upstream did."""
    import mcp_types as types

    from limbo_plugin.realmcp.config import GuardConfig, definitions
    from limbo_plugin.realmcp.guard import guarded_listing

    schema = {"type": "object", "properties": {"n": {"type": "integer"}}}
    read = types.Tool(name="count_rows", description="Counts the rows.",
                      input_schema={"type": "object"}, output_schema=schema,
                      annotations=types.ToolAnnotations(read_only_hint=True))
    write = types.Tool(name="insert_row", description="Inserts a row.",
                       input_schema={"type": "object"}, output_schema=schema,
                       annotations=types.ToolAnnotations(read_only_hint=False,
                                                         destructive_hint=False,
                                                         idempotent_hint=False))
    listed = [read, write]
    listing = guarded_listing(listed, definitions(listed, GuardConfig()))
    assert listing[0] == read  # unchanged, its schema included
    assert listing[1].output_schema is None and listing[1].name == "insert_row"
