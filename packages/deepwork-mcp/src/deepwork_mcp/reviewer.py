"""The external quality-gate reviewer: a reviewer CLI per review task (docs/quality-gate.md).

One process per review task, its command line and its output format the runner's
(`deepwork_mcp.runners`: `claude --print`, `codex exec` or the Gemini CLI headless), with the
review brief (at the task's depth) and the files on stdin, and the project root as working
directory. The process runs through `deepwork_core.run_bounded` in a worker thread: a deadline,
an output cap, a stall timeout (no event for `stall_timeout` seconds: killed and started once
more, then `quality_gate.reviewer_stalled`), and its whole process group killed when it overruns
or the review is cancelled. At most `max_parallel` run at once; the first failure cancels the
rest. A reply that leaves a criterion unjudged is asked for once more; if the second reply also
leaves one out, the verdict fails naming it. Every call's tokens and cost (None where the runner
reports none) go to the run's event log as a `review_usage` event, and count against the run's
budget (`docs/quality-gate.md`, `docs/limits.md`). With telemetry on, each call's process gets
`TRACEPARENT` naming its review span, so a reviewer that exports its own telemetry nests under
it (docs/telemetry.md).
"""

from __future__ import annotations

import os
import shutil
import tempfile
import threading
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import anyio
import anyio.abc
import anyio.to_thread
from deepwork_core.base.config import (
    DEFAULT_MAX_PARALLEL,
    DEFAULT_REVIEW_DEPTH,
    DEFAULT_REVIEW_TIMEOUT,
    DEFAULT_SECONDS_PER_EXTRA_FILE,
    DEFAULT_STALL_RETRIES,
    DEFAULT_STALL_TIMEOUT,
    TIMEOUT_FREE_FILES,
    ReviewBudget,
    ReviewModels,
)
from deepwork_core.base.error_codes import ErrorCode
from deepwork_core.base.errors import ProcessOutputError, ProcessTimeoutError, QualityGateError
from deepwork_core.base.process import Completed
from deepwork_core.evidence.verdicts import ReviewVerdict
from deepwork_core.gate.background import ReviewPayload
from deepwork_core.gate.budget import BudgetLedger, check_budget, review_usage_event, usd_left
from deepwork_core.gate.checkpoint import Checkpoint
from deepwork_core.gate.quality import (
    DEFAULT_MAX_INLINE_FILES,
    QualityReviewTask,
    build_review_message,
    task_file_count,
    unjudged_criteria,
    verdict_from_reply,
)
from deepwork_core.state.event_kinds import ReviewStalledEvent
from deepwork_core.state.events import append_event
from deepwork_core.state.sessions import utc_now
from deepwork_core.state.store.opening import existing_store
from deepwork_core.state.store.review_jobs import ReviewJobs, ReviewJobState

from deepwork_mcp.review_calls import blocking_review, run_bounded_async
from deepwork_mcp.runners import runner_for
from deepwork_mcp.runners.events import CallPlan, CallUsage, ReviewRunner

#: `async (done, total, message)`: progress while `review` runs several tasks at once.
ProgressReporter = Callable[[int, int, str], Awaitable[None]]
#: How often a review run in a worker thread looks whether it was cancelled.
#: Review jobs that still run, or will.
_LIVE = (ReviewJobState.QUEUED, ReviewJobState.CLAIMED)
#: The trace variables of one reviewer call: (session id, step id, review, target file) -> env.
TraceEnv = Callable[[str, str, str, str | None], Mapping[str, str]]

#: A reviewer printing more than this (on stdout or stderr) is stopped
#: (`quality_gate.output_too_large`).
OUTPUT_LIMIT = 8 * 1024 * 1024


class CliReviewer:
    """Runs review tasks through a reviewer CLI and turns its replies into verdicts."""

    def __init__(
        self,
        executable: str | None = None,
        base_timeout: float = DEFAULT_REVIEW_TIMEOUT,
        per_extra_file: float = DEFAULT_SECONDS_PER_EXTRA_FILE,
        max_parallel: int = DEFAULT_MAX_PARALLEL,
        *,
        progress_interval: float = 5.0,
        max_inline_files: int = DEFAULT_MAX_INLINE_FILES,
        env: Mapping[str, str] | None = None,
        stall_timeout: float | None = DEFAULT_STALL_TIMEOUT,
        stall_retries: int = DEFAULT_STALL_RETRIES,
        models: ReviewModels | None = None,
        budget: ReviewBudget | None = None,
        runner: ReviewRunner | str = "claude",
        trace_env: TraceEnv | None = None,
    ) -> None:
        """`runner`: which CLI (`claude`, `codex`, `gemini`, or a `ReviewRunner`).
        `executable` is a name looked up on PATH at call time, or a path (None: the runner's
        name).

        `env` is the child's environment (None: inherit ours); its PATH is used for the lookup.
        `stall_timeout` (None: never) and `stall_retries`: a reviewer silent that long is killed
        and started again up to `stall_retries` times. `models`: `--model` per review depth.
        `budget`: what a workflow run may spend on reviews. `trace_env` gives the trace
        variables of one call's process (telemetry), from the reviewed session, step, review and
        target file.
        """
        if max_parallel < 1:
            raise ValueError("max_parallel must be at least 1")
        self.runner = runner_for(runner) if isinstance(runner, str) else runner
        self.executable = executable if executable is not None else self.runner.name
        self.base_timeout = base_timeout
        self.per_extra_file = per_extra_file
        self.max_parallel = max_parallel
        self.progress_interval = progress_interval
        self.max_inline_files = max_inline_files
        self.env = dict(env) if env is not None else None
        self.stall_timeout = stall_timeout
        self.stall_retries = stall_retries
        self.models = models if models is not None else ReviewModels()
        self.budget = budget if budget is not None else ReviewBudget()
        self.ledger = BudgetLedger(self.budget)
        self.trace_env = trace_env

    def review_task(
        self, checkpoint: Checkpoint, task: QualityReviewTask, cancelled: threading.Event
    ) -> ReviewVerdict:
        """The core's `Reviewer` port: one task, in the calling (worker) thread, stopped with
        its process group soon after `cancelled` is set (then `quality_gate.error`)."""
        slots = self.parallel_slots(checkpoint)

        async def review(
            checkpoint: Checkpoint,
            tasks: Sequence[QualityReviewTask],
            progress: ProgressReporter | None,
        ) -> list[ReviewVerdict]:
            return await self.review(checkpoint, tasks, progress, slots=slots)

        return blocking_review(review, checkpoint, task, cancelled)

    def parallel_slots(self, checkpoint: Checkpoint) -> int:
        """How many reviewer calls of the session may run alongside this one, sharing what is
        left of the budget: its background jobs still queued or running (the gate enqueues a
        checkpoint's tasks together, before any starts), at most `max_parallel`."""
        store = existing_store(checkpoint.project_root)
        if store is None:
            return 1
        live = ReviewJobs(store, ReviewPayload).list(session_id=checkpoint.session_id, states=_LIVE)
        return max(1, min(self.max_parallel, len(live)))

    def timeout_for(self, file_count: int) -> float:
        """Per-task deadline: the base plus `per_extra_file` for each file beyond five."""
        return self.base_timeout + self.per_extra_file * max(0, file_count - TIMEOUT_FREE_FILES)

    async def review(
        self,
        checkpoint: Checkpoint,
        tasks: Sequence[QualityReviewTask],
        progress: ProgressReporter | None = None,
        *,
        slots: int | None = None,
    ) -> list[ReviewVerdict]:
        """Run every task (at most `max_parallel` at once); verdicts come back in task order.
        `slots`: how many calls may run at once in all, sharing the budget (default: these
        tasks, at most `max_parallel`).

        Raises `QualityGateError` for the first task that cannot give a verdict (the codes are
        in `deepwork_mcp.runners`, plus `quality_gate.not_installed`, `.timeout`,
        `.output_too_large`, `.reviewer_stalled` and `.budget_exhausted`); the other tasks are
        then cancelled and their processes killed. A run whose budget is spent starts none.
        """
        if not tasks:
            return []
        executable = self._resolve_executable()
        self.usd_left(checkpoint)  # a spent budget starts no reviewer
        limiter = anyio.CapacityLimiter(self.max_parallel)
        verdicts: dict[int, ReviewVerdict] = {}
        tokens: dict[int, int] = {}
        failures: list[BaseException] = []
        send, receive = anyio.create_memory_object_stream[int](len(tasks))

        if slots is None:  # calls that may run alongside each other
            slots = min(self.max_parallel, len(tasks))

        async def one(index: int) -> None:
            try:
                verdicts[index], tokens[index] = await self._run_task(
                    executable, checkpoint, tasks[index], limiter, slots
                )
            except Exception as exc:  # the first failure wins and stops the others
                failures.append(exc)
                group.cancel_scope.cancel()
                return
            send.send_nowait(index)

        with send, receive:
            async with anyio.create_task_group() as group:
                for index in range(len(tasks)):
                    group.start_soon(one, index)
                await self._report(tasks, verdicts, tokens, receive, progress)
        if failures:
            raise failures[0]
        return [verdicts[index] for index in range(len(tasks))]

    async def _report(
        self,
        tasks: Sequence[QualityReviewTask],
        verdicts: Mapping[int, ReviewVerdict],
        tokens: Mapping[int, int],
        finished: anyio.abc.ObjectReceiveStream[int],
        progress: ProgressReporter | None,
    ) -> None:
        """Wait for every task, telling `progress` as each finishes (which, passed or not,
        tokens so far) and while waiting."""
        total, done_count, started = len(tasks), 0, time.monotonic()
        while done_count < total:
            index = None
            with anyio.move_on_after(self.progress_interval):
                index = await finished.receive()
            if progress is None:
                if index is not None:
                    done_count += 1
                continue
            if index is None:
                waited = time.monotonic() - started
                await progress(
                    done_count,
                    total,
                    f"waiting for {total - done_count} review(s) ({waited:.0f} s elapsed)",
                )
                continue
            done_count += 1
            outcome = "passed" if verdicts[index].passed else "failed"
            left, spent = total - done_count, sum(tokens.values())
            await progress(
                done_count,
                total,
                f"review {tasks[index].label} {outcome}; {left} left; {spent} tokens so far",
            )

    def _resolve_executable(self) -> str:
        search_path = (self.env if self.env is not None else os.environ).get("PATH")
        found = shutil.which(self.executable, path=search_path)
        if found is None:
            raise QualityGateError(
                f"the reviewer command {self.executable!r} was not found on PATH; install the "
                f"{self.runner.name} CLI (or put it on PATH), or run the quality gate in "
                "self-review mode",
                code=ErrorCode.QUALITY_GATE_NOT_INSTALLED,
            )
        return found

    def usd_left(self, checkpoint: Checkpoint) -> float | None:
        """What the run may still spend (None: no cost budget); raises
        `quality_gate.budget_exhausted` once it spent its budget."""
        if self.budget.max_cost_usd is None and self.budget.max_tokens is None:
            return None
        spent = check_budget(checkpoint.project_root, checkpoint.run_session_id, self.budget)
        return usd_left(self.budget, spent)

    def plan(self, call: _Call, left: float | None, scratch: Path) -> CallPlan:
        """What one call runs with: the depth's model, what budget is left, the review's
        persona for this runner."""
        task = call.task
        persona = (task.agent or {}).get(self.runner.name)
        model = self.models.for_depth(task.depth or DEFAULT_REVIEW_DEPTH)
        root = call.checkpoint.project_root
        return CallPlan(call.executable, task, model, left, persona, scratch, root)

    async def _run_task(
        self,
        executable: str,
        checkpoint: Checkpoint,
        task: QualityReviewTask,
        limiter: anyio.CapacityLimiter,
        slots: int = 1,
    ) -> tuple[ReviewVerdict, int]:
        timeout = self.timeout_for(task_file_count(checkpoint, task))
        call: _Call | None = None
        try:
            async with limiter:
                # Built under the limiter so at most `max_parallel` messages sit in memory;
                # reading files is blocking work, so it runs off the event loop.
                message = await anyio.to_thread.run_sync(
                    build_review_message, checkpoint, task, self.max_inline_files
                )
                deadline = time.monotonic() + timeout
                call = _Call(executable, checkpoint, task, message, deadline, slots=slots)
                answer = await self._ask(call)
                if unjudged_criteria(task, answer.reply):
                    # Asked once more; a second incomplete reply fails the unjudged criteria.
                    self._log_usage(call, answer, "unjudged")
                    answer = await self._ask(call)
            try:
                verdict = verdict_from_reply(task, answer.reply)
            except QualityGateError as exc:
                self._log_usage(call, answer, exc.code)
                raise
            self._log_usage(call, answer, "passed" if verdict.passed else "failed")
            return verdict, call.tokens
        finally:
            if call is not None:
                self._release(call)  # cancelled before its usage was logged

    async def _ask(self, call: _Call) -> _Answer:
        """One reviewer call with its slice of the budget reserved (`BudgetLedger`); its usage
        is logged (and the error raised) when it failed."""
        checkpoint = call.checkpoint
        call.share = await anyio.to_thread.run_sync(
            self.ledger.reserve, checkpoint.project_root, checkpoint.run_session_id, call.slots
        )
        # The call's private folder (codex's schema file): made, filled and removed off the loop.
        scratch = Path(await anyio.to_thread.run_sync(tempfile.mkdtemp, "", "deepwork-review-"))
        try:
            plan = self.plan(call, call.share, scratch)
            argv = await anyio.to_thread.run_sync(self.runner.argv, plan)
            started = time.monotonic()
            done = await self._run(argv, call, self._child_env(call))
        except BaseException:
            self._release(call)
            raise
        finally:
            with anyio.CancelScope(shield=True):
                await anyio.to_thread.run_sync(shutil.rmtree, scratch, True)
        outcome = self.runner.read(call.task.label, done, plan.model)
        answer = _Answer(outcome.reply, outcome.usage, time.monotonic() - started)
        call.tokens += outcome.usage.tokens
        if outcome.error is not None:
            self._log_usage(call, answer, outcome.error.code)
            raise outcome.error
        return answer

    def _child_env(self, call: _Call) -> dict[str, str] | None:
        """The reviewer's environment: ours (or `env`), plus the call's trace variables."""
        if self.trace_env is None:
            return self.env
        task = call.task
        extra = self.trace_env(
            call.checkpoint.session_id, task.step_id, task.run_each, task.target_file
        )
        if not extra:
            return self.env
        return {**(self.env if self.env is not None else os.environ), **extra}

    async def _run(self, argv: list[str], call: _Call, env: dict[str, str] | None) -> Completed:
        """Run one call; a stalled reviewer is killed and started again `stall_retries` times."""
        label, total = call.task.label, self.stall_retries + 1
        for try_number in range(1, total + 1):
            try:
                return await run_bounded_async(
                    argv,
                    cwd=call.checkpoint.project_root,
                    timeout=max(0.0, call.deadline - time.monotonic()),
                    input_text=call.message,
                    env=env,
                    output_limit=OUTPUT_LIMIT,
                    idle_timeout=self.stall_timeout,
                )
            except (FileNotFoundError, PermissionError) as exc:
                raise QualityGateError(
                    f"cannot run the reviewer {argv[0]!r}: {exc.strerror}",
                    code=ErrorCode.QUALITY_GATE_NOT_INSTALLED,
                ) from None
            except ProcessOutputError:
                raise QualityGateError(
                    f"the reviewer for {label} printed more than {OUTPUT_LIMIT} bytes; its "
                    "processes were stopped",
                    code=ErrorCode.QUALITY_GATE_OUTPUT_TOO_LARGE,
                ) from None
            except ProcessTimeoutError as exc:
                if exc.code != ErrorCode.PROCESS_STALLED:
                    raise QualityGateError(
                        f"the reviewer for {label} did not answer within the time limit; its "
                        "processes were stopped. Try again, or raise the quality gate timeout",
                        code=ErrorCode.QUALITY_GATE_TIMEOUT,
                    ) from None
                self._log_stall(call, try_number, retrying=try_number < total)
        waited = total * (self.stall_timeout or 0.0)
        raise QualityGateError(
            f"the reviewer for {label} sent no event for {self.stall_timeout:g} s and was "
            f"stopped, {total} time(s) in a row ({waited:g} s waited in all). This was not "
            "counted as an attempt.",
            code=ErrorCode.QUALITY_GATE_REVIEWER_STALLED,
        )

    def _log_stall(self, call: _Call, try_number: int, *, retrying: bool) -> None:
        checkpoint, task = call.checkpoint, call.task
        event = ReviewStalledEvent(
            ts=utc_now(),
            session_id=checkpoint.run_session_id,
            job=checkpoint.job.name,
            step_id=task.step_id,
            review=task.run_each,
            target_file=task.target_file,
            waited_seconds=self.stall_timeout or 0.0,
            try_number=try_number,
            retrying=retrying,
        )
        append_event(checkpoint.project_root, event)

    def _log_usage(self, call: _Call, answer: _Answer, outcome: str) -> None:
        """One `review_usage` event in the run's log (docs/quality-gate.md)."""
        checkpoint, task, usage = call.checkpoint, call.task, answer.usage
        depth = task.depth or DEFAULT_REVIEW_DEPTH
        event = review_usage_event(
            checkpoint,
            task,
            model=usage.model or self.models.for_depth(depth),
            seconds=round(answer.seconds, 3),
            outcome=str(outcome),
            input_tokens=usage.input_tokens,
            output_tokens=usage.output_tokens,
            cache_read_tokens=usage.cache_read_tokens,
            cache_creation_tokens=usage.cache_creation_tokens,
            cost_usd=usage.cost_usd,
            runner=self.runner.name,
        )
        append_event(checkpoint.project_root, event)
        self._release(call)  # the real cost is in the log now

    def _release(self, call: _Call) -> None:
        if call.share is not None:
            self.ledger.release(call.checkpoint.run_session_id, call.share)
            call.share = None


@dataclass(slots=True)
class _Call:
    """One review task being asked: what it needs, and the tokens its calls used."""

    executable: str
    checkpoint: Checkpoint
    task: QualityReviewTask
    message: str
    deadline: float
    tokens: int = 0
    #: Calls of the checkpoint that may run alongside this one (they share what is left).
    slots: int = 1
    #: The USD this call holds in the ledger while it runs (None: none).
    share: float | None = None


@dataclass(frozen=True, slots=True)
class _Answer:
    reply: object
    usage: CallUsage
    seconds: float
