"""`start_workflow` against the FastMCP round trip, measured in the same run (issue 45, item 3).

    uv run nox -s bench -- --only starts

A git repository of 1,000 committed files, served by `deepwork serve` with workflow branches on
(a top-level start makes or switches to the run's branch) and the quality gate off, beside the
one-tool FastMCP floor server, both open at once. Each round: five warm calls of the floor, a
top-level `start_workflow` (then `abort_workflow`, back to the branch it came from), and a stack
pushed ten deep whose tenth `start_workflow` is the nested figure (then unwound). Two untimed
rounds first: the server sets up its change watch and its first snapshot. Figures: the floor's
call, both starts, and each start's median over the floor's median (budgets ≤ 10 × and ≤ 4 ×).
"""

from __future__ import annotations

import json
from typing import Any

from harness import CallFailed, connect
from workloads import NESTED_JOB, make_evidence_repo, make_nested_job

DEPTH = 10


async def starts(bench: Any) -> None:
    quick = bench.sizes.long_steps < 50
    files = 200 if quick else 1_000
    rounds = 3 if quick else 12
    repo = make_evidence_repo(bench.scratch / "starts_repo", files=files, outputs=0, output_bytes=0)
    root = repo.root
    make_nested_job(root)
    params = {"tracked_files": files, "rounds": rounds, "depth": DEPTH}
    floor = bench.figure("starts.floor_call", "FastMCP floor: one warm tool call", **params)
    top = bench.figure("starts.top_level", "start_workflow, top level (makes the branch)", **params)
    nested = bench.figure("starts.nested", f"start_workflow, nested at depth {DEPTH}", **params)
    args = ["serve", "--path", str(root), "--no-quality-gate"]
    with bench.stderr_log("starts") as log:
        async with (
            bench.floor(root, log) as fl,
            connect(bench.deepwork, args, cwd=root, stderr=log) as server,
        ):
            await fl.list_tools()
            await server.list_tools()
            for round_ in range(rounds + 2):
                timed = round_ >= 2
                for _ in range(5):
                    elapsed, _ = await fl.call("ping")
                    if timed:
                        floor.add(elapsed)
                elapsed, payload = await _start(server, "top level", 1)
                if timed:
                    top.add(elapsed)
                if not (isinstance(payload, dict) and payload.get("branch_name")):
                    raise CallFailed(
                        f"a top-level start made no branch: {json.dumps(payload)[:300]}"
                    )
                for level in range(2, DEPTH + 1):
                    elapsed, _ = await _start(server, f"level {level}", level)
                if timed:
                    nested.add(elapsed)
                for _ in range(DEPTH):
                    await server.call("abort_workflow", {"explanation": "benchmark unwind"})
    for key, figure, label in (
        ("starts.top_level_ratio", top, "top-level start / FastMCP round trip"),
        ("starts.nested_ratio", nested, f"nested start (depth {DEPTH}) / FastMCP round trip"),
    ):
        ratio = bench.figure(key, label, "x", start_ms=figure.median, floor_ms=floor.median)
        if figure.median is not None and floor.median:
            ratio.samples.append(figure.median / floor.median)


async def _start(server: Any, goal: str, depth: int) -> tuple[float, Any]:
    elapsed, payload = await server.call(
        "start_workflow", {"goal": goal, "job_name": NESTED_JOB, "workflow_name": "one"}
    )
    stack = payload.get("stack") if isinstance(payload, dict) else None
    if not isinstance(stack, list) or len(stack) != depth:
        raise CallFailed(f"start_workflow at depth {depth}: {json.dumps(payload)[:300]}")
    return elapsed, payload
