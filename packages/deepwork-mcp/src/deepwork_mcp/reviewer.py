"""The external quality-gate reviewer: the Claude CLI in print mode with structured output.

One `claude` process per review task (`docs/quality-gate.md`):
`claude --print --output-format json --system-prompt <criteria> --json-schema <schema> -p --`
with the payload on stdin and the project root as working directory. Each process starts in a
new session, so on timeout or cancellation its whole process group (grandchildren included) is
killed and the child is reaped. At most `max_parallel` run at once; the first failure cancels
the rest.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
import signal
import time
from collections.abc import Mapping, Sequence

from deepwork_core import (
    DEFAULT_MAX_INLINE_FILES,
    DEFAULT_REVIEW_TIMEOUT,
    DEFAULT_SECONDS_PER_EXTRA_FILE,
    TIMEOUT_FREE_FILES,
    Checkpoint,
    ProgressReporter,
    QualityGateError,
    QualityReviewTask,
    ReviewVerdict,
    build_review_payload,
    build_system_prompt,
    reply_schema_json,
    task_file_count,
    verdict_from_reply,
)

#: How long to wait for pipes to close after the process group was killed.
_REAP_TIMEOUT = 5.0
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
        `.bad_output`, `.exit_code`) for the first task that cannot give a verdict; the other
        tasks are then cancelled and their processes killed.
        """
        if not tasks:
            return []
        executable = self._resolve_executable()
        semaphore = asyncio.Semaphore(self.max_parallel)
        running = [
            asyncio.create_task(self._run_task(executable, checkpoint, task, semaphore))
            for task in tasks
        ]
        pending: set[asyncio.Task[ReviewVerdict]] = set(running)
        total = len(running)
        done_count = 0
        started = time.monotonic()
        try:
            while pending:
                finished, pending = await asyncio.wait(
                    pending, timeout=self.progress_interval, return_when=asyncio.FIRST_COMPLETED
                )
                # Look at every finished task's exception, so none is left unretrieved.
                failures = [exc for item in finished if (exc := item.exception()) is not None]
                if failures:
                    raise failures[0]
                for item in finished:
                    verdict = item.result()
                    done_count += 1
                    if progress is not None:
                        outcome = "passed" if verdict.passed else "failed"
                        tasks_left = total - done_count
                        await progress(
                            done_count,
                            total,
                            f"review {tasks[running.index(item)].label} {outcome}; "
                            f"{tasks_left} left",
                        )
                if not finished and progress is not None:
                    waited = time.monotonic() - started
                    await progress(
                        done_count,
                        total,
                        f"waiting for {len(pending)} review(s) ({waited:.0f} s elapsed)",
                    )
        finally:
            for item in pending:
                item.cancel()
            if pending:
                await asyncio.gather(*pending, return_exceptions=True)
        return [item.result() for item in running]

    def _resolve_executable(self) -> str:
        search_path = (self.env if self.env is not None else os.environ).get("PATH")
        found = shutil.which(self.executable, path=search_path)
        if found is None:
            raise QualityGateError(
                f"the reviewer command {self.executable!r} was not found on PATH; install the "
                "Claude CLI (or put it on PATH), or run the quality gate in self-review mode",
                code="quality_gate.not_installed",
            )
        return found

    async def _run_task(
        self,
        executable: str,
        checkpoint: Checkpoint,
        task: QualityReviewTask,
        semaphore: asyncio.Semaphore,
    ) -> ReviewVerdict:
        argv = [
            executable,
            "--print",
            "--output-format",
            "json",
            "--system-prompt",
            build_system_prompt(checkpoint, task),
            "--json-schema",
            reply_schema_json(task),
            "-p",
            "--",
        ]
        timeout = self.timeout_for(task_file_count(checkpoint, task))
        async with semaphore:
            # Built under the semaphore so at most `max_parallel` payloads sit in memory; reading
            # files is blocking work, so it runs off the event loop.
            payload = await asyncio.to_thread(
                build_review_payload, checkpoint, task, self.max_inline_files
            )
            returncode, stdout, stderr = await self._run_process(
                argv, payload, checkpoint, task, timeout
            )
        return _interpret(task, returncode, stdout, stderr)

    async def _run_process(
        self,
        argv: list[str],
        payload: str,
        checkpoint: Checkpoint,
        task: QualityReviewTask,
        timeout: float,
    ) -> tuple[int, str, str]:
        try:
            process = await asyncio.create_subprocess_exec(
                *argv,
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                cwd=checkpoint.project_root,
                env=self.env,
                start_new_session=True,
            )
        except (FileNotFoundError, PermissionError) as exc:
            raise QualityGateError(
                f"cannot run the reviewer {argv[0]!r}: {exc.strerror}",
                code="quality_gate.not_installed",
            ) from None
        try:
            stdout, stderr = await asyncio.wait_for(
                process.communicate(payload.encode("utf-8")), timeout
            )
        except TimeoutError:
            await _kill_and_reap(process)
            raise QualityGateError(
                f"the reviewer for {task.label} did not answer within {timeout:g} s; its "
                "processes were stopped. Try again, or raise the quality gate timeout",
                code="quality_gate.timeout",
            ) from None
        except BaseException:
            await _kill_and_reap(process)
            raise
        assert process.returncode is not None
        return (
            process.returncode,
            stdout.decode("utf-8", errors="replace"),
            stderr.decode("utf-8", errors="replace"),
        )


async def _kill_and_reap(process: asyncio.subprocess.Process) -> None:
    """SIGKILL the child's whole process group, then collect it and drain its pipes."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)
    # Draining closes the pipe transports; a process that escaped the group and still holds a
    # pipe must not keep us waiting forever.
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(process.communicate(), _REAP_TIMEOUT)
    await process.wait()


def _interpret(task: QualityReviewTask, returncode: int, stdout: str, stderr: str) -> ReviewVerdict:
    """Turn the CLI's exit status and JSON wrapper into a verdict or a distinct error."""
    try:
        wrapper = json.loads(stdout)
    except ValueError:
        wrapper = None
    if isinstance(wrapper, dict) and wrapper.get("is_error") is True:
        raise QualityGateError(
            f"the reviewer reported an error for {task.label}: "
            f"{_clip(str(wrapper.get('result') or wrapper.get('subtype') or 'no detail'))}",
            code="quality_gate.is_error",
        )
    if returncode != 0:
        detail = _clip(stderr.strip() or stdout.strip() or "no output")
        raise QualityGateError(
            f"the reviewer for {task.label} exited with code {returncode}: {detail}",
            code="quality_gate.exit_code",
        )
    if not isinstance(wrapper, dict):
        raise QualityGateError(
            f"the reviewer's answer for {task.label} is not a JSON object: "
            f"{_clip(stdout.strip()) or '(empty)'}",
            code="quality_gate.bad_output",
        )
    if "structured_output" not in wrapper:
        raise QualityGateError(
            f"the reviewer's answer for {task.label} has no structured_output: "
            f"{_clip(stdout.strip())}",
            code="quality_gate.bad_output",
        )
    return verdict_from_reply(task, wrapper["structured_output"])


def _clip(text: str) -> str:
    return text if len(text) <= _DETAIL_CHARS else text[:_DETAIL_CHARS] + "…"
