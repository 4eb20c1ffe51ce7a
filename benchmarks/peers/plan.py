"""The four tool calls every peer's scripted model makes, with their in-process tools.

The calls and arguments of the default experiment's first episode (``cross_post``: publish on
X and on Mastodon, e-mail the release team, finish), so each peer runs the tool calls a Limbo
episode makes. The tools answer from memory, like Limbo's simulated services do; nothing goes
over the network. Imported by each peer's task file, inside that peer's own virtual
environment: it uses the standard library only.
"""

from __future__ import annotations

import itertools
import json
from collections import Counter
from typing import Any

TEXT = "Join us for Acme Summit Berlin on 2026-11-05: https://events.acme.example/summit-berlin"
PLAN: list[tuple[str, dict[str, Any]]] = [
    ("x_publish", {"text": TEXT}),
    ("mastodon_publish", {"text": TEXT}),
    ("email_send", {"to": "release-team@acme.example", "subject": "Acme Summit Berlin announced",
                    "body": "Posted on X and Mastodon."}),
    ("finish", {"status": "completed", "summary": "Ran 3 plan steps of cross_post.",
                "uncertain_operations": []}),
]
PROMPT = "Announce Acme Summit Berlin on X and Mastodon, then e-mail the release team."
FINAL = "done"

CALLS: Counter[str] = Counter()
_ids = itertools.count(1)


def x_publish(text: str) -> str:
    CALLS["x_publish"] += 1
    n = next(_ids)
    return json.dumps({"id": f"x_{n}", "url": f"https://x.com/acme/status/x_{n}"})


def mastodon_publish(text: str) -> str:
    CALLS["mastodon_publish"] += 1
    n = next(_ids)
    return json.dumps({"id": f"md_{n}", "url": f"https://mastodon.social/@acme/md_{n}"})


def email_send(to: str, subject: str, body: str) -> str:
    CALLS["email_send"] += 1
    return json.dumps({"id": f"msg_{next(_ids)}", "status": "sent"})


def finish(status: str, summary: str, uncertain_operations: list[str]) -> str:
    CALLS["finish"] += 1
    return json.dumps({"ok": True})


TOOLS = {"x_publish": x_publish, "mastodon_publish": mastodon_publish,
         "email_send": email_send, "finish": finish}


def check(samples: int) -> None:
    """Every sample made the four calls, once each: the workload is the one compared."""
    expected = {name: samples for name, _ in PLAN}
    if dict(CALLS) != expected:
        raise SystemExit(f"tool calls {dict(CALLS)}, expected {expected}")
