"""``limbo audit --probe``: check the audit's verdicts against what the server does.

The listing can be wrong: server-memory and mcp-server-git mark tools ``idempotentHint=false``
that repeat harmlessly, and the ``verify`` query the audit builds from names rarely finds what a
write made. On a scratch instance the user names (the probe writes to it), each write is called
twice with the same arguments, and the server's state is read before, between and after through
its read tools that take no arguments (``read_graph``, ``list_tables``…) and the write's
``verify`` query:

- ``changed_state``: the first call changed what those reads return;
- ``repeat_changed_state``: the second did too; a repeat that changed nothing is observed
  idempotent (``idempotent_observed``), whatever the annotation says;
- ``verify_finds``: the ``verify`` query, run after the first call, found a match. Only then is
  the query marked checked (``verify_checked: true``) for the guard to run.

The arguments are made from the input schema (``limbo-probe`` for strings, 1 for numbers, one
item for lists), or given per tool with ``--probe-args TOOL JSON``; a tool whose call fails is
reported as not probed, with the server's answer.
"""

from __future__ import annotations

from typing import Any

from limbo_plugin.readback import extract_items, queries
from limbo_plugin.realmcp.results import result_text, to_tool_result
from limbo_plugin.realmcp.upstream import Upstream, UpstreamError, call_tool
from limbo_plugin.spec.models import ReadBack

SAMPLE = "limbo-probe"


def sample(schema: Any, depth: int = 0) -> Any:
    """A value the schema accepts, built from its types alone."""
    if not isinstance(schema, dict) or depth > 6:
        return SAMPLE
    if "default" in schema:
        return schema["default"]
    if isinstance(schema.get("enum"), list) and schema["enum"]:
        return schema["enum"][0]
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "string")
    if kind == "object" or "properties" in schema:
        properties = schema.get("properties") or {}
        required = schema.get("required") or list(properties)
        return {name: sample(properties.get(name), depth + 1) for name in required
                if name in properties}
    if kind == "array":
        return [sample(schema.get("items"), depth + 1)]
    if kind in ("integer", "number"):
        return 1
    if kind == "boolean":
        return True
    return SAMPLE


async def _state(client: Any, upstream: Upstream, readers: list[str]) -> tuple[str, ...]:
    seen = []
    for reader in readers:
        try:
            seen.append(result_text(await call_tool(client, upstream, reader, {})))
        except UpstreamError as exc:
            seen.append(f"failed: {exc.problem}")
    return tuple(seen)


async def _verify_finds(client: Any, upstream: Upstream, verify: dict[str, Any],
                        arguments: dict[str, Any]) -> bool:
    read_back = ReadBack.model_validate(verify)
    for query in queries(read_back, arguments):
        try:
            answer = to_tool_result(await call_tool(client, upstream, query.tool,
                                                    query.arguments))
        except UpstreamError:
            return False
        if answer.is_error or query.match is None:
            return False
        if not any(all(item.get(k) == v for k, v in query.match.items())
                   for item in extract_items(answer.content, query.items)):
            return False
    return True


async def probe(client: Any, upstream: Upstream, listed: list[Any], rows: list[dict[str, Any]],
                given: dict[str, dict[str, Any]]) -> None:
    """Probe each write of the audit ``rows`` (its JSON form, updated in place)."""
    schemas = {t.name: (t.model_dump(by_alias=True, exclude_none=True).get("inputSchema") or {})
               for t in listed}
    readers = [r["tool"] for r in rows if not r["writes"]
               and not (schemas.get(r["tool"], {}).get("required"))]
    for row in rows:
        if not row["writes"]:
            continue
        arguments = given.get(row["tool"]) or sample(schemas.get(row["tool"], {}))
        before = await _state(client, upstream, readers)
        between: tuple[str, ...] = before
        finds: bool | None = None
        answers: list[tuple[bool, str]] = []
        for _ in range(2):
            try:
                answer = await call_tool(client, upstream, row["tool"], arguments)
            except UpstreamError as exc:
                answers.append((True, exc.problem))
                break
            answers.append((bool(answer.is_error), result_text(answer)[:200]))
            if answer.is_error:
                break
            if len(answers) == 1:
                between = await _state(client, upstream, readers)
                finds = (await _verify_finds(client, upstream, row["verify"], arguments)
                         if row.get("verify") else None)
        if answers[0][0]:
            row["probe"] = {"probed": False, "arguments": arguments,
                            "why": f"the call failed: {answers[0][1]}"}
            continue
        after = await _state(client, upstream, readers)
        changed, again = between != before, after != between
        row["probe"] = {"probed": True, "arguments": arguments, "changed_state": changed,
                        "repeat_changed_state": again,
                        "repeat_answered": "error" if answers[-1][0] else "ok",
                        "idempotent_observed": changed and not again,
                        "verify_finds": finds}
        if finds is not None:
            row["verify_checked"] = bool(finds)
        if changed and not again and not row["idempotent"]:
            row["evidence"]["idempotent"] += (" (the probe saw a repeat change nothing: "
                                              "retry-safe in practice)")
