"""Scripted reference policies: the embedded default agent, needing no model.

Each follows the template's reference plan and differs only in how it recovers from an error
(SPEC §6.1). Their outcomes are predicted exactly by the paper's propositions, which is what the
validity suite checks:

- ``blind_retry``: re-issue the identical request on any error; never sends a key.
- ``verify_first``: on an ambiguous error wait out the documented lag, read back, re-issue only if
  absent (escalate where there is no read-back); sends no keys, even where the contract accepts
  one, so it is the read-back-only policy of Proposition 1 on every write.
- ``same_key``: one key per intent on every keyable write, re-issued with that key until
  acknowledged; falls back to ``verify_first`` on writes without key support.
- ``escalate_first``: escalate on any ambiguous error and follow the operator; sends no keys.
- ``no_retry``: the twin of ``blind_retry`` that never re-issues by itself: on an ambiguous error
  it notes the operation as uncertain and moves on (the baseline that isolates what a
  transparent retry layer below the agent does, e.g. ``sdk_retry``).

All of them wait out ``retry_after_s`` and re-send after an explicit 429/503/outage refusal, and
read a drifted (versioned) success body as the success it is.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from limbo_plugin.agents.base import AgentSession
from limbo_plugin.contracts import ToolDefinition
from limbo_plugin.readback import queries, unwrap
from limbo_plugin.templating import TemplateError, render
from limbo_plugin.toolapi import ToolResult, canonical_json

POLICIES = ("blind_retry", "verify_first", "same_key", "escalate_first", "no_retry")
DESCRIPTIONS = {
    "blind_retry": "re-issues the identical request on any error; never sends a key",
    "verify_first": "on an ambiguous error waits out the documented lag and reads back; "
                    "re-issues only if absent; sends no keys (the default agent)",
    "same_key": "one idempotency key per intent on every keyable write, re-sent until "
                "acknowledged; verify_first where no key is accepted",
    "escalate_first": "escalates any ambiguous error and follows the operator; sends no keys",
    "no_retry": "never re-issues by itself: notes the operation as uncertain and moves on",
}
"""One line per policy for ``limbo list policies`` (the module docstring has the detail)."""
MAX_RESENDS = 8
MAX_ESCALATIONS = 10
DEFAULT_BACKOFF_S = 30
UNKNOWN = "(unknown)"


class ScriptedAgent:
    """A scripted reference policy (see the module docstring)."""

    def __init__(self, policy: str) -> None:
        if policy not in POLICIES:
            raise ValueError(f"unknown scripted policy {policy!r}; valid: {', '.join(POLICIES)}")
        self.policy = policy
        self.name = f"scripted:{policy}"

    def run(self, session: AgentSession) -> None:
        _PlanRunner(session, self.policy).execute()


@dataclass
class _PlanRunner:
    session: AgentSession
    policy: str
    results: dict[str, Any] = field(default_factory=dict)
    uncertain: list[str] = field(default_factory=list)

    # -- the plan ------------------------------------------------------------------------------
    def execute(self) -> None:
        task = self.session.shared_task
        for step in task.plan:
            if step.items is None:
                self.results[step.id] = self._step(step.id, step.tool, step.args, {})
            else:
                self.results[step.id] = [
                    self._step(f"{step.id}[{i}]", step.tool, step.args,
                               {"item": item, "index": i})
                    for i, item in enumerate(step.items, 1)
                ]
        status = "partial" if self.uncertain else "completed"
        summary = (f"Ran {len(task.plan)} plan steps of {task.template}."
                   if not self.uncertain else
                   f"Ran the plan of {task.template}; {len(self.uncertain)} operation(s) have an "
                   "unknown outcome.")
        self.session.call("finish", {"status": status, "summary": summary,
                                     "uncertain_operations": self.uncertain})

    def _context(self, extra: dict[str, Any]) -> dict[str, Any]:
        return {**self.session.shared_task.params, "steps": self.results, **extra}

    def _step(self, label: str, tool_template: str, args_template: dict[str, Any],
              extra: dict[str, Any]) -> Any:
        ctx = self._context(extra)
        tool = str(render(tool_template, ctx))
        args = _render_lenient(args_template, ctx)
        definition = self.session.shared_tool(tool)
        if definition is None:
            self.uncertain.append(f"{label}: tool {tool} is not available")
            return None
        if self._uses_keys(definition):
            assert definition.contract.key_param is not None
            args[definition.contract.key_param] = intent_key(self.policy, definition, args)
        return self._send(label, definition, args)

    def _uses_keys(self, definition: ToolDefinition) -> bool:
        return self.policy == "same_key" and definition.accepts_key and definition.is_write

    # -- sending and recovering ----------------------------------------------------------------
    def _send(self, label: str, definition: ToolDefinition, args: dict[str, Any]) -> Any:
        for _ in range(MAX_RESENDS):
            result = self.session.call(definition.name, args)
            if not result.is_error:
                return unwrap(result.content)
            if result.is_explicit_refusal:
                self.session.call("wait", {"seconds": _wait_seconds(result)})
                continue
            if result.is_ambiguous:
                recovered = self._recover(label, definition, args)
                if recovered is not _RESEND:
                    return recovered
                continue
            self.uncertain.append(f"{label}: {definition.name} was refused: "
                                  f"{_message(result)}")
            return None
        self.uncertain.append(f"{label}: {definition.name} did not succeed after "
                              f"{MAX_RESENDS} attempts")
        return None

    def _recover(self, label: str, definition: ToolDefinition, args: dict[str, Any]) -> Any:
        """After an ambiguous error: a result, or ``_RESEND`` to send the request again."""
        if self.policy == "blind_retry":
            return _RESEND
        if self.policy == "no_retry":
            self.uncertain.append(f"{label}: {definition.name} outcome unknown (not retried)")
            return None
        if self.policy == "escalate_first":
            return self._escalate(label, definition, args)
        if self.policy == "same_key" and self._uses_keys(definition):
            return _RESEND
        return self._verify(label, definition, args)

    def _verify(self, label: str, definition: ToolDefinition, args: dict[str, Any]) -> Any:
        contract = definition.contract
        if contract.read_back is None:
            return self._escalate(label, definition, args)
        if contract.visibility_lag_s > 0:
            self.session.call("wait", {"seconds": contract.visibility_lag_s})
        found: list[Any] = []
        for query in queries(contract.read_back, args):
            result = self.session.call(query.tool, query.arguments)
            if result.is_error:  # cannot verify: be conservative and ask
                return self._escalate(label, definition, args)
            found.append(query.find(result.content))
        batch = contract.batch_field
        if batch is None:
            return found[0] if found[0] is not None else _RESEND
        missing = [row for row, hit in zip(args[batch], found, strict=True) if hit is None]
        present = [hit["id"] for hit in found if hit is not None]
        if not missing:
            return {"ids": present, "inserted": len(present)}
        if contract.key_param and args.get(contract.key_param):
            return _RESEND  # the service resumes a keyed batch where it stopped
        rest = self._send(f"{label} (missing rows)", definition, {**args, batch: missing})
        return {"ids": present + list((rest or {}).get("ids", [])),
                "inserted": len(present) + len(missing)}

    def _escalate(self, label: str, definition: ToolDefinition, args: dict[str, Any]) -> Any:
        message = (f"My call {definition.name} {canonical_json(args)} returned an error or "
                   "timed out. Did it take effect?")
        for _ in range(MAX_ESCALATIONS):
            answer = self.session.call("escalate_to_human", {"message": message})
            operation = _operation_for(answer, definition.name, args)
            if operation is None:
                self.uncertain.append(f"{label}: {definition.name} outcome unknown "
                                      "(no answer from the operator)")
                return None
            outcome = operation.get("outcome")
            if outcome == "committed":
                records = operation.get("records") or [{"id": i} for i in
                                                       operation.get("record_ids", [])]
                if definition.contract.batch_field:
                    return {"ids": [r.get("id") for r in records], "inserted": len(records)}
                return records[0] if records else {}
            if outcome == "not_executed":
                return _RESEND
            if outcome == "partially_executed":
                batch = definition.contract.batch_field
                done = int(operation.get("rows_done") or 0)
                assert batch is not None
                rest = self._send(f"{label} (remaining rows)", definition,
                                  {**args, batch: args[batch][done:]})
                ids = list(operation.get("record_ids", [])) + list((rest or {}).get("ids", []))
                return {"ids": ids, "inserted": len(args[batch])}
            # still in flight: it will complete; ask again later rather than re-send
        self.uncertain.append(f"{label}: {definition.name} still in flight")
        return None


class _Resend:
    def __repr__(self) -> str:
        return "RESEND"


_RESEND: Any = _Resend()


def intent_key(policy: str, definition: ToolDefinition, args: dict[str, Any]) -> str:
    """One stable key per intent: the same write always carries the same key."""
    return f"{policy}-{definition.intent_digest(args)[:24]}"


def _operation_for(answer: ToolResult, tool: str, args: dict[str, Any]
                   ) -> dict[str, Any] | None:
    operations = answer.content.get("operations") if not answer.is_error else None
    matching = [op for op in operations or [] if op.get("tool") == tool
                and op.get("arguments") == args]
    return matching[-1] if matching else None


def _wait_seconds(result: ToolResult) -> int:
    return int(min(3600, max(1, result.retry_after_s or DEFAULT_BACKOFF_S)))


def _message(result: ToolResult) -> str:
    error = result.error or {}
    return str(error.get("message", result.text()))[:200]


def _render_lenient(template: dict[str, Any], ctx: dict[str, Any]) -> dict[str, Any]:
    """Render plan arguments; a reference to an unknown result becomes ``(unknown)``."""
    try:
        return dict(render(template, ctx))
    except TemplateError:
        return dict(_render_each(template, ctx))


def _render_each(value: Any, ctx: dict[str, Any]) -> Any:
    if isinstance(value, dict):
        return {k: _render_each(v, ctx) for k, v in value.items()}
    if isinstance(value, list):
        return [_render_each(v, ctx) for v in value]
    try:
        return render(value, ctx)
    except TemplateError:
        return _partial_text(value, ctx) if isinstance(value, str) else value


def _partial_text(text: str, ctx: dict[str, Any]) -> str:
    from limbo_plugin.templating import EXPRESSION, evaluate

    def substitute(match: Any) -> str:
        try:
            value = evaluate(match.group(1), ctx)
        except TemplateError:
            return UNKNOWN
        return ", ".join(map(str, value)) if isinstance(value, list) else str(value)

    return EXPRESSION.sub(substitute, text)
