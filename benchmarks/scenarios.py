"""The benchmark scenarios: each generates its workload, drives the servers, and fills figures.

A scenario is an async function taking the `Bench` context. It records figures with
`bench.figure(key, label, unit)`; the runner marks every figure a scenario did not finish as
unavailable (the feature is not there yet) or failed (anything else).
"""

from __future__ import annotations

import json
import os
import socket
import sys
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from deepwork_core.base.process import run_bounded
from harness import CallFailed, Connection, ServerUnavailable, connect
from report import Figure
from workloads import (
    LONG_JOB,
    NESTED_JOB,
    edit_job_summary,
    make_evidence_repo,
    make_jobs_project,
    make_long_workflow,
    make_mixed_project,
    make_nested_job,
    make_review_repo,
)

HOOK_TIMEOUT = 60.0
FLOOR_SERVER = Path(__file__).with_name("floor_server.py")


@dataclass(frozen=True)
class Sizes:
    """Workload sizes and repetitions; `FULL` is what the budget was set for."""

    cold_start_runs: int
    job_counts: dict[str, int]
    get_workflows_servers: int
    repeat_calls: int
    edits: int
    long_steps: int
    long_runs: int
    nested_depth: int
    nested_runs: int
    review_files: int
    review_changed: int
    review_deepreviews: int
    review_calls: int
    hook_runs: int
    evidence_checkpoints: int
    #: Tracked files of the repository the fan-in merge queue merges into.
    fan_out_files: int = 10_000
    #: Tracked files of the repository of the change-watch checkpoint figures.
    watch_files: int = 10_000


FULL = Sizes(
    cold_start_runs=5,
    job_counts={"small": 10, "medium": 100, "large": 1000},
    get_workflows_servers=3,
    repeat_calls=10,
    edits=3,
    long_steps=50,
    long_runs=5,
    nested_depth=10,
    nested_runs=5,
    review_files=5000,
    review_changed=2000,
    review_deepreviews=20,
    review_calls=10,
    hook_runs=20,
    evidence_checkpoints=30,
)

QUICK = Sizes(
    cold_start_runs=2,
    job_counts={"small": 5, "medium": 20, "large": 50},
    get_workflows_servers=1,
    repeat_calls=3,
    edits=2,
    long_steps=10,
    long_runs=2,
    nested_depth=10,
    nested_runs=1,
    review_files=400,
    review_changed=160,
    review_deepreviews=4,
    review_calls=3,
    hook_runs=5,
    evidence_checkpoints=10,
    fan_out_files=500,
    watch_files=1000,
)


@dataclass
class Bench:
    """What every scenario needs: the commands, sizes, a scratch folder and the figures."""

    deepwork: str
    sizes: Sizes
    scratch: Path
    figures: dict[str, Figure] = field(default_factory=dict)

    def figure(self, key: str, label: str, unit: str = "ms", /, **params: Any) -> Figure:
        figure = Figure(key, label, unit, params=dict(params))
        self.figures[key] = figure
        return figure

    def folder(self, name: str) -> Path:
        path = self.scratch / name
        path.mkdir(parents=True, exist_ok=True)
        return path

    def stderr_log(self, name: str) -> TextIO:
        return (self.scratch / f"{name}.stderr.log").open("a+", encoding="utf-8")

    def serve(self, project: Path, log: TextIO, env: dict[str, str] | None = None) -> Any:
        """Connect to `deepwork serve` on `project` (no git branches, no quality gate)."""
        args = ["serve", "--path", str(project), "--no-branch", "--no-quality-gate"]
        return connect(self.deepwork, args, cwd=project, stderr=log, env=env)

    def floor(self, project: Path, log: TextIO) -> Any:
        return connect(sys.executable, [str(FLOOR_SERVER)], cwd=project, stderr=log)


# --- 1 and 8: cold start, context cost ----------------------------------------------------------


async def cold_start(bench: Bench) -> None:
    project = bench.folder("cold_start")
    make_jobs_project(project, bench.sizes.job_counts["small"])
    jobs = bench.sizes.job_counts["small"]
    dw_list = bench.figure(
        "cold_start.deepwork.tools_list", "cold start deepwork: spawn → tools/list", jobs=jobs
    )
    dw_first = bench.figure(
        "cold_start.deepwork.first_get_workflows",
        "cold start deepwork: spawn → first get_workflows",
        jobs=jobs,
    )
    fl_list = bench.figure("cold_start.floor.tools_list", "cold start FastMCP floor: → tools/list")
    fl_first = bench.figure(
        "cold_start.floor.first_call", "cold start FastMCP floor: → first tool call"
    )
    fl_call = bench.figure(
        "cold_start.floor.call", "FastMCP floor: one warm tool call (per-call floor)"
    )
    fl_rss = bench.figure("cold_start.floor.peak_rss", "peak RSS of the FastMCP floor", "MiB")
    dw_rss = bench.figure(
        "cold_start.deepwork.peak_rss",
        f"peak RSS of deepwork serve, {jobs} jobs",
        "MiB",
        jobs=jobs,
    )
    context: Figure | None = None
    with bench.stderr_log("cold_start") as log:
        # Alternate the two servers so drift in machine load hits both alike.
        for _ in range(bench.sizes.cold_start_runs):
            async with bench.floor(project, log) as floor:
                listed, _, _ = await floor.list_tools()
                await floor.call("ping")
                fl_list.samples.append(_ms(listed - floor.spawned_at))
                fl_first.samples.append(_ms(floor.tap.last_answer_at - floor.spawned_at))
                for _ in range(10):
                    elapsed, _ = await floor.call("ping")
                    fl_call.add(elapsed, floor.last_client_ms)
                fl_rss.samples.append(floor.peak_rss_kib() / 1024)
            async with bench.serve(project, log) as server:
                listed, size, names = await server.list_tools()
                await server.call("get_workflows")
                dw_first.samples.append(_ms(server.tap.last_answer_at - server.spawned_at))
                dw_rss.samples.append(server.peak_rss_kib() / 1024)
                dw_list.samples.append(_ms(listed - server.spawned_at))
                if context is None:
                    instructions = len((server.instructions or "").encode())
                    context = bench.figure(
                        "context.tools_and_instructions",
                        f"context cost: tools/list answer + instructions ({len(names)} tools)",
                        "bytes",
                        tools=sorted(names),
                        tools_list_bytes=size,
                        instructions_bytes=instructions,
                    )
                    context.samples.append(size + instructions)
    ratio = bench.figure(
        "cold_start.ratio",
        "cold start to first answer, deepwork / floor",
        "x",
        deepwork_ms=dw_first.median,
        floor_ms=fl_first.median,
    )
    if dw_first.median is not None and fl_first.median:
        ratio.samples.append(dw_first.median / fl_first.median)


# --- 2 and 7: get_workflows at three sizes, peak memory ---------------------------------------


def _check_listing(payload: Any, expected: list[str], must_contain: str | None = None) -> None:
    """Sanity checks on a get_workflows answer: every generated job listed, edits visible."""
    text = json.dumps(payload)
    if not isinstance(payload, dict) or not isinstance(payload.get("jobs"), list):
        raise CallFailed(f"get_workflows answered without a jobs list: {text[:300]}")
    listed = {job.get("name") for job in payload["jobs"] if isinstance(job, dict)}
    missing = [name for name in expected if name not in listed]
    if missing:
        errors = payload.get("errors") or []
        raise CallFailed(
            f"get_workflows lists {len(listed)} jobs but lacks {len(missing)} generated ones "
            f"(e.g. {missing[0]}); errors: {json.dumps(errors)[:400]}"
        )
    if must_contain is not None and must_contain not in text:
        raise CallFailed(f"get_workflows does not show the edit {must_contain!r}")


async def get_workflows(bench: Bench) -> None:
    sizes = bench.sizes
    memory = bench.figure(
        "memory.peak_rss",
        f"peak RSS (VmHWM) of the server, {sizes.job_counts['large']} jobs",
        "MiB",
        jobs=sizes.job_counts["large"],
    )
    for size, count in sizes.job_counts.items():
        project = bench.folder(f"jobs_{count}")
        workload = make_jobs_project(project, count)
        first = bench.figure(f"get_workflows.{size}.first", f"get_workflows, {count} jobs: first")
        repeat = bench.figure(
            f"get_workflows.{size}.repeat", f"get_workflows, {count} jobs: repeat"
        )
        edited = bench.figure(
            f"get_workflows.{size}.after_edit", f"get_workflows, {count} jobs: after one edit"
        )
        for figure in (first, repeat, edited):
            figure.params["jobs"] = count
        edit_number = 0
        with bench.stderr_log(f"jobs_{count}") as log:
            for _ in range(sizes.get_workflows_servers):
                async with bench.serve(project, log) as server:
                    await server.list_tools()
                    elapsed, payload = await server.call("get_workflows")
                    _check_listing(payload, workload.job_names)
                    first.add(elapsed, server.last_client_ms)
                    for _ in range(sizes.repeat_calls):
                        elapsed, _ = await server.call("get_workflows")
                        repeat.add(elapsed, server.last_client_ms)
                    for _ in range(sizes.edits):
                        edit_number += 1
                        name = workload.job_names[(edit_number * 7) % count]
                        summary = f"Edited by the benchmark, round {edit_number:03d}"
                        edit_job_summary(workload.job_yml(name), summary)
                        elapsed, payload = await server.call("get_workflows")
                        _check_listing(payload, workload.job_names, must_contain=summary)
                        edited.add(elapsed, server.last_client_ms)
                    if size == "large":
                        memory.samples.append(server.peak_rss_kib() / 1024)


async def mixed_catalog(bench: Bench) -> None:
    """get_workflows over a catalog of both job formats, half each (the large size)."""
    count = bench.sizes.job_counts["large"]
    project = bench.folder(f"mixed_{count}")
    workload = make_mixed_project(project, count)
    first = bench.figure("mixed_catalog.first", f"get_workflows, {count} mixed jobs: first")
    repeat = bench.figure("mixed_catalog.repeat", f"get_workflows, {count} mixed jobs: repeat")
    for figure in (first, repeat):
        figure.params["jobs"] = count
    with bench.stderr_log(f"mixed_{count}") as log:
        for _ in range(bench.sizes.get_workflows_servers):
            async with bench.serve(project, log) as server:
                await server.list_tools()
                elapsed, payload = await server.call("get_workflows")
                _check_listing(payload, workload.job_names)
                first.add(elapsed, server.last_client_ms)
                for _ in range(bench.sizes.repeat_calls):
                    elapsed, _ = await server.call("get_workflows")
                    repeat.add(elapsed, server.last_client_ms)


# --- 3 and 4: a 50-step workflow, nesting ten deep --------------------------------------------


def _status(payload: Any) -> str | None:
    return payload.get("status") if isinstance(payload, dict) else None


def _stack_depth(payload: Any) -> int:
    stack = payload.get("stack") if isinstance(payload, dict) else None
    return len(stack) if isinstance(stack, list) else -1


async def workflows(bench: Bench) -> None:
    sizes = bench.sizes
    project = bench.folder("workflows")
    outputs = make_long_workflow(project, sizes.long_steps)
    nested_outputs = make_nested_job(project)
    steps = sizes.long_steps
    start = bench.figure(
        "workflow_50.start_workflow", f"{steps}-step workflow: start_workflow", steps=steps
    )
    finish = bench.figure(
        "workflow_50.finished_step", f"{steps}-step workflow: finished_step", steps=steps
    )
    total = bench.figure(
        "workflow_50.total", f"{steps}-step workflow: start + {steps} × finished_step", steps=steps
    )
    depth = sizes.nested_depth
    n_start = bench.figure("nested_10.start", f"nested: start_workflow at depth {depth}")
    n_finish = bench.figure("nested_10.finish", f"nested: finished_step at depth {depth}")
    n_abort = bench.figure("nested_10.abort", f"nested: abort_workflow at depth {depth}")
    for figure in (n_start, n_finish, n_abort):
        figure.params["depth"] = depth
    navigation = (
        bench.figure("navigation.go_to_step", f"{steps}-step workflow: go_to_step back 4 steps"),
        bench.figure("navigation.get_active_workflow", "get_active_workflow"),
        bench.figure("navigation.abort_workflow", "abort_workflow of a one-deep stack"),
    )

    with bench.stderr_log("workflows") as log:
        async with bench.serve(project, log) as server:
            await server.list_tools()
            await server.call("get_workflows")
            for run in range(sizes.long_runs):
                elapsed, payload = await server.call(
                    "start_workflow",
                    {"goal": f"benchmark run {run}", "job_name": LONG_JOB, "workflow_name": "long"},
                )
                start.add(elapsed, server.last_client_ms)
                run_total = elapsed
                for index, path in enumerate(outputs, start=1):
                    elapsed, payload = await server.call(
                        "finished_step", {"outputs": {f"s{index:02d}_out.md": path}}
                    )
                    finish.add(elapsed, server.last_client_ms)
                    run_total += elapsed
                    expected = "workflow_complete" if index == steps else "next_step"
                    if _status(payload) != expected:
                        raise CallFailed(
                            f"finished_step {index}/{steps} answered {_status(payload)!r}, "
                            f"expected {expected!r}: {json.dumps(payload)[:300]}"
                        )
                total.samples.append(run_total)

            for _ in range(sizes.nested_runs):
                await _nested_run(server, nested_outputs[0], depth, n_start, n_finish, n_abort)
            for _ in range(sizes.long_runs):
                await _navigation_run(server, outputs, *navigation)


async def _nested_run(
    server: Connection, output: str, depth: int, start: Figure, finish: Figure, abort: Figure
) -> None:
    """Push `depth` workflows, finish the top one, push again, abort it, then unwind."""

    async def push(level: int) -> float:
        elapsed, payload = await server.call(
            "start_workflow",
            {"goal": f"nested level {level}", "job_name": NESTED_JOB, "workflow_name": "one"},
        )
        if _stack_depth(payload) != level:
            raise CallFailed(f"start_workflow at level {level}: stack {json.dumps(payload)[:300]}")
        return elapsed

    for level in range(1, depth + 1):
        elapsed = await push(level)
    start.add(elapsed, server.last_client_ms)
    elapsed, payload = await server.call("finished_step", {"outputs": {"s01_out.md": output}})
    if _status(payload) != "workflow_complete" or _stack_depth(payload) != depth - 1:
        raise CallFailed(f"finished_step at depth {depth}: {json.dumps(payload)[:300]}")
    finish.add(elapsed, server.last_client_ms)
    await push(depth)
    elapsed, payload = await server.call("abort_workflow", {"explanation": "benchmark abort"})
    if _stack_depth(payload) != depth - 1:
        raise CallFailed(f"abort_workflow at depth {depth}: {json.dumps(payload)[:300]}")
    abort.add(elapsed, server.last_client_ms)
    for level in range(depth - 1, 0, -1):
        _, payload = await server.call("abort_workflow", {"explanation": "unwind"})
        if _stack_depth(payload) != level - 1:
            raise CallFailed(f"abort_workflow while unwinding: {json.dumps(payload)[:300]}")


async def _navigation_run(
    server: Connection, outputs: list[str], go: Figure, active: Figure, abort: Figure
) -> None:
    """Start the long workflow, finish five steps, jump back and forth, then abort it."""
    _, payload = await server.call(
        "start_workflow", {"goal": "navigation", "job_name": LONG_JOB, "workflow_name": "long"}
    )
    for index in range(1, 6):
        await server.call(
            "finished_step", {"outputs": {f"s{index:02d}_out.md": outputs[index - 1]}}
        )
    for _ in range(5):
        elapsed, payload = await server.call("go_to_step", {"step_id": "s02"})
        begin = payload.get("begin_step") if isinstance(payload, dict) else None
        if not isinstance(begin, dict) or begin.get("step_id") != "s02":
            raise CallFailed(f"go_to_step: {json.dumps(payload)[:300]}")
        go.add(elapsed, server.last_client_ms)
        elapsed, payload = await server.call("get_active_workflow", {})
        if _stack_depth(payload) != 1:
            raise CallFailed(f"get_active_workflow: {json.dumps(payload)[:300]}")
        active.add(elapsed, server.last_client_ms)
        for index in range(2, 6):
            await server.call(
                "finished_step", {"outputs": {f"s{index:02d}_out.md": outputs[index - 1]}}
            )
    elapsed, payload = await server.call("abort_workflow", {"explanation": "benchmark abort"})
    if _stack_depth(payload) != 0:
        raise CallFailed(f"abort_workflow: {json.dumps(payload)[:300]}")
    abort.add(elapsed, server.last_client_ms)


# --- 5: reviews --------------------------------------------------------------------------------


async def reviews(bench: Bench) -> None:
    sizes = bench.sizes
    repo = make_review_repo(
        bench.scratch / "review_repo",
        files=sizes.review_files,
        changed=sizes.review_changed,
        deepreview_files=sizes.review_deepreviews,
    )
    params = {
        "tracked_files": repo.tracked,
        "changed_files": len(repo.changed),
        "deepreview_files": repo.deepreview_files,
        "rules": repo.rules,
    }
    first = bench.figure(
        "reviews.get_review_instructions.first",
        "get_review_instructions: first call",
        **params,
    )
    instructions = bench.figure(
        "reviews.get_review_instructions",
        f"get_review_instructions ({len(repo.changed)} changed of {repo.tracked})",
        **params,
    )
    configured = bench.figure(
        "reviews.get_configured_reviews",
        f"get_configured_reviews with {len(repo.changed)} paths",
        **params,
    )
    with bench.stderr_log("reviews") as log:
        async with bench.serve(repo.root, log) as server:
            await server.list_tools()
            for call in range(bench.sizes.review_calls + 1):
                elapsed, payload = await server.call("get_review_instructions")
                text = payload if isinstance(payload, str) else json.dumps(payload)
                if "Task" not in text and "task" not in text:
                    raise CallFailed(f"get_review_instructions gave no tasks: {text[:300]}")
                (first if call == 0 else instructions).add(elapsed, server.last_client_ms)
                instructions.params["answer_bytes"] = len(text.encode())
            for _ in range(bench.sizes.review_calls):
                elapsed, payload = await server.call(
                    "get_configured_reviews", {"only_rules_matching_files": repo.changed}
                )
                if not isinstance(payload, list) or not payload:
                    raise CallFailed(f"get_configured_reviews: {json.dumps(payload)[:300]}")
                configured.add(elapsed, server.last_client_ms)
                configured.params["rules_matched"] = len(payload)


# --- 6: deepwork hook ---------------------------------------------------------------------------


def _timed_process(argv: list[str], cwd: Path, stdin: str | None = None) -> tuple[float, Any]:
    began = time.perf_counter()
    result = run_bounded(argv, cwd=cwd, timeout=HOOK_TIMEOUT, input_text=stdin)
    return _ms(time.perf_counter() - began), result


async def hook(bench: Bench) -> None:
    project = bench.folder("hook")
    event = {
        "session_id": "benchmark",
        "transcript_path": str(project / "transcript.jsonl"),
        "cwd": str(project),
        "hook_event_name": "PostToolUse",
        "tool_name": "Bash",
        "tool_input": {"command": "ls -la", "description": "List files"},
        "tool_response": {"stdout": "", "stderr": "", "interrupted": False},
        "tool_use_id": "toolu_benchmark",
    }
    no_op = bench.figure(
        "hook.no_op",
        "deepwork hook post_commit_reminder, no-op event",
        event="PostToolUse Bash `ls -la`",
    )
    floor = bench.figure("hook.python_floor", "python -c pass (process floor)")
    argv = [bench.deepwork, "hook", "post_commit_reminder"]
    for _ in range(bench.sizes.hook_runs):
        elapsed, _ = _timed_process([sys.executable, "-c", "pass"], project)
        floor.samples.append(elapsed)
        elapsed, result = _timed_process(argv, project, json.dumps(event))
        if result.returncode != 0:
            if "No such command" in result.stderr or "ModuleNotFoundError" in result.stderr:
                raise ServerUnavailable(
                    f"deepwork hook is not available: {_last_line(result.stderr)}"
                )
            raise CallFailed(
                f"deepwork hook exited {result.returncode}: {_last_line(result.stderr)}"
            )
        try:
            answer = json.loads(result.stdout)
        except ValueError:
            raise CallFailed(f"deepwork hook printed no JSON: {result.stdout[:200]!r}") from None
        if "additionalContext" in json.dumps(answer):
            raise CallFailed(f"deepwork hook reacted to a non-commit event: {result.stdout[:200]}")
        no_op.samples.append(elapsed)
        no_op.params["answer"] = result.stdout.strip()[:200]


# --- evidence: hashes and the scope guard at a checkpoint ---------------------------------------


async def evidence(bench: Bench) -> None:
    """The evidence work of one checkpoint, in process: hash the step's outputs, re-check the
    earlier evidence, snapshot the repository and list undeclared changes."""
    from datetime import UTC, datetime

    from deepwork_core.evidence.audit import audit_checkpoint
    from deepwork_core.evidence.hashes import bind, hash_outputs
    from deepwork_core.evidence.scope import take_snapshot
    from deepwork_core.evidence.verdicts import VerdictKind

    repo = make_evidence_repo(
        bench.scratch / "evidence_repo", files=2000, outputs=10, output_bytes=100 * 1024
    )
    root = repo.root.resolve()
    params = {"tracked_files": repo.tracked, "outputs": len(repo.outputs), "output_kb": 100}
    total = bench.figure("evidence.checkpoint", "evidence + scope guard per checkpoint", **params)
    hashing = bench.figure("evidence.hashing", "hash 10 outputs, re-check earlier", **params)
    guard = bench.figure("evidence.scope_guard", "scope guard alone: snapshot, compare", **params)
    before = take_snapshot(root)
    if before is None:
        raise CallFailed("the evidence repository is not a git work tree")
    earlier = bind(
        hash_outputs(root, {"earlier": repo.outputs}), VerdictKind.REVIEWER, datetime.now(UTC)
    )
    for _ in range(bench.sizes.evidence_checkpoints):
        began = time.perf_counter()
        audit = audit_checkpoint(root, {"step": repo.outputs}, earlier, before)
        ended = time.perf_counter()
        if audit.stale or audit.undeclared or len(audit.hashes) != len(repo.outputs):
            raise CallFailed(f"unexpected audit: stale={audit.stale} extra={audit.undeclared}")
        total.samples.append(_ms(ended - began))
        began = time.perf_counter()
        audit_checkpoint(root, {"step": repo.outputs}, earlier, None)
        hashing.samples.append(_ms(time.perf_counter() - began))
        began = time.perf_counter()
        audit_checkpoint(root, {}, [], before)
        guard.samples.append(_ms(time.perf_counter() - began))


async def evidence_watch(bench: Bench) -> None:
    """One checkpoint of a step that wrote three new outputs, in a repository of 10,000 tracked
    files: evidence plus scope guard with the change watch, and with `git status` alone."""
    from datetime import UTC, datetime

    from deepwork_core.evidence.audit import audit_checkpoint
    from deepwork_core.evidence.hashes import bind, hash_outputs
    from deepwork_core.evidence.scope import take_snapshot
    from deepwork_core.evidence.verdicts import VerdictKind
    from deepwork_core.evidence.watch import ChangeWatch

    files = bench.sizes.watch_files
    repo = make_evidence_repo(
        bench.scratch / "watch_repo", files=files, outputs=10, output_bytes=4 * 1024
    )
    root = repo.root.resolve()
    earlier = bind(
        hash_outputs(root, {"earlier": repo.outputs}), VerdictKind.REVIEWER, datetime.now(UTC)
    )
    params = {"tracked_files": repo.tracked, "new_outputs": 3, "earlier_evidence": 10}
    watched = bench.figure(
        "evidence_10k.watch", f"checkpoint, {files} files, change watch", **params
    )
    plain = bench.figure("evidence_10k.git_status", f"checkpoint, {files} files, git status")
    plain.params.update(params)
    config_home = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    watch = ChangeWatch(root, global_excludes=Path(config_home) / "git" / "ignore")
    if not watch.start():
        raise CallFailed("the change watch did not start on the benchmark repository")
    try:
        for figure, using in ((plain, None), (watched, watch)):
            began = take_snapshot(root, watch=using)
            tag = "git" if using is None else "watch"
            for step in range(bench.sizes.evidence_checkpoints):
                outputs = {}
                for index in range(3):
                    relative = f"out/{tag}_{step:03d}_{index}.md"
                    (root / relative).write_text(f"step {step} output {index}\n" * 200)
                    outputs[f"result_{index}"] = relative
                started = time.perf_counter()
                audit = audit_checkpoint(root, {"step": outputs}, earlier, began, watch=using)
                figure.samples.append(_ms(time.perf_counter() - started))
                if audit.stale or audit.undeclared or audit.snapshot is None:
                    raise CallFailed(f"unexpected audit: {audit}")
                began = audit.snapshot
            if using is not None and began.watch is None:
                raise CallFailed("the change watch stepped aside during the benchmark")
    finally:
        watch.close()


def _last_line(text: str) -> str:
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[-1] if lines else "(no output)"


def _ms(seconds: float) -> float:
    return seconds * 1000


async def review_briefs(bench: Bench) -> None:
    """The bytes of a `light` and a `standard` review brief for the standard jobs."""
    from brief_sizes import brief_bytes

    for depth in ("light", "standard"):
        total, count = brief_bytes(depth, bench.folder("briefs"))
        figure = bench.figure(
            f"review_brief.{depth}",
            f"review briefs of the standard jobs at depth {depth} ({count} reviews)",
            "bytes",
            reviews=count,
        )
        figure.samples.append(total)


async def background(bench: Bench) -> None:
    """What the background path of the gate adds to a review that finishes at once."""
    from background_overhead import background_overhead

    samples = 3 * bench.sizes.evidence_checkpoints
    for key, label, fsync in (
        ("background.overhead", "background review overhead (store as configured)", True),
        ("background.overhead_no_fsync", "the same, SQLite synchronous=NORMAL", False),
    ):
        overhead, direct, queued = background_overhead(bench.folder(key), samples, fsync=fsync)
        figure = bench.figure(key, label, samples=samples, direct_ms=round(direct, 3))
        figure.params["background_ms"] = round(queued, 3)
        figure.samples.append(overhead)


async def fan_out_merge(bench: Bench) -> None:
    """Merging 8 worktree instances into a repository of 10,000 tracked files (fan_out.py)."""
    from fan_out import fan_out_merge as run

    await run(bench)


# --- telemetry: a dead OTLP endpoint never slows a tool call (issue 32) -------------------------


def _plain_env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "DEEPWORK_OTEL"))}


def _dead_endpoint_env() -> dict[str, str]:
    """Telemetry on, exporting often, to a loopback port nobody listens on."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    return {
        **_plain_env(),
        "OTEL_EXPORTER_OTLP_ENDPOINT": f"http://127.0.0.1:{port}",
        "OTEL_BSP_SCHEDULE_DELAY": "50",
        "OTEL_METRIC_EXPORT_INTERVAL": "100",
        "OTEL_EXPORTER_OTLP_TIMEOUT": "1",
    }


async def telemetry(bench: Bench) -> None:
    """The long workflow with telemetry off and with it exporting to a dead endpoint, by turns."""
    sizes = bench.sizes
    project = bench.folder("telemetry")
    outputs = make_long_workflow(project, sizes.long_steps)
    off = bench.figure("telemetry.off.finished_step", "telemetry off: finished_step")
    dead = bench.figure(
        "telemetry.dead_endpoint.finished_step", "telemetry to a dead endpoint: finished_step"
    )
    added = bench.figure("telemetry.dead_endpoint.added", "telemetry to a dead endpoint: added")
    with bench.stderr_log("telemetry") as log:
        for _ in range(sizes.long_runs):
            for figure, env in ((off, _plain_env()), (dead, _dead_endpoint_env())):
                async with bench.serve(project, log, env) as server:
                    await server.list_tools()
                    await server.call(
                        "start_workflow",
                        {"goal": "telemetry", "job_name": LONG_JOB, "workflow_name": "long"},
                    )
                    for index, path in enumerate(outputs, start=1):
                        elapsed, _ = await server.call(
                            "finished_step", {"outputs": {f"s{index:02d}_out.md": path}}
                        )
                        figure.add(elapsed, server.last_client_ms)
    if off.median is not None and dead.median is not None:
        added.samples.append(dead.median - off.median)
        added.params.update(off_ms=off.median, dead_endpoint_ms=dead.median)


# --- the store on SQLite and PostgreSQL (issue 29) ----------------------------------------------


async def store(bench: Bench) -> None:
    """`finished_step` server side and listing runs, on SQLite and a local PostgreSQL."""
    from store import store_speed

    await store_speed(bench)


# --- the dashboard's pages and report --html (issue 38) ------------------------------------------


async def pages(bench: Bench) -> None:
    """The runs page, the run page and `report --html`, HTML only, in process."""
    from pages import pages_speed

    await pages_speed(bench)


# --- what reviews cost: reuse after a needs_work round, the price before the run (issue 42) -----


async def review_costs(bench: Bench) -> None:
    """The second round's share of the first after one page changed; the estimate's gap."""
    from review_costs import estimate_error, rereview_share

    share = rereview_share(bench.folder("review_costs_reuse"))
    for key, label, value in (
        ("calls", "re-review after one of 20 pages changed: calls", share["calls_pct"]),
        ("cost", "re-review after one of 20 pages changed: cost", share["cost_pct"]),
    ):
        figure = bench.figure(f"review_costs.rereview_{key}", label, "%", **share)
        figure.samples.append(value)
    gaps = estimate_error(bench.folder("review_costs_estimate"))
    figure = bench.figure(
        "review_costs.estimate_gap", "price before the run: worst gap to spent", "%", **gaps
    )
    figure.samples.append(abs(gaps["worst_pct"]))


# --- deepwork verify over many receipts (issue 40) ---------------------------------------------


async def verify(bench: Bench) -> None:
    """`deepwork verify --all` over 200 receipts in a repository of 10,000 tracked files."""
    from verify import verify_speed

    await verify_speed(bench)


# --- the gate on a step without review (issue 45) ----------------------------------------------


async def gate_cost(bench: Bench) -> None:
    """`finished_step` of a step without review, gate off and external gate on, by turns."""
    from gate_cost import gate_cost_figures

    await gate_cost_figures(bench)


async def starts(bench: Bench) -> None:
    """Top-level and nested `start_workflow` against the FastMCP round trip (starts.py)."""
    from starts import starts as run

    await run(bench)


async def concurrency(bench: Bench) -> None:
    """8 and 32 agents checkpointing at once on SQLite and PostgreSQL (concurrency.py)."""
    from concurrency import concurrency as run

    await run(bench)


async def views(bench: Bench) -> None:
    """Every view of a project of 100,000 runs, SQLite and PostgreSQL (views.py)."""
    from views import views_figures

    await views_figures(bench)


async def long_log(bench: Bench) -> None:
    """One run of 1,000,000 events: its page, report, log and Reviews page (long_log.py)."""
    from long_log import long_log_figures

    await long_log_figures(bench)


async def listing_before(bench: Bench) -> None:
    """`get_workflows` over 1,000 jobs against the code before the wave (listing_before.py)."""
    from listing_before import listing_before_figures

    await listing_before_figures(bench)


# --- headless runs: deepwork wait and notify.webhook (issue 41) ---------------------------------


async def headless(bench: Bench) -> None:
    """`deepwork wait` waking after a decision on PostgreSQL; a failing webhook's cost."""
    from headless import headless_speed

    await headless_speed(bench)


Scenario = Callable[[Bench], Awaitable[None]]

# name -> (scenario, the figure-key prefixes it produces)
SCENARIOS: dict[str, tuple[Scenario, tuple[str, ...]]] = {
    "cold_start": (cold_start, ("cold_start.", "context.")),
    "get_workflows": (get_workflows, ("get_workflows.", "memory.")),
    "mixed_catalog": (mixed_catalog, ("mixed_catalog.",)),
    "workflows": (workflows, ("workflow_50.", "nested_10.")),
    "reviews": (reviews, ("reviews.",)),
    "hook": (hook, ("hook.",)),
    "evidence": (evidence, ("evidence.",)),
    "evidence_watch": (evidence_watch, ("evidence_10k.",)),
    "review_briefs": (review_briefs, ("review_brief.",)),
    "background": (background, ("background.",)),
    "fan_out": (fan_out_merge, ("fan_out.",)),
    "telemetry": (telemetry, ("telemetry.",)),
    "store": (store, ("store.",)),
    "pages": (pages, ("pages.",)),
    "review_costs": (review_costs, ("review_costs.",)),
    "verify": (verify, ("verify.",)),
    "gate_cost": (gate_cost, ("gate_cost.",)),
    "starts": (starts, ("starts.",)),
    "concurrency": (concurrency, ("agents.",)),
    "views": (views, ("views.",)),
    "long_log": (long_log, ("long_log.",)),
    "listing_before": (listing_before, ("listing_before.",)),
    "headless": (headless, ("headless.",)),
}
ALIASES = {"context": "cold_start", "memory": "get_workflows", "nested": "workflows"}
