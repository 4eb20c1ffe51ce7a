"""CPU per sample of Limbo against its peers, each peer in its own virtual environment.

    python benchmarks/peers.py [--peers inspect_ai pydantic-evals deepeval] [--samples 200]
                               [--rounds 3] [--quick] [--cache DIR]

What is compared: the whole process's CPU time (user + system, ``os.wait4``) that each harness
spends per sample on the same work, an agent making the same four tool calls and being scored:

- **Limbo**: scripted episodes of the default experiment under pytest (``--limbo-sample N``
  worlds, records written), each a real episode: world, fault, agent, grade, record.
- **inspect_ai**: a Task of N samples solved by ``mockllm/model`` whose custom outputs are the
  four tool calls (then the answer), ``use_tools`` + ``generate``, scored by ``match()``, its
  log written (and once more with its live log off).
- **pydantic-evals**: a Dataset of N cases whose task runs a pydantic-ai Agent on a
  ``FunctionModel`` making the four tool calls, scored by ``EqualsExpected``.
- **deepeval**: N test cases from a traced (``@observe``) agent loop making the four tool
  calls, through ``evaluate`` with a trivial metric (no model judge) and its cache off.

Why it is fair: the four calls and their arguments are those of the default experiment's first
episode (``peers/plan.py``), the tools answer from memory as Limbo's simulated services do,
every model is a local script (no network, no tokens), every task file checks that each sample
made the four calls, and each harness does what it does by default around them (Limbo also
injects a fault and grades the world's effects). Start-up differs widely between harnesses, so
each is run on a small and a large count and the CPU difference is divided by the difference
in samples: the per-sample cost without the fixed cost, which is shown on its own. The runs of
all harnesses alternate, round after round, and the medians are printed; ratios are to Limbo's
per-sample CPU.

The peers are installed by this script (pinned, from PyPI) into
``~/.cache/limbo/bench-peers/<name>-<version>/`` (``--cache``), never into Limbo's environment:
they are not dependencies of Limbo.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TASKS = Path(__file__).resolve().parent / "peers"


@dataclass(frozen=True)
class Peer:
    name: str
    package: str
    """The PyPI name installed into the peer's own virtual environment."""
    version: str
    script: str
    args: tuple[str, ...] = ()
    env: dict[str, str] = field(default_factory=dict)


PEERS = {
    "inspect_ai": Peer("inspect_ai", "inspect-ai", "0.3.285", "inspect_task.py"),
    "inspect_ai-no-live-log": Peer("inspect_ai-no-live-log", "inspect-ai", "0.3.285",
                                   "inspect_task.py", ("--no-live-log",)),
    "pydantic-evals": Peer("pydantic-evals", "pydantic-evals", "2.62.0",
                           "pydantic_evals_task.py"),
    "deepeval": Peer("deepeval", "deepeval", "4.3.1", "deepeval_task.py",
                     env={"DEEPEVAL_TELEMETRY_OPT_OUT": "YES", "DEEPEVAL_UPDATE_WARNING_OPT_IN":
                          "NO", "ERROR_REPORTING": "NO"}),
}


def default_cache() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "limbo" / "bench-peers"


def venv_python(peer: Peer, cache: Path) -> Path:
    """The peer's interpreter, its virtual environment made and the pinned version installed
    first when they are not there yet."""
    home = cache / f"{peer.package.replace('-', '_')}-{peer.version}"
    python = home / "bin" / "python"
    probe = f"import importlib.metadata as m; print(m.version({peer.package!r}))"
    if python.is_file():
        found = subprocess.run([str(python), "-c", probe], capture_output=True, text=True,
                               check=False).stdout.strip()
        if found == peer.version:
            return python
    print(f"installing {peer.package}=={peer.version} into {home} …", flush=True)
    subprocess.run([sys.executable, "-m", "venv", "--clear", str(home)], check=True)
    done = subprocess.run([str(python), "-m", "pip", "install", "-q",
                           f"{peer.package}=={peer.version}"], capture_output=True, text=True,
                          check=False)
    if done.returncode != 0:
        raise SystemExit(f"pip install {peer.package}=={peer.version} failed:\n"
                         f"{done.stderr[-2000:]}")
    return python


def cpu_of(argv: list[str], cwd: Path, env: dict[str, str], ok: tuple[int, ...] = (0,)
           ) -> tuple[float, float]:
    """One process: its user + system CPU seconds and wall seconds; an exit status outside
    ``ok`` ends the run."""
    start = time.perf_counter()
    process = subprocess.Popen(argv, cwd=cwd, env=env, stdout=subprocess.DEVNULL,
                               stderr=subprocess.PIPE)
    assert process.stderr is not None
    errors = process.stderr.read()  # read before wait4: a full pipe would block the child
    _, status, usage = os.wait4(process.pid, 0)
    process.stderr.close()
    process.returncode = 0  # reaped above
    wall = time.perf_counter() - start
    if os.waitstatus_to_exitcode(status) not in ok:
        raise SystemExit(f"{' '.join(argv)} failed:\n{errors.decode(errors='replace')[-2000:]}")
    return usage.ru_utime + usage.ru_stime, wall


def run_limbo(samples: int | None, work: Path) -> tuple[float, int]:
    """Scripted episodes of the default experiment: ``samples`` worlds (``None``: all);
    CPU seconds and how many episodes were recorded."""
    records = work / "limbo.jsonl"
    for stale in work.glob("limbo*"):
        stale.unlink()
    argv = [sys.executable, "-m", "pytest", "specs", "-q", "-p", "no:cacheprovider",
            "-p", "no:randomly", f"--limbo-records={records}"]
    if samples is not None:
        argv.append(f"--limbo-sample={samples}")
    # exit status 1: some episodes failed (duplicates), as the default experiment's do
    cpu, _ = cpu_of(argv, ROOT, {**os.environ, "PYTHONPATH": str(ROOT)}, ok=(0, 1))
    with records.open("rb") as handle:
        return cpu, sum(1 for _ in handle)


def run_peer(peer: Peer, python: Path, samples: int, work: Path) -> float:
    """The peer's task file on ``samples`` samples, in a fresh folder; its CPU seconds."""
    scratch = Path(tempfile.mkdtemp(dir=work))
    argv = [str(python), str(TASKS / peer.script), str(samples)]
    if peer.script == "inspect_task.py":
        argv.append(str(scratch / "logs"))
    argv += peer.args
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    cpu, _ = cpu_of(argv, scratch, {**env, **peer.env})
    return cpu


@dataclass
class Figures:
    per_sample: list[float] = field(default_factory=list)
    fixed: list[float] = field(default_factory=list)
    counts: tuple[int, int] = (0, 0)

    def add(self, small: tuple[float, int], large: tuple[float, int]) -> None:
        (cpu_small, n_small), (cpu_large, n_large) = small, large
        per = (cpu_large - cpu_small) / (n_large - n_small)
        self.per_sample.append(per)
        self.fixed.append(cpu_small - per * n_small)
        self.counts = (n_small, n_large)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--peers", nargs="+", choices=sorted(PEERS),
                        default=["inspect_ai", "inspect_ai-no-live-log", "pydantic-evals",
                                 "deepeval"])
    parser.add_argument("--samples", type=int, default=200,
                        help="the large count of a peer's samples (the small one is a fifth); "
                        "Limbo runs the whole default experiment and a fifth of its worlds")
    parser.add_argument("--rounds", type=int, default=3, help="alternating rounds (medians)")
    parser.add_argument("--quick", action="store_true",
                        help="a check that everything runs: 20 samples, 1 round, Limbo on "
                        "200 worlds")
    parser.add_argument("--cache", type=Path, default=default_cache(),
                        help="where the peers' virtual environments live")
    args = parser.parse_args()
    if args.quick:
        args.samples, args.rounds = 20, 1
    large_n, small_n = args.samples, max(1, args.samples // 5)
    limbo_large, limbo_small = (200, 40) if args.quick else (None, 157)
    if large_n <= small_n:
        raise SystemExit(f"--samples {args.samples}: give at least 2")
    peers = [PEERS[name] for name in args.peers]
    pythons = {peer.name: venv_python(peer, args.cache) for peer in peers}
    figures: dict[str, Figures] = {"limbo": Figures(), **{p.name: Figures() for p in peers}}
    cases = ["limbo", *(p.name for p in peers)]
    with tempfile.TemporaryDirectory(prefix="limbo-peers-") as tmp:
        work = Path(tmp)
        for round_ in range(args.rounds):
            order = cases if round_ % 2 == 0 else cases[::-1]
            for name in order:
                sizes = ("small", "large") if round_ % 2 == 0 else ("large", "small")
                seen: dict[str, tuple[float, int]] = {}
                for size in sizes:
                    if name == "limbo":
                        seen[size] = run_limbo(limbo_small if size == "small" else limbo_large,
                                               work)
                    else:
                        n = small_n if size == "small" else large_n
                        seen[size] = (run_peer(PEERS[name], pythons[name], n, work), n)
                figures[name].add(seen["small"], seen["large"])
                print(f"round {round_ + 1}: {name}: {seen['small'][0]:.2f} s CPU for "
                      f"{seen['small'][1]}, {seen['large'][0]:.2f} s for {seen['large'][1]}",
                      flush=True)
    limbo = statistics.median(figures["limbo"].per_sample)
    print(f"\nCPU per sample (user + system of the whole process, large run minus small run, "
          f"medians of {args.rounds} alternating round(s); load average "
          f"{os.getloadavg()[0]:.1f})\n")
    print("| harness | version | samples (small, large) | CPU per sample | start-up CPU | "
          "× Limbo |")
    print("|---|---|---|---|---|---|")
    for name in cases:
        peer = PEERS.get(name)
        version = peer.version if peer else _limbo_version()
        per = statistics.median(figures[name].per_sample)
        fixed = statistics.median(figures[name].fixed)
        small, large = figures[name].counts
        label = "Limbo (scripted episodes)" if name == "limbo" else name
        print(f"| {label} | {version} | {small}, {large} | {1000 * per:.2f} ms | "
              f"{fixed:.2f} s | {per / limbo:.2f}× |")


def _limbo_version() -> str:
    done = subprocess.run([sys.executable, "-c", "import limbo_plugin; "
                           "print(limbo_plugin.__version__)"], capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(ROOT)}, check=False)
    return done.stdout.strip() or "this checkout"


if __name__ == "__main__":
    main()
