"""A tool call too large for the sandbox service's body limit, sent so that it is still recorded.

The limit (:data:`~limbo_plugin.server.wire.MAX_BODY_BYTES`) bounds what a hostile agent can
make the episode's process read; yet an in-process agent that sends such a call gets a tool
error, traced and counted, and so must a harness. ``limbo mcp`` therefore sends, in place of
what does not fit, what the episode would keep of it, and the episode answers as it would have:

- a **name** longer than any trace keeps cannot name a tool; it goes as its stand-in
  (:func:`name_stand_in`), a smaller value of its kind whose ``repr`` begins the same way for as
  long as a trace shows it. The episode answers the stand-in with the ``unknown_tool`` error
  and records it exactly as it would the name (a trace keeps its first 200 characters and a
  bounded rendering of the answer); :func:`restored_name` then puts the name back in the
  answer's echo of it, so the agent reads the bytes an in-process agent reads;
- **arguments** are judged here by the world's own check and sent as their trace rendering with
  the verdict (:func:`refused_call`, :class:`~limbo_plugin.toolapi.RefusedArguments`).

Only ``limbo mcp`` imports this module, and only once a call is over the limit.
"""

from __future__ import annotations

import json
from typing import Any

from limbo_plugin.server.wire import MAX_BODY_BYTES, call_body
from limbo_plugin.toolapi import (
    MAX_RENDERED_CHARS,
    canonical_json,
    normalize_arguments,
    parsed_arguments,
    safe_json,
)

NAME_KEPT_CHARS = MAX_RENDERED_CHARS
"""How many characters of a name's ``repr`` a stand-in keeps: all that a trace can show of it
(the tool field keeps 200, a rendered answer at most :data:`MAX_RENDERED_CHARS`). No tool name
is anywhere near as long, so a name cut here is unknown, and so is its stand-in."""


def fitted_call(name: Any, arguments: Any) -> tuple[str, Any]:
    """The body to send for a call over the body limit, and the name it carries (``name``
    itself, or its stand-in). The name is cut first: a call naming no tool is answered as
    ``unknown_tool`` whatever its arguments. Arguments that pass the world's check then fit
    beside the name: their 100 kB escape to at most 600 kB, a stand-in's characters to 240 kB."""
    sent = name_stand_in(name)
    body = call_body(sent, arguments)
    if len(body) > MAX_BODY_BYTES and (refused := refused_call(sent, arguments)) is not None:
        body = json.dumps(refused, ensure_ascii=True)
    return body, sent


def refused_call(name: Any, arguments: Any) -> dict[str, Any] | None:
    """The call to send when its arguments are over the sandbox's body limit: judged here by
    the world's own check (arguments within its size limit always fit in the body, so these
    fail it) and sent as their trace rendering with the verdict (``refused``). ``None`` when
    they pass it. A JSON text is parsed first, as the agent's session parses it."""
    arguments = parsed_arguments(arguments)
    _, problem = normalize_arguments(arguments)
    if problem is None:
        return None
    return {"name": name, "arguments": safe_json(arguments), "refused": problem}


def name_stand_in(name: Any, budget: int = NAME_KEPT_CHARS) -> Any:
    """``name`` itself when it is short, else a value of its kind (a JSON value, as the agent
    sent it) whose ``repr`` has the same first ``budget`` characters and more after them.

    What the episode keeps of a name is cut from its ``repr`` (or from the string itself,
    whose first characters the stand-in's are): the trace's tool field, and the bounded
    rendering of an answer that quotes it. Cut to ``budget`` characters, a stand-in is
    recorded exactly as the name would be."""
    if isinstance(name, str):
        return _string_stand_in(name, budget)
    if isinstance(name, list):
        return _list_stand_in(name, budget)
    if isinstance(name, dict):
        return _dict_stand_in(name, budget)
    return name  # a number, a boolean or null: a few characters


def restored_name(text: str, sent: Any, name: Any) -> str:
    """The answer ``text`` to a call sent under the stand-in ``sent``, as the agent's own
    ``name`` gets it: wherever the answer quotes the stand-in (``unknown_tool`` does, with its
    ``repr``), it quotes the name. A stand-in's ``repr`` is thousands of characters long, so
    only a quotation of it can contain it."""
    return text.replace(_quoted(repr(sent)), _quoted(repr(name)))


def _quoted(text: str) -> str:
    """``text`` as it reads inside a string of a result's canonical JSON text."""
    return canonical_json(text)[1:-1]


def _string_stand_in(name: str, budget: int) -> str:
    """The first ``budget`` characters, and the kinds of quote the rest holds: ``repr`` picks
    its quote from the quotes in the string, and the stand-in's must be the name's."""
    if len(name) <= budget:
        return name
    keep = max(budget, 0)
    return name[:keep] + "".join(quote for quote in "'\"" if quote in name[keep:])


def _list_stand_in(name: list[Any], budget: int) -> list[Any]:
    """The items shown within ``budget``, the last of them cut: ``repr`` writes a list item by
    item, so the stand-in's reads as the name's for as long as the items do."""
    kept: list[Any] = []
    shown = 1  # "["
    for item in name:
        if shown >= budget:
            return kept
        if kept:
            shown += 2  # ", "
        cut = name_stand_in(item, budget - shown)
        kept.append(cut)
        if cut is not item:
            return kept
        shown += len(repr(item))
    return name


def _dict_stand_in(name: dict[Any, Any], budget: int) -> dict[Any, Any]:
    """The entries shown within ``budget``, the last of them cut (its key, or its value), as
    :func:`_list_stand_in` keeps items."""
    kept: dict[Any, Any] = {}
    shown = 1  # "{"
    for key, item in name.items():
        if shown >= budget:
            return kept
        if kept:
            shown += 2  # ", "
        cut_key = name_stand_in(key, budget - shown)
        if cut_key is not key:
            while cut_key in kept:  # a cut key must not replace a kept one: made unique past
                cut_key += "\x00"  # the budget, where nothing of it is shown
            kept[cut_key] = None  # past the budget too: any value reads the same there
            return kept
        shown += len(repr(key)) + 2  # ": "
        cut = name_stand_in(item, budget - shown)
        kept[key] = cut
        if cut is not item:
            return kept
        shown += len(repr(item))
    return name
