"""What the external quality gate adds to a step that has no review (issue 45, item 5).

    uv run nox -s bench -- --only gate_cost    # with the other figures' report
    uv run python benchmarks/gate_cost.py      # this file alone, printed

In process, server side (`WorkflowEngine.finish`, what the tool runs in its worker thread): the
50-step workflow of `workflow_50` (no step has a review, the project has no `.deepreview` file)
in a git repository of 1,000 committed files, with the project's change watch live as the
server keeps it. Runs alternate between an engine without a gate and one with the external gate
(`claude` as the reviewer, never called: nothing is to be reviewed), so drift in the machine's
load hits both alike. Figures: the median `finished_step` of each, and the difference (budget
≤ 1 ms); the CPU time of both is in the JSON.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

from workloads import LONG_JOB, make_evidence_repo, make_long_workflow

FILES = 1_000
QUICK_FILES = 200


def gate_cost(files: int, steps: int, rounds: int) -> dict[str, tuple[list[float], list[float]]]:
    """(wall ms, CPU ms) of every `finish`, without a gate ("off") and with it ("on")."""
    from deepwork_core.base.config import QualityGateConfig
    from deepwork_core.engine.workflow import WorkflowEngine
    from deepwork_core.evidence.watch import ChangeWatch
    from deepwork_core.jobs.discovery import JobCatalog
    from deepwork_core.state.sessions import SessionStore
    from deepwork_core.state.store.opening import open_store
    from deepwork_mcp.server import build_gate

    samples: dict[str, tuple[list[float], list[float]]] = {"off": ([], []), "on": ([], [])}
    with tempfile.TemporaryDirectory(prefix="deepwork-gate-bench-") as folder:
        root = make_evidence_repo(Path(folder) / "p", files=files, outputs=0, output_bytes=0).root
        root = root.resolve()
        outputs = make_long_workflow(root, steps)
        watch = ChangeWatch(root, global_excludes=Path(folder) / "no-user-ignore-file")
        if not watch.start():
            raise RuntimeError("the change watch did not start on the benchmark repository")
        gate = build_gate(QualityGateConfig(enabled=True, external_runner="claude"))
        try:
            with open_store(None, root) as store:
                catalog = JobCatalog.for_project(root)
                for _ in range(rounds):
                    for name, used in (("off", None), ("on", gate)):
                        engine = WorkflowEngine(
                            root, catalog, SessionStore(store, root), gate=used, watch=watch
                        )
                        wall, cpu = samples[name]
                        engine.start("gate cost", LONG_JOB, "long", inputs={})
                        for index, path in enumerate(outputs, start=1):
                            began, began_cpu = time.perf_counter(), time.thread_time()
                            result = engine.finish({f"s{index:02d}_out.md": path})
                            cpu.append((time.thread_time() - began_cpu) * 1000)
                            wall.append((time.perf_counter() - began) * 1000)
                            if result.status.value not in ("next_step", "workflow_complete"):
                                raise RuntimeError(f"finish answered {result.status}")
        finally:
            if gate is not None:
                gate.close()
            watch.close()
    return samples


# --- the figures of `benchmarks/run.py` -------------------------------------------------------


async def gate_cost_figures(bench: Any) -> None:
    """Fill the `gate_cost.*` figures (see the module docstring)."""
    import asyncio

    quick = bench.sizes.long_steps < 50
    files, steps = (QUICK_FILES if quick else FILES), bench.sizes.long_steps
    rounds = 2 if quick else 6
    samples = await asyncio.to_thread(gate_cost, files, steps, rounds)
    params = {"tracked_files": files, "steps": steps, "rounds": rounds}
    off = bench.figure("gate_cost.off", "step without review: gate off, finished_step", **params)
    on = bench.figure("gate_cost.on", "step without review: external gate on", **params)
    for figure, name in ((off, "off"), (on, "on")):
        wall, cpu = samples[name]
        figure.samples.extend(wall)
        figure.params["cpu_ms_median"] = round(statistics.median(cpu), 3)
    added = bench.figure("gate_cost.added", "step without review: the gate adds", **params)
    if off.median is not None and on.median is not None:
        added.samples.append(on.median - off.median)
        cpu_added = statistics.median(samples["on"][1]) - statistics.median(samples["off"][1])
        added.params.update(
            off_ms=off.median, on_ms=on.median, ratio=on.median / off.median,
            cpu_added_ms=round(cpu_added, 3),
        )  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true", help="10 steps, 200 files")
    args = parser.parse_args()
    files, steps, rounds = (QUICK_FILES, 10, 2) if args.quick else (FILES, 50, 6)
    samples = gate_cost(files, steps, rounds)
    medians = {}
    for name, (wall, cpu) in samples.items():
        medians[name] = statistics.median(wall), statistics.median(cpu)
        print(f"gate {name}: finished_step median {medians[name][0]:.2f} ms wall, "
              f"{medians[name][1]:.2f} ms CPU (n={len(wall)})")  # fmt: skip
    added = medians["on"][0] - medians["off"][0]
    print(f"the gate adds {added:.2f} ms wall, {medians['on'][1] - medians['off'][1]:.2f} ms CPU "
          f"({medians['on'][0] / medians['off'][0]:.2f}x; budget 1 ms)")  # fmt: skip


if __name__ == "__main__":
    main()
