"""``limbo plan``: what an experiment will cost before it is run.

For each agent of the experiment (or the ``--agent`` given): the episodes it would run, the model
calls and tokens they are expected to take, and the cost at the model's price in litellm's
bundled price map. Calls and tokens per episode come from the paper (§6.5: about 12k tokens per
minimal-scaffold episode and 153k per Codex CLI episode; Table 7: 8.7 tool calls per episode,
one model turn each plus the final one), or from ``--tokens-per-episode``. The prompt/completion
split of those tokens is not in the paper: ``--completion-share`` sets it (default 0.08, an
assumption: a scaffold episode re-sends its growing conversation each turn, so prompt tokens
dominate). Scripted and MCP agents make no model call.

``--cassette`` replaces the paper's figures with the user's own: a records file of an earlier
(pilot) run gives calls and prompt and completion tokens per episode and fault mode, a cassette
directory tokens per call (:mod:`limbo_plugin.planning.measured`). The completion share is
then measured, not assumed.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from typing import Any

from limbo_plugin.agents.registry import calls_model, harness_of, model_of
from limbo_plugin.planning.measured import CassetteUsage, Estimate, RecordedUsage, load_usage

TOKENS_PER_EPISODE = {"minimal": 12_000, "codex": 153_000}
"""Paper §6.5; the other harnesses' consumption is not reported."""
MODEL_CALLS_PER_EPISODE = 9.7
"""Table 7: 8.7 tool calls per vanilla episode, a model turn each, and the turn that finishes."""
COMPLETION_SHARE = 0.08


@dataclass(frozen=True)
class AgentBudget:
    agent: str
    episodes: int
    model_calls: float | None
    tokens: float | None
    cost_usd: float | None
    note: str = ""


def budget(agent: str, episodes: int, tokens_per_episode: float | None,
           completion_share: float) -> AgentBudget:
    """The paper's figures (or ``--tokens-per-episode``), split by ``completion_share``."""
    if not calls_model(agent):
        return AgentBudget(agent, episodes, 0.0, 0.0, 0.0, "no model calls")
    per = tokens_per_episode or TOKENS_PER_EPISODE.get(harness_of(agent))
    if per is None:
        return AgentBudget(agent, episodes, None, None, None, "tokens per episode unknown for "
                           f"{harness_of(agent)}: give --tokens-per-episode")
    tokens = per * episodes
    calls = MODEL_CALLS_PER_EPISODE * episodes if harness_of(agent) == "minimal" else None
    return priced(AgentBudget(agent, episodes, calls, tokens, None),
                  tokens * (1 - completion_share), tokens * completion_share)


def measured_budget(agent: str, modes: list[str], usage: RecordedUsage | CassetteUsage,
                    tokens_per_episode: float | None, completion_share: float) -> AgentBudget:
    """From the user's own recording where it has the agent (or its harness), else the paper's
    figures, saying so."""
    if not calls_model(agent):
        return AgentBudget(agent, len(modes), 0.0, 0.0, 0.0, "no model calls")
    estimate: Estimate | None
    if isinstance(usage, RecordedUsage):
        estimate = usage.estimate(agent, modes)
    else:
        estimate = usage.estimate(agent, len(modes), MODEL_CALLS_PER_EPISODE)
    if estimate is None:
        fallback = budget(agent, len(modes), tokens_per_episode, completion_share)
        note = f"not in {usage.path}: the paper's figures"
        return AgentBudget(fallback.agent, fallback.episodes, fallback.model_calls,
                           fallback.tokens, fallback.cost_usd,
                           f"{note}; {fallback.note}" if fallback.note else note)
    return priced(AgentBudget(agent, len(modes), estimate.model_calls,
                              estimate.prompt_tokens + estimate.completion_tokens, None,
                              estimate.source),
                  estimate.prompt_tokens, estimate.completion_tokens)


def priced(row: AgentBudget, prompt_tokens: float, completion_tokens: float) -> AgentBudget:
    """``row`` with its cost at the model's price in litellm's map (``None``: unknown)."""
    from limbo_plugin.agents.provider import token_prices

    prices = token_prices(model_of(row.agent))
    if prices is None:
        note = f"no known price for {model_of(row.agent)}"
        return AgentBudget(row.agent, row.episodes, row.model_calls, row.tokens, None,
                           f"{row.note}; {note}" if row.note else note)
    cost = prompt_tokens * prices[0] + completion_tokens * prices[1]
    return AgentBudget(row.agent, row.episodes, row.model_calls, row.tokens, cost, row.note)


def selected_ids(args: argparse.Namespace, specs: Any) -> set[str]:
    """The ids of the episodes a run with ``-k``, ``-m`` and ``--limbo-sample`` would collect:
    asked of pytest itself (``--collect-only`` in a subprocess, in an empty directory), so the
    plan selects exactly as the run will."""
    import subprocess
    import sys
    import tempfile

    from limbo_plugin.errors import UsageError

    command = [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider",
               f"--limbo-specs={specs}", "--experiment", args.experiment]
    if args.agent:
        command += ["--agent", args.agent]
    if args.keyword:
        command += ["-k", args.keyword]
    if args.markexpr:
        command += ["-m", args.markexpr]
    if args.sample:
        command.append(f"--limbo-sample={args.sample}")
    with tempfile.TemporaryDirectory(prefix="limbo-plan-") as empty:
        done = subprocess.run(command, cwd=empty, capture_output=True, text=True, check=False)
    if done.returncode not in (0, 5):
        lines = [line.removeprefix("ERROR: ") for line in
                 (done.stderr + "\n" + done.stdout).splitlines() if line.startswith("ERROR: ")]
        raise UsageError(lines[0] if lines else f"selecting the episodes failed (pytest "
                         f"--collect-only exited {done.returncode})")
    return {line.rpartition("::")[2] for line in done.stdout.splitlines() if "::" in line}


def run_command(args: argparse.Namespace, registry: Any) -> int:
    from limbo_plugin.errors import UsageError
    from limbo_plugin.experiments import find_experiment, load_experiment
    from limbo_plugin.runconfig import RunConfig

    if not 0.0 <= args.completion_share <= 1.0:
        raise UsageError(f"--completion-share {args.completion_share}: give a share in [0, 1]")
    if args.cassette is not None and args.tokens_per_episode is not None:
        raise UsageError("--cassette and --tokens-per-episode both set the tokens per episode: "
                         "give one")
    usage = load_usage(args.cassette) if args.cassette is not None else None
    experiment = load_experiment(find_experiment(args.experiment, registry), registry)
    if args.agent:  # a mistyped agent is said, not priced at $0
        from limbo_plugin.agents.registry import check_agent

        check_agent(args.agent, installed=False)
    overrides = {"agent": args.agent} if args.agent else {}
    episodes = experiment.episodes(registry, overrides, RunConfig())
    if args.keyword or args.markexpr or args.sample:
        chosen = selected_ids(args, registry.root)
        episodes = [e for e in episodes if e.id in chosen]
    modes: dict[str, list[str]] = {}
    for episode in episodes:
        modes.setdefault(episode.config.agent, []).append(episode.key.fault_mode)
    if usage is None:
        rows = [budget(agent, len(m), args.tokens_per_episode, args.completion_share)
                for agent, m in sorted(modes.items())]
    else:
        rows = [measured_budget(agent, m, usage, args.tokens_per_episode, args.completion_share)
                for agent, m in sorted(modes.items())]
    selection = " ".join(f"{flag} {value!r}" for flag, value in (
        ("-k", args.keyword), ("-m", args.markexpr), ("--sample", args.sample)) if value)
    print(f"Experiment {experiment.name}: {len(episodes)} episode(s)"
          + (f" selected by {selection}." if selection else "."))
    for row in rows:
        calls = "—" if row.model_calls is None else f"{row.model_calls:,.0f}"
        tokens = "—" if row.tokens is None else f"{row.tokens:,.0f}"
        cost = "unknown" if row.cost_usd is None else f"${row.cost_usd:,.2f}"
        note = f" ({row.note})" if row.note else ""
        print(f"  {row.agent}: {row.episodes} episodes, ~{calls} model calls, ~{tokens} tokens,"
              f" {cost}{note}")
    known = [r.cost_usd for r in rows if r.cost_usd is not None]
    unknown = sum(1 for r in rows if r.cost_usd is None)
    total = f"${sum(known):,.2f}" + (f" plus {unknown} agent(s) of unknown cost" if unknown
                                      else "")
    if usage is None:
        print(f"Total: {total}. Tokens per episode from the paper (§6.5) unless given; "
              f"completion share {args.completion_share:.2f}.")
    else:
        print(f"Total: {total}. Usage from {usage.path} where it has the agent or its "
              "harness; prices from litellm's map.")
    return 0
