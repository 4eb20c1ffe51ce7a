"""``limbo audit``: read an MCP server's tool listing as a retry contract.

For each tool the audit decides, from the evidence a client can see (the MCP annotations, the
input schema, the description and the name, in that order of authority), whether it writes,
whether a repeat is harmless (idempotent), which parameter carries an idempotency key, which read
tools can confirm its effect, and what its read path's consistency is. Each verdict names the
evidence that decided it. The rules are data (``audit_rules.yaml``).

A write is *retry-safe* when it is idempotent or takes a key. The exit status is 0 when every
write is retry-safe or has a read-back (what the paper's guard needs to protect it), 1 otherwise
(a CI gate for tool designers), 2 on usage or connection errors.

The ``verify`` field of a write is the read-back query ``limbo guard`` runs: the reader's
parameters filled from the write's arguments of the same name, and the write's scalar arguments
to look for in what it returns. Where no query can be built by name it is null; edit it in the
guard's config. A query built by names is a guess (``verify_checked: false``): the guard does not
trust it, and says it cannot verify, until a person has checked it (and deleted the field or set
it true) or ``limbo audit --probe`` found that it sees what the write made.
"""

from __future__ import annotations

import argparse
import functools
import json
import re
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from limbo_plugin.readback import ANY_LIST
from limbo_plugin.realmcp.rules import AuditRules, RulesError, load_rules
from limbo_plugin.realmcp.upstream import (
    Upstream,
    UpstreamError,
    connect,
    list_tools,
    upstream_from_args,
)

SCALAR_TYPES = ("string", "integer", "number")
HINTS = ("readOnlyHint", "destructiveHint", "idempotentHint", "openWorldHint")


@dataclass(frozen=True)
class ListedTool:
    """What a client sees of one tool."""

    name: str
    description: str
    input_schema: dict[str, Any]
    annotations: dict[str, Any]
    meta: dict[str, Any]

    @classmethod
    def from_mcp(cls, tool: Any) -> ListedTool:
        data = tool.model_dump(by_alias=True, exclude_none=True)
        return cls(name=data["name"], description=data.get("description") or "",
                   input_schema=data.get("inputSchema") or {},
                   annotations=dict(data.get("annotations") or {}),
                   meta=dict(data.get("_meta") or {}))

    @property
    def properties(self) -> dict[str, Any]:
        props = self.input_schema.get("properties")
        return props if isinstance(props, dict) else {}

    @property
    def required(self) -> list[str]:
        req = self.input_schema.get("required")
        return [r for r in req if isinstance(r, str)] if isinstance(req, list) else []


@dataclass
class ToolAudit:
    """One row of the audit."""

    tool: str
    writes: bool
    idempotent: bool
    key: str | None
    read_back: list[str]
    verify: dict[str, Any] | None
    consistency: str
    lag_s: int | None
    retry_safe: bool
    advice: str
    evidence: dict[str, str] = field(default_factory=dict)

    def as_json(self) -> dict[str, Any]:
        return {"tool": self.tool, "writes": self.writes, "idempotent": self.idempotent,
                "key": self.key, "read_back": self.read_back, "verify": self.verify,
                "verify_checked": False if self.verify is not None else None,
                "consistency": self.consistency, "lag_s": self.lag_s,
                "retry_safe": self.retry_safe, "advice": self.advice,
                "evidence": self.evidence}

    @property
    def covered(self) -> bool:
        """Safe to retry, or protectable by verification (the exit-status criterion)."""
        return not self.writes or self.retry_safe or bool(self.read_back)


# -- words -----------------------------------------------------------------------------------------
def name_words(name: str) -> list[str]:
    spaced = re.sub(r"([a-z0-9])([A-Z])", r"\1 \2", name)
    return [w.lower() for w in re.split(r"[\s_.\-/]+", spaced) if w]


def stem(word: str) -> str:
    if len(word) > 4 and word.endswith("ies"):
        return word[:-3] + "y"
    if len(word) > 3 and word.endswith("s") and not word.endswith(("ss", "us", "is")):
        return word[:-1]
    return word


def content_words(text: str, rules: AuditRules, *, drop_verbs: bool) -> set[str]:
    words = {stem(w) for w in re.findall(r"[a-z][a-z0-9]+", text.lower())}
    dropped = set(rules.stop_words)
    if drop_verbs:
        dropped |= set(rules.write_verbs) | set(rules.read_verbs)
    return {w for w in words if w not in dropped and len(w) > 1}


def _first(patterns: list[re.Pattern[str]], text: str) -> re.Match[str] | None:
    for pattern in patterns:
        found = pattern.search(text)
        if found:
            return found
    return None


# -- the verdicts ----------------------------------------------------------------------------------
class Auditor:
    """Applies the rules to a server's listing (all tools at once: read-backs are relations)."""

    def __init__(self, tools: Sequence[ListedTool], rules: AuditRules) -> None:
        self.tools = list(tools)
        self.rules = rules
        self.c = rules.compiled
        self._writes = {t.name: self._writes_verdict(t) for t in self.tools}

    def audit(self) -> list[ToolAudit]:
        return [self._row(t) for t in self.tools]

    def _writes_verdict(self, tool: ListedTool) -> tuple[bool, str]:
        hint = tool.annotations.get("readOnlyHint")
        if isinstance(hint, bool):
            return (not hint, f"annotation readOnlyHint={str(hint).lower()}")
        for word in name_words(tool.name):
            if word in self.rules.write_verbs:
                return True, f"name: {word!r} is a write verb"
            if word in self.rules.read_verbs:
                return False, f"name: {word!r} is a read verb"
        found = _first(self.c["write_phrases"], tool.description)
        if found:
            return True, f"description: {found.group(0)!r}"
        found = _first(self.c["read_phrases"], tool.description)
        if found:
            return False, f"description: {found.group(0)!r}"
        return True, "no evidence either way: assumed to write (the safe assumption)"

    def _row(self, tool: ListedTool) -> ToolAudit:
        writes, writes_why = self._writes[tool.name]
        evidence = {"writes": writes_why}
        if not writes:
            return ToolAudit(tool=tool.name, writes=False, idempotent=True, key=None,
                             read_back=[], verify=None, consistency=self._consistency(
                                 [tool])[0], lag_s=None, retry_safe=True,
                             advice=self.rules.advice.read, evidence=evidence)
        idempotent, evidence["idempotent"] = self._idempotent(tool)
        key, evidence["key"] = self._key(tool)
        readers, evidence["read_back"] = self._readers(tool)
        verify = self._verify(tool, readers, key)
        verifier = [t for t in self.tools if t.name == (verify or {}).get("tool")]
        first = verifier or [t for t in self.tools if readers and t.name == readers[0]]
        consistency, lag = self._consistency([tool, *first]) if first else (
            "no read path", None)
        evidence["consistency"] = consistency
        retry_safe = idempotent or key is not None
        return ToolAudit(tool=tool.name, writes=True, idempotent=idempotent, key=key,
                         read_back=readers, verify=verify, consistency=consistency, lag_s=lag,
                         retry_safe=retry_safe,
                         advice=self._advice(idempotent, key, readers, lag), evidence=evidence)

    def _idempotent(self, tool: ListedTool) -> tuple[bool, str]:
        hint = tool.annotations.get("idempotentHint")
        if isinstance(hint, bool):
            return hint, f"annotation idempotentHint={str(hint).lower()}"
        found = _first(self.c["not_idempotent"], tool.description)
        if found:
            return False, f"description: {found.group(0)!r}"
        found = _first(self.c["idempotent"], tool.description)
        if found:
            return True, f"description: {found.group(0)!r}"
        return False, "no annotation or description says a repeat is harmless"

    def _key(self, tool: ListedTool) -> tuple[str | None, str]:
        for name in tool.properties:
            if _first(self.c["key_params"], name):
                return name, f"parameter {name!r}"
        for name in self.rules.key_meta_fields:
            if name in tool.meta:
                return f"_meta.{name}", f"the tool's _meta declares {name!r}"
        return None, "no idempotency-key parameter or _meta field"

    def _readers(self, tool: ListedTool) -> tuple[list[str], str]:
        found = _first(self.c["no_read_back"], tool.description)
        if found:
            return [], f"description: {found.group(0)!r}"
        mine = content_words(" ".join(name_words(tool.name)), self.rules, drop_verbs=True)
        params = set(tool.properties) - {self._key(tool)[0]}
        tiers: list[list[str]] = [[], []]
        for reader in self.tools:
            if self._writes[reader.name][0]:
                continue
            theirs = content_words(" ".join(name_words(reader.name)), self.rules,
                                   drop_verbs=True)
            by_name = bool(mine & theirs)
            by_param = bool(params & set(reader.properties))
            if by_name and by_param:
                tiers[0].append(reader.name)
            elif by_name or by_param:
                tiers[1].append(reader.name)
        ranked = tiers[0] + tiers[1]
        if ranked:
            return ranked, "read tools sharing a name word or a parameter"
        described = content_words(tool.description, self.rules, drop_verbs=True)
        listings = [r.name for r in self.tools
                    if not self._writes[r.name][0] and not r.required
                    and len(described & content_words(r.description, self.rules,
                                                      drop_verbs=True)) >= 2]
        if listings:
            return listings, "parameterless listings whose description covers the same things"
        return [], "no read tool shares a name word, a parameter or the description's subject"

    def _verify(self, tool: ListedTool, readers: list[str], key: str | None
                ) -> dict[str, Any] | None:
        by_name = {t.name: t for t in self.tools}
        for name in readers:
            reader = by_name[name]
            if any(p not in tool.properties for p in reader.required):
                continue
            args = {p: f"{{{p}}}" for p in reader.properties if p in tool.properties}
            match = {p: f"{{{p}}}" for p, schema in tool.properties.items()
                     if p not in args and p != key and isinstance(schema, dict)
                     and schema.get("type") in SCALAR_TYPES}
            if match:  # without fields to recognise, any listed item would pass for the write
                return {"tool": name, "args": args, "match": match, "items": ANY_LIST}
        return None

    def _consistency(self, tools: Sequence[ListedTool]) -> tuple[str, int | None]:
        lags: list[int] = []
        strong = eventual = False
        for tool in tools:
            text = tool.description
            for kind, scale in (("lag_seconds", 1), ("lag_minutes", 60)):
                found = _first(self.c[kind], text)
                if found:
                    lags.append(int(found.group(1)) * scale)
            strong |= _first(self.c["strong"], text) is not None
            eventual |= _first(self.c["eventual"], text) is not None
        if lags:
            return f"lags up to {max(lags)} s", max(lags)
        if eventual:
            return "eventually consistent, bound undocumented", None
        if strong:
            return "strong", 0
        return "undocumented", None

    def _advice(self, idempotent: bool, key: str | None, readers: list[str],
                lag: int | None) -> str:
        advice = self.rules.advice
        if idempotent:
            return advice.idempotent.strip()
        if key is not None:
            return advice.keyed.strip().format(key=key)
        if not readers:
            return advice.unsafe.strip()
        if lag:
            return advice.read_back_lag.strip().format(read_back=readers[0], lag=lag)
        return advice.read_back.strip().format(read_back=readers[0])


# -- running it ------------------------------------------------------------------------------------
async def audit_server(upstream: Upstream, rules: AuditRules, *, probe: bool = False,
                       probe_args: dict[str, dict[str, Any]] | None = None) -> dict[str, Any]:
    """The audit of the server at ``upstream`` as the ``--json`` document; with ``probe``, each
    write called twice on it (:mod:`~limbo_plugin.realmcp.probe`)."""
    async with connect(upstream) as client:
        listed = await list_tools(client, upstream)
        info = client.server_info
        rows = Auditor([ListedTool.from_mcp(t) for t in listed], rules).audit()
        tools = [r.as_json() for r in rows]
        if probe:
            from limbo_plugin.realmcp.probe import probe as run_probe

            await run_probe(client, upstream, listed, tools, probe_args or {})
    writes = [r for r in rows if r.writes]
    server = {"name": getattr(info, "name", None), "version": getattr(info, "version", None),
              **upstream.server_fields(), "tools": len(rows), "writes": len(writes),
              "retry_safe_writes": sum(r.retry_safe for r in writes),
              "unprotected_writes": [r.tool for r in writes if not r.covered],
              "verdicts_from": "the listing and a probe" if probe else "the listing alone"}
    return {"server": server, "tools": tools}


def render_table(document: dict[str, Any]) -> str:
    """The audit as a Markdown table (what the README and the notes show)."""
    server = document["server"]
    lines = [f"{server.get('name')} {server.get('version')}: {server['tools']} tools, "
             f"{server['writes']} writes, {server['retry_safe_writes']} retry-safe, "
             f"unprotected: {', '.join(server['unprotected_writes']) or 'none'}",
             f"verdicts from {server.get('verdicts_from', 'the listing alone')}"
             + ("" if "probe" in str(server.get("verdicts_from")) else
                " (annotations can be wrong: --probe checks them on a scratch instance)"),
             *_probe_lines(document["tools"]), "",
             "| tool | writes | key | read_back | consistency | retry_safe | advice |",
             "| --- | --- | --- | --- | --- | --- | --- |"]
    for row in document["tools"]:
        writes = "yes" if row["writes"] else "no"
        if row["writes"]:
            writes += f" ({row['evidence']['writes']})"
        read_back = ", ".join(row["read_back"][:3]) + (" …" if len(row["read_back"]) > 3
                                                       else "")
        lines.append(f"| {row['tool']} | {writes} | {row['key'] or ''} | {read_back} | "
                     f"{row['consistency'] if row['writes'] else ''} | "
                     f"{'yes' if row['retry_safe'] else 'NO'} | "
                     f"{row['advice'] if row['writes'] else ''} |")
    return "\n".join(lines)


def _probe_lines(rows: list[dict[str, Any]]) -> list[str]:
    out = []
    for row in rows:
        found = row.get("probe")
        if not found:
            continue
        if not found["probed"]:
            out.append(f"probe {row['tool']}: not probed ({found['why']})")
            continue
        seen = ("a repeat changed nothing" if found["idempotent_observed"] else
                "a repeat changed the state again" if found["repeat_changed_state"] else
                "the call changed nothing the reads show")
        verify = {None: "no verify query", True: "its verify query finds what it made",
                  False: "its verify query does NOT find what it made"}[found["verify_finds"]]
        out.append(f"probe {row['tool']}: {seen}; {verify}")
    return out


def exit_status(document: dict[str, Any]) -> int:
    return 1 if document["server"]["unprotected_writes"] else 0


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help="print the audit as JSON")
    parser.add_argument("--rules", default=None, help="evidence rules (default: the "
                        "audit_rules.yaml Limbo ships)")
    parser.add_argument("--probe", action="store_true", help="call each write twice on the "
                        "server (a scratch instance: it writes) and check the verdicts and "
                        "verify queries against its state")
    parser.add_argument("--probe-args", nargs=2, action="append", default=[],
                        metavar=("TOOL", "JSON"), help="--probe: the arguments to call TOOL "
                        "with (default: made from its input schema)")
    add_server_arguments(parser)


def add_server_arguments(parser: argparse.ArgumentParser) -> None:
    """``--url``, ``--header`` and ``-- COMMAND ARGS…``: the server, named alike by every tool
    that works on one (:func:`~limbo_plugin.realmcp.upstream.upstream_from_args` reads them)."""
    parser.add_argument("--url", default=None, help="a streamable HTTP server instead of a "
                        "command")
    parser.add_argument("--header", action="append", default=[], metavar="'NAME: VALUE'",
                        help="an HTTP header for --url (repeatable)")
    parser.add_argument("server_command", nargs=argparse.REMAINDER, metavar="-- COMMAND ARGS",
                        help="the stdio server to start")


def probe_arguments(pairs: Sequence[Sequence[str]]) -> dict[str, dict[str, Any]]:
    """``--probe-args TOOL JSON`` options; arguments that are not a JSON object are one
    :class:`ValueError` naming the tool."""
    out: dict[str, dict[str, Any]] = {}
    for tool, text in pairs:
        try:
            value = json.loads(text)
        except ValueError as exc:
            raise ValueError(f"--probe-args {tool}: not JSON ({exc})") from None
        if not isinstance(value, dict):
            raise ValueError(f"--probe-args {tool}: a JSON object, not "
                             f"{type(value).__name__}")
        out[tool] = value
    return out


def command_after_dashes(values: Sequence[str]) -> list[str]:
    values = list(values)
    return values[1:] if values[:1] == ["--"] else values


def run(args: argparse.Namespace) -> int:
    import anyio

    try:
        rules = load_rules(args.rules)
        upstream = upstream_from_args(command_after_dashes(args.server_command), args.url,
                                      args.header)
        given = probe_arguments(args.probe_args)
        if given and not args.probe:
            raise ValueError("--probe-args applies to --probe only")
        document = anyio.run(functools.partial(audit_server, upstream, rules, probe=args.probe,
                                               probe_args=given))
    except (ValueError, RulesError) as exc:
        print(f"limbo audit: {exc}", file=sys.stderr)
        return 2
    except UpstreamError as exc:
        print(f"limbo audit: cannot audit {exc}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps(document, indent=2))
    else:
        print(render_table(document))
    return exit_status(document)


def main(argv: Sequence[str] | None = None) -> int:
    from limbo_plugin.server.serving import command_main

    return command_main("limbo audit", __doc__, add_arguments, run, argv)


if __name__ == "__main__":
    sys.exit(main())
