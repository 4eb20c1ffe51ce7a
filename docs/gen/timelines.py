"""The timeline pictures of the fault families, as SVG: ``python docs/gen/timelines.py``.

Each picture is two lanes, the agent above and the service's ledger below, on the simulated
clock of one episode: what the agent sent, what it was told, and what the service committed.
The times follow the fault modes of ``specs/faults/modes.yaml`` (a 30 s timeout, a late commit
90 s after the request, a redelivery 2 s after it). Plain SVG written by hand, so the pictures
need nothing installed and are byte-identical on every run; ``--check`` says whether the
checked-in files are these.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from html import escape
from pathlib import Path

OUT = Path(__file__).resolve().parents[1] / "images" / "timelines"
WIDTH, HEIGHT = 760, 240
LEFT, RIGHT = 110, 30
AGENT_Y, SERVICE_Y = 92, 162
INK, FAULT, GOOD, BAD, MUTED = "#1f2937", "#b45309", "#047857", "#b91c1c", "#6b7280"


@dataclass(frozen=True)
class Message:
    """An arrow between the lanes: a request down (t_from → t_to), an answer up."""

    t_from: float
    t_to: float
    down: bool
    label: str
    color: str = INK
    dashed: bool = False


@dataclass(frozen=True)
class Commit:
    """A commit in the service's ledger."""

    t: float
    label: str
    duplicate: bool = False


@dataclass(frozen=True)
class Timeline:
    name: str
    title: str
    end: float
    messages: tuple[Message, ...]
    commits: tuple[Commit, ...]
    in_flight: tuple[float, float] | None = None
    note: str = ""


TIMELINES = (
    Timeline("not_executed", "timeout_pre: the request never reached the service", 60,
             (Message(0, 0, True, "charge", FAULT, dashed=True),
              Message(30, 30, False, "timeout after 30 s", FAULT, dashed=True),
              Message(36, 36, True, "charge (retry)")),
             (Commit(36, "charge #1"),),
             note="Retrying is right: the first request did nothing."),
    Timeline("lost_ack", "timeout_post: the service committed, the acknowledgement was lost", 60,
             (Message(0, 0, True, "charge"),
              Message(30, 30, False, "timeout after 30 s", FAULT, dashed=True),
              Message(36, 36, True, "charge (blind retry)", BAD)),
             (Commit(0, "charge #1"), Commit(36, "charge #2", duplicate=True)),
             note="A read-back before the retry would have found charge #1."),
    Timeline("misleading_500", "http500_post: the service committed, then answered 500", 12,
             (Message(0, 0, True, "charge"),
              Message(1, 1, False, "500 internal error", FAULT, dashed=True),
              Message(8, 8, True, "charge (blind retry)", BAD)),
             (Commit(0, "charge #1"), Commit(8, "charge #2", duplicate=True)),
             note="The error says nothing of whether the write happened."),
    Timeline("partial_batch", "partial_batch: 2 of 3 rows committed, then 500", 12,
             (Message(0, 0, True, "insert rows 1-3"),
              Message(1, 1, False, "500 internal error", FAULT, dashed=True),
              Message(8, 8, True, "insert rows 1-3 again", BAD)),
             (Commit(0, "rows 1, 2"), Commit(8, "rows 1, 2 again; row 3", duplicate=True)),
             note="Only the missing row should have been sent again."),
    Timeline("late_commit", "timeout_late: the request was still in flight, and lands later",
             110,
             (Message(0, 0, True, "charge"),
              Message(30, 30, False, "timeout after 30 s", FAULT, dashed=True),
              Message(40, 40, True, "read back: none yet", MUTED),
              Message(46, 46, True, "charge (retry)")),
             (Commit(46, "charge #1"), Commit(90, "charge #2 (the first request)",
                                              duplicate=True)),
             in_flight=(0, 90),
             note="Checking first does not help: nothing was there to find yet."),
    Timeline("redelivery", "redelivery: the transport delivered the request twice", 12,
             (Message(0, 0, True, "charge"),
              Message(1, 1, False, "200 ok", GOOD),
              Message(0, 2, True, "same request, redelivered", BAD, dashed=True)),
             (Commit(0, "charge #1"), Commit(2, "charge #2", duplicate=True)),
             note="The agent did nothing wrong: only a key the service honours prevents it."),
    Timeline("explicit", "http503 / http429: an explicit refusal, provably not executed", 12,
             (Message(0, 0, True, "charge"),
              Message(1, 1, False, "503, retry after 5 s", FAULT, dashed=True),
              Message(8, 8, True, "charge (retry)")),
             (Commit(8, "charge #1"),),
             note="Not ambiguous: the answer says the write did not happen."),
)
"""One picture per fault family that has a fault (``none`` has none)."""


def _x(t: float, end: float) -> float:
    return LEFT + (WIDTH - LEFT - RIGHT) * t / end


def _text(x: float, y: float, text: str, color: str = INK, anchor: str = "start",
          size: int = 12, weight: str = "normal") -> str:
    return (f'<text x="{x:.1f}" y="{y:.1f}" fill="{color}" font-size="{size}" '
            f'font-weight="{weight}" text-anchor="{anchor}">{escape(text)}</text>')


def svg(timeline: Timeline) -> str:
    """The picture of one family."""
    end = timeline.end
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {WIDTH} {HEIGHT}" '
        f'width="{WIDTH}" height="{HEIGHT}" font-family="Helvetica, Arial, sans-serif" '
        f'role="img" aria-label="{escape(timeline.title)}">',
        "<defs>",
        *(f'<marker id="arrow-{name}" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" '
          f'markerHeight="7" orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" '
          f'fill="{color}"/></marker>'
          for name, color in (("ink", INK), ("fault", FAULT), ("good", GOOD), ("bad", BAD),
                              ("muted", MUTED))),
        "</defs>",
        f'<rect width="{WIDTH}" height="{HEIGHT}" fill="#ffffff"/>',
        _text(12, 22, timeline.title, weight="bold", size=13),
        _text(12, AGENT_Y + 4, "agent", MUTED),
        _text(12, SERVICE_Y + 4, "service", MUTED),
    ]
    for y in (AGENT_Y, SERVICE_Y):
        parts.append(f'<line x1="{LEFT}" y1="{y}" x2="{WIDTH - RIGHT}" y2="{y}" '
                     f'stroke="#d1d5db" stroke-width="2"/>')
    step = 2 if end <= 12 else 10 if end <= 60 else 30
    for t in range(0, int(end) + 1, step):
        x = _x(t, end)
        parts.append(f'<line x1="{x:.1f}" y1="{SERVICE_Y + 40}" x2="{x:.1f}" '
                     f'y2="{SERVICE_Y + 44}" stroke="{MUTED}"/>')
        parts.append(_text(x, SERVICE_Y + 55, f"{t} s", MUTED, "middle", 10))
    if timeline.in_flight:
        start, stop = (_x(t, end) for t in timeline.in_flight)
        mid = (AGENT_Y + SERVICE_Y) / 2 + 12
        parts.append(f'<line x1="{start:.1f}" y1="{mid}" x2="{stop:.1f}" y2="{mid}" '
                     f'stroke="{FAULT}" stroke-width="2" stroke-dasharray="2 4"/>')
        parts.append(_text((start + stop) / 2 + 40, mid - 5, "still in flight", FAULT,
                           "middle", 10))
    color_names = {INK: "ink", FAULT: "fault", GOOD: "good", BAD: "bad", MUTED: "muted"}
    for index, message in enumerate(timeline.messages):
        x1, x2 = _x(message.t_from, end), _x(message.t_to, end)
        y1, y2 = (AGENT_Y, SERVICE_Y - 8) if message.down else (SERVICE_Y, AGENT_Y + 8)
        dash = ' stroke-dasharray="5 4"' if message.dashed else ""
        parts.append(f'<line x1="{x1:.1f}" y1="{y1}" x2="{x2:.1f}" y2="{y2}" '
                     f'stroke="{message.color}" stroke-width="1.8"{dash} '
                     f'marker-end="url(#arrow-{color_names[message.color]})"/>')
        label_y = AGENT_Y - 12 - (index % 3) * 14
        parts.append(_text(x2 + 4, label_y, message.label, message.color, "start", 11))
    for index, commit in enumerate(timeline.commits):
        x = _x(commit.t, end)
        color = BAD if commit.duplicate else GOOD
        right = x > WIDTH * 0.6
        parts.append(f'<circle cx="{x:.1f}" cy="{SERVICE_Y}" r="6" fill="{color}"/>')
        parts.append(_text(x - 9 if right else x + 9, SERVICE_Y + 18 + (index % 2) * 14,
                           commit.label, color, "end" if right else "start", 11,
                           "bold" if commit.duplicate else "normal"))
    if timeline.note:
        parts.append(_text(12, HEIGHT - 10, timeline.note, MUTED, size=11))
    parts.append("</svg>")
    return "\n".join(parts) + "\n"


def pictures() -> dict[str, str]:
    """File name → SVG text of every picture."""
    return {f"{timeline.name}.svg": svg(timeline) for timeline in TIMELINES}


def main(argv: list[str]) -> int:
    if argv[1:] == ["--check"]:
        stale = [name for name, text in pictures().items()
                 if not (OUT / name).is_file() or (OUT / name).read_text() != text]
        for name in stale:
            print(f"docs/images/timelines/{name} is stale: regenerate it with "
                  "`python docs/gen/timelines.py`", file=sys.stderr)
        return 1 if stale else 0
    OUT.mkdir(parents=True, exist_ok=True)
    for name, text in pictures().items():
        (OUT / name).write_text(text, encoding="utf-8")
        print(f"wrote docs/images/timelines/{name}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv))
