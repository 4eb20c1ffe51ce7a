"""Where a run's time goes: phases, garbage collection, and the profile's hottest functions.

    python benchmarks/profile_run.py [PYTEST ARGS…] [--top 15] [--html out.html]

Runs pytest in this process (default: the default experiment, serially, records to a temporary
file) under pyinstrument and prints

* the phases — interpreter and plugin start-up up to ``pytest_configure``, configuration (the
  spec registry), collection, the test loop, the terminal summary, exit — measured by hook
  timestamps, in wall and in this process's CPU time (which a loaded machine inflates less),
  and the time spent in the cyclic garbage collector (``gc.callbacks``);
* with Limbo and ``--phases-only``, the CPU time spent inside the episodes themselves
  (``run_episode``);
* the top functions by *own* time (time with that function on top of the stack, summed over every
  call path): the table the benchmarks README quotes as "the profile's top five";
* the top Limbo functions by *inclusive* time (counted once per call path, not per recursion).

The profile is a sampling one (1 ms), so it adds little; the phase times are real times.
``--html`` also writes pyinstrument's interactive tree.
"""

from __future__ import annotations

import argparse
import gc
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

START = time.perf_counter()
START_CPU = time.process_time()
ROOT = Path(__file__).resolve().parents[1]


class PhaseClock:
    """A pytest plugin recording when each phase starts; ``gc`` callbacks sum collector time."""

    def __init__(self) -> None:
        self.marks: dict[str, float] = {}
        self.cpu_marks: dict[str, float] = {}
        self.gc_seconds = 0.0
        self.episode_cpu = 0.0
        self.episodes = 0
        self._gc_start = 0.0

    def gc_callback(self, phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            self._gc_start = time.perf_counter()
        else:
            self.gc_seconds += time.perf_counter() - self._gc_start

    def time_episodes(self) -> None:
        """Sum the CPU time spent inside ``run_episode`` (the episode itself: world, agent,
        grading, the record object), so the test loop's CPU splits into the episodes and what
        pytest and the plugin add per item."""
        import limbo_plugin.episode as episode

        inner = episode.run_episode

        def timed(*args: Any, **kwargs: Any) -> Any:
            start = time.process_time()
            try:
                return inner(*args, **kwargs)
            finally:
                self.episode_cpu += time.process_time() - start
                self.episodes += 1

        episode.run_episode = timed  # type: ignore[assignment]

    def mark(self, name: str) -> None:
        self.marks.setdefault(name, time.perf_counter())
        self.cpu_marks.setdefault(name, time.process_time())

    # the hooks, each as early as pytest allows
    def pytest_configure(self, config: Any) -> None:
        self.mark("configure")

    def pytest_collection(self, session: Any) -> None:
        self.mark("collection")

    def pytest_runtestloop(self, session: Any) -> None:
        self.mark("test loop")

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        self.mark("terminal summary")

    def pytest_unconfigure(self, config: Any) -> None:
        self.mark("exit")


def own_times(root: Any) -> dict[str, float]:
    """Self time per function, summed over the whole tree."""
    totals: dict[str, float] = defaultdict(float)
    stack = [root]
    while stack:
        frame = stack.pop()
        if not frame.is_synthetic:
            name = f"{frame.function}  {frame.file_path_short}:{frame.line_no}"
            totals[name] += frame.total_self_time
        stack.extend(frame.children)
    return totals


def inclusive_times(root: Any, prefix: str) -> dict[str, float]:
    """Inclusive time per function whose file is under ``prefix``, once per call path."""
    totals: dict[str, float] = defaultdict(float)

    def walk(frame: Any, active: frozenset[str]) -> None:
        name = f"{frame.function}  {frame.file_path_short}:{frame.line_no}"
        inside = prefix in (frame.file_path or "")
        if inside and name not in active:
            totals[name] += frame.time
            active = active | {name}
        for child in frame.children:
            walk(child, active)

    sys.setrecursionlimit(max(sys.getrecursionlimit(), 20_000))
    walk(root, frozenset())
    return totals


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--top", type=int, default=15)
    parser.add_argument("--html", default=None, help="write pyinstrument's HTML tree here")
    parser.add_argument("--phases-only", action="store_true",
                        help="no profiler: the phase times alone, undisturbed")
    args, pytest_args = parser.parse_known_args()
    from pyinstrument import Profiler

    clock = PhaseClock()
    with tempfile.TemporaryDirectory() as tmp:
        limbo = "no:limbo" not in pytest_args
        if limbo and not any(a.startswith("--limbo-records") for a in pytest_args):
            pytest_args.append(f"--limbo-records={Path(tmp) / 'episodes.jsonl'}")
        if limbo and args.phases_only:  # not under the profiler: the timer would show in it
            clock.time_episodes()
        profiler = Profiler(interval=0.001)
        gc.callbacks.append(clock.gc_callback)
        if not args.phases_only:
            profiler.start()
        import pytest

        # timing the episodes imports Limbo before pytest starts, too late for the assertion
        # rewriter (which Limbo opts out of anyway): its warning would only add a summary
        quiet = ["-W", "ignore::pytest.PytestAssertRewriteWarning"]
        exit_code = pytest.main(["-q", "-p", "no:cacheprovider", *quiet, *pytest_args],
                                plugins=[clock])
        end = time.perf_counter()
        end_cpu = time.process_time()
        if not args.phases_only:
            profiler.stop()
        gc.callbacks.remove(clock.gc_callback)
    print(f"pytest {' '.join(pytest_args)} -> exit {int(exit_code)}; "
          f"wall {end - START:.2f} s" + ("" if args.phases_only else " (profiled)"))
    order = ["configure", "collection", "test loop", "terminal summary", "exit"]
    marks = [("start-up", START, START_CPU)] + [
        (name, clock.marks[name], clock.cpu_marks[name]) for name in order
        if name in clock.marks]
    print(f"  {'phase':18} {'wall s':>6}  {'CPU s':>6}")
    for (name, at, cpu_at), (_, following, cpu_following) in zip(
            marks, [*marks[1:], ("end", end, end_cpu)], strict=True):
        print(f"  {name:18} {following - at:6.2f}  {cpu_following - cpu_at:6.2f}")
    print(f"  {'(garbage collector':18} {clock.gc_seconds:6.2f} s, spread over the phases)")
    if clock.episodes:
        print(f"  {'(inside episodes':18} {clock.episode_cpu:6.2f} s CPU over {clock.episodes} "
              f"episodes, {clock.episode_cpu / clock.episodes * 1000:.2f} ms each)")
    if args.phases_only:
        return
    root = profiler.last_session.root_frame()
    print(f"\ntop {args.top} functions by own time")
    for name, seconds in sorted(own_times(root).items(), key=lambda kv: -kv[1])[:args.top]:
        print(f"  {seconds:6.3f} s  {name}")
    print(f"\ntop {args.top} Limbo functions by inclusive time")
    limbo = inclusive_times(root, "limbo_plugin")
    for name, seconds in sorted(limbo.items(), key=lambda kv: -kv[1])[:args.top]:
        print(f"  {seconds:6.3f} s  {name}")
    if args.html:
        Path(args.html).write_text(profiler.output_html(), encoding="utf-8")
        print(f"\nHTML tree: {args.html}")


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    main()
