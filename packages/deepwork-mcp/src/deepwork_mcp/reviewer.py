"""The external quality-gate reviewer: the Claude CLI in print mode with structured output.

One `claude` process per review task:
`claude --print --output-format json --system-prompt <fixed role> --json-schema <schema> -p --`
with the review brief (criteria, guidance, notes) and the files on stdin, and the project root
as working directory. The process runs through `deepwork_core.run_bounded` in a worker
thread: a deadline, an output cap, and its whole process group killed when it overruns or the
review is cancelled. At most `max_parallel` run at once; the first failure cancels the rest. A
reply that leaves a criterion unjudged is asked for once more; if the second reply also leaves
one out, the verdict fails naming it (`docs/quality-gate.md`, `docs/limits.md`).
"""

from __future__ import annotations

import json
import os
import shutil
import threading
import time
from collections.abc import Mapping, Sequence

import anyio
import anyio.abc
import anyio.to_thread
from deepwork_core.base.config import (
    DEFAULT_REVIEW_TIMEOUT,
    DEFAULT_SECONDS_PER_EXTRA_FILE,
    TIMEOUT_FREE_FILES,
)
from deepwork_core.base.error_codes import ErrorCode
from deepwork_core.base.errors import ProcessOutputError, ProcessTimeoutError, QualityGateError
from deepwork_core.base.process import Completed, run_bounded
from deepwork_core.evidence.verdicts import ReviewVerdict
from deepwork_core.gate.checkpoint import Checkpoint, ProgressReporter
from deepwork_core.gate.quality import (
    DEFAULT_MAX_INLINE_FILES,
    REVIEWER_SYSTEM_PROMPT,
    QualityReviewTask,
    build_review_message,
    reply_schema_json,
    task_file_count,
    unjudged_criteria,
    verdict_from_reply,
)

#: A reviewer printing more than this (on stdout or stderr) is stopped
#: (`quality_gate.output_too_large`).
OUTPUT_LIMIT = 8 * 1024 * 1024
_DETAIL_CHARS = 500


class ClaudeReviewer:
    """Runs review tasks through the Claude CLI and turns its replies into verdicts."""

    def __init__(
        self,
        executable: str = "claude",
        base_timeout: float = DEFAULT_REVIEW_TIMEOUT,
        per_extra_file: float = DEFAULT_SECONDS_PER_EXTRA_FILE,
        max_parallel: int = 4,
        *,
        progress_interval: float = 5.0,
        max_inline_files: int = DEFAULT_MAX_INLINE_FILES,
        env: Mapping[str, str] | None = None,
    ) -> None:
        """`executable` is a name looked up on PATH at call time, or a path.

        `env` is the child's environment (None: inherit ours); its PATH is used for the lookup.
        """
        if max_parallel < 1:
            raise ValueError("max_parallel must be at least 1")
        self.executable = executable
        self.base_timeout = base_timeout
        self.per_extra_file = per_extra_file
        self.max_parallel = max_parallel
        self.progress_interval = progress_interval
        self.max_inline_files = max_inline_files
        self.env = dict(env) if env is not None else None

    def timeout_for(self, file_count: int) -> float:
        """Per-task deadline: the base plus `per_extra_file` for each file beyond five."""
        return self.base_timeout + self.per_extra_file * max(0, file_count - TIMEOUT_FREE_FILES)

    async def review(
        self,
        checkpoint: Checkpoint,
        tasks: Sequence[QualityReviewTask],
        progress: ProgressReporter | None = None,
    ) -> list[ReviewVerdict]:
        """Run every task (at most `max_parallel` at once); verdicts come back in task order.

        Raises `QualityGateError` (`quality_gate.not_installed`, `.timeout`, `.is_error`,
        `.bad_output`, `.exit_code`, `.output_too_large`) for the first task that cannot give a
        verdict; the other tasks are then cancelled and their processes killed.
        """
        if not tasks:
            return []
        executable = self._resolve_executable()
        limiter = anyio.CapacityLimiter(self.max_parallel)
        verdicts: dict[int, ReviewVerdict] = {}
        failures: list[BaseException] = []
        send, receive = anyio.create_memory_object_stream[int](len(tasks))

        async def one(index: int) -> None:
            try:
                verdicts[index] = await self._run_task(
                    executable, checkpoint, tasks[index], limiter
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
                await self._report(tasks, verdicts, receive, progress)
        if failures:
            raise failures[0]
        return [verdicts[index] for index in range(len(tasks))]

    async def _report(
        self,
        tasks: Sequence[QualityReviewTask],
        verdicts: Mapping[int, ReviewVerdict],
        finished: anyio.abc.ObjectReceiveStream[int],
        progress: ProgressReporter | None,
    ) -> None:
        """Wait for every task, telling `progress` as each finishes and while waiting."""
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
            left = total - done_count
            await progress(done_count, total, f"review {tasks[index].label} {outcome}; {left} left")

    def _resolve_executable(self) -> str:
        search_path = (self.env if self.env is not None else os.environ).get("PATH")
        found = shutil.which(self.executable, path=search_path)
        if found is None:
            raise QualityGateError(
                f"the reviewer command {self.executable!r} was not found on PATH; install the "
                "Claude CLI (or put it on PATH), or run the quality gate in self-review mode",
                code=ErrorCode.QUALITY_GATE_NOT_INSTALLED,
            )
        return found

    async def _run_task(
        self,
        executable: str,
        checkpoint: Checkpoint,
        task: QualityReviewTask,
        limiter: anyio.CapacityLimiter,
    ) -> ReviewVerdict:
        argv = [
            executable,
            "--print",
            "--output-format",
            "json",
            "--system-prompt",
            REVIEWER_SYSTEM_PROMPT,
            "--json-schema",
            reply_schema_json(task),
            "-p",
            "--",
        ]
        timeout = self.timeout_for(task_file_count(checkpoint, task))
        async with limiter:
            # Built under the limiter so at most `max_parallel` messages sit in memory; reading
            # files is blocking work, so it runs off the event loop.
            message = await anyio.to_thread.run_sync(
                build_review_message, checkpoint, task, self.max_inline_files
            )
            reply = await self._ask(argv, message, checkpoint, task, timeout)
            if unjudged_criteria(task, reply):
                # Asked once more; a second incomplete reply fails the unjudged criteria.
                reply = await self._ask(argv, message, checkpoint, task, timeout)
        return verdict_from_reply(task, reply)

    async def _ask(
        self,
        argv: list[str],
        message: str,
        checkpoint: Checkpoint,
        task: QualityReviewTask,
        timeout: float,
    ) -> object:
        try:
            done = await run_bounded_async(
                argv,
                cwd=checkpoint.project_root,
                timeout=timeout,
                input_text=message,
                env=self.env,
                output_limit=OUTPUT_LIMIT,
            )
        except (FileNotFoundError, PermissionError) as exc:
            raise QualityGateError(
                f"cannot run the reviewer {argv[0]!r}: {exc.strerror}",
                code=ErrorCode.QUALITY_GATE_NOT_INSTALLED,
            ) from None
        except ProcessOutputError:
            raise QualityGateError(
                f"the reviewer for {task.label} printed more than {OUTPUT_LIMIT} bytes; its "
                "processes were stopped",
                code=ErrorCode.QUALITY_GATE_OUTPUT_TOO_LARGE,
            ) from None
        except ProcessTimeoutError:
            raise QualityGateError(
                f"the reviewer for {task.label} did not answer within {timeout:g} s; its "
                "processes were stopped. Try again, or raise the quality gate timeout",
                code=ErrorCode.QUALITY_GATE_TIMEOUT,
            ) from None
        return _interpret(task, done)


async def run_bounded_async(argv: Sequence[str], **options: object) -> Completed:
    """`run_bounded` in a worker thread; cancelling the caller kills the child's group.

    On cancellation the child is stopped and reaped before the cancellation goes on, so no
    process outlives the call.
    """
    cancel, finished = threading.Event(), threading.Event()

    def call() -> Completed:
        try:
            return run_bounded(argv, cancel=cancel, **options)  # type: ignore[arg-type]
        finally:
            finished.set()

    try:
        return await anyio.to_thread.run_sync(call, abandon_on_cancel=True)
    except BaseException:
        cancel.set()
        with anyio.CancelScope(shield=True):
            await anyio.to_thread.run_sync(finished.wait)
        raise


def _interpret(task: QualityReviewTask, done: Completed) -> object:
    """The `structured_output` of the CLI's JSON wrapper, or a distinct error."""
    stdout, stderr = done.stdout, done.stderr
    try:
        wrapper = json.loads(stdout)
    except ValueError:
        wrapper = None
    if isinstance(wrapper, dict) and wrapper.get("is_error") is True:
        raise QualityGateError(
            f"the reviewer reported an error for {task.label}: "
            f"{_clip(str(wrapper.get('result') or wrapper.get('subtype') or 'no detail'))}",
            code=ErrorCode.QUALITY_GATE_IS_ERROR,
        )
    if done.returncode != 0:
        detail = _clip(stderr.strip() or stdout.strip() or "no output")
        raise QualityGateError(
            f"the reviewer for {task.label} exited with code {done.returncode}: {detail}",
            code=ErrorCode.QUALITY_GATE_EXIT_CODE,
        )
    if not isinstance(wrapper, dict):
        raise QualityGateError(
            f"the reviewer's answer for {task.label} is not a JSON object: "
            f"{_clip(stdout.strip()) or '(empty)'}",
            code=ErrorCode.QUALITY_GATE_BAD_OUTPUT,
        )
    if "structured_output" not in wrapper:
        raise QualityGateError(
            f"the reviewer's answer for {task.label} has no structured_output: "
            f"{_clip(stdout.strip())}",
            code=ErrorCode.QUALITY_GATE_BAD_OUTPUT,
        )
    return wrapper["structured_output"]


def _clip(text: str) -> str:
    return text if len(text) <= _DETAIL_CHARS else text[:_DETAIL_CHARS] + "…"
