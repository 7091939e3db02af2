"""A reviewer CLI as the gate's `Reviewer` port: one bounded process per call
(docs/quality-gate.md).

`CliReviewer.review` runs one call of its runner (`claude --print`, `codex exec` or the Gemini
CLI headless) synchronously, in the gate's worker thread: the brief's message on stdin, the
project root as working directory, through `deepwork_core.base.process.run_bounded` with the
brief's deadline, an output cap and the stall timeout, and its whole process group killed when
it overruns, stalls or `cancelled` is set. The executable is looked up on `PATH` at call time.
With telemetry on, each process gets `TRACEPARENT` naming its review span, so a reviewer that
exports its own telemetry nests under it (docs/telemetry.md). Budgets, retries and usage events
are the gate's (`deepwork_core.gate.calls`).
"""

from __future__ import annotations

import os
import shutil
import tempfile
import threading
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Final

from deepwork_core.base.error_codes import ErrorCode
from deepwork_core.base.errors import ProcessOutputError, ProcessTimeoutError, QualityGateError
from deepwork_core.base.process import Completed, run_bounded
from deepwork_core.gate.reviewer import ReviewBrief, ReviewerReply

from deepwork_mcp.reviewers import runner_for
from deepwork_mcp.reviewers.stream import CallPlan, ReviewRunner

#: The trace variables of one reviewer call: (session id, step id, review, target file) -> env.
TraceEnv = Callable[[str, str, str, str | None], Mapping[str, str]]

#: A reviewer printing more than this (on stdout or stderr) is stopped
#: (`quality_gate.output_too_large`).
OUTPUT_LIMIT: Final = 8 * 1024 * 1024


class CliReviewer:
    """Runs one reviewer call of a CLI and reads its reply and usage (see the module)."""

    def __init__(
        self,
        runner: ReviewRunner | str = "claude",
        executable: str | None = None,
        *,
        env: Mapping[str, str] | None = None,
        trace_env: TraceEnv | None = None,
    ) -> None:
        """`runner`: which CLI (`claude`, `codex`, `gemini`, or a `ReviewRunner`).
        `executable` is a name looked up on PATH at call time, or a path (None: the runner's
        name). `env` is the child's environment (None: inherit ours); its PATH is used for the
        lookup. `trace_env` gives the trace variables of one call's process (telemetry), from
        the reviewed session, step, review and target file.
        """
        self.runner = runner_for(runner) if isinstance(runner, str) else runner
        self.executable = executable if executable is not None else self.runner.name
        self.env = dict(env) if env is not None else None
        self.trace_env = trace_env

    @property
    def name(self) -> str:
        return self.runner.name

    def review(self, brief: ReviewBrief, cancelled: threading.Event) -> ReviewerReply:
        """One call (the `Reviewer` port): its reply, or the coded error it had none with."""
        executable = self._resolve_executable()
        persona = (brief.task.agent or {}).get(self.runner.name)
        # The call's private folder, for files its command line names (codex's schema file).
        scratch = Path(tempfile.mkdtemp(prefix="deepwork-review-"))
        try:
            plan = CallPlan(
                executable,
                brief.task,
                brief.model,
                brief.usd_left,
                persona,
                scratch,
                brief.project_root,
            )
            done = self._run(self.runner.argv(plan), brief, cancelled)
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
        return self.runner.read(brief.task.label, done, brief.model)

    def _resolve_executable(self) -> str:
        search_path = (self.env if self.env is not None else os.environ).get("PATH")
        found = shutil.which(self.executable, path=search_path)
        if found is None:
            raise QualityGateError(
                f"the reviewer command {self.executable!r} was not found on PATH; install the "
                f"{self.runner.name} CLI (or put it on PATH), or run the quality gate in "
                "self-review mode: start the server with `--external-runner none` (a flag "
                "wins over .deepwork/config.yml), or leave `quality_gate.external_runner` "
                "unset",
                code=ErrorCode.QUALITY_GATE_NOT_INSTALLED,
            )
        return found

    def _child_env(self, brief: ReviewBrief) -> dict[str, str] | None:
        """The reviewer's environment: ours (or `env`), plus the call's trace variables."""
        if self.trace_env is None:
            return self.env
        task = brief.task
        extra = self.trace_env(brief.session_id, task.step_id, task.run_each, task.target_file)
        if not extra:
            return self.env
        return {**(self.env if self.env is not None else os.environ), **extra}

    def _run(self, argv: list[str], brief: ReviewBrief, cancelled: threading.Event) -> Completed:
        """The finished process, or the coded error of a call that gave no output to read."""
        label = brief.task.label
        try:
            return run_bounded(
                argv,
                cwd=brief.project_root,
                timeout=brief.timeout,
                input_text=brief.message,
                env=self._child_env(brief),
                output_limit=OUTPUT_LIMIT,
                cancel=cancelled,
                idle_timeout=brief.stall_timeout,
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
            raise _stopped(label, exc, brief.stall_timeout) from None


def _stopped(label: str, exc: ProcessTimeoutError, stall_timeout: float | None) -> QualityGateError:
    """The error of a process stopped before it ended: stalled, cancelled or out of time."""
    if exc.code == ErrorCode.PROCESS_STALLED:
        return QualityGateError(
            f"the reviewer for {label} sent no event for {stall_timeout or 0:g} s and was stopped",
            code=ErrorCode.QUALITY_GATE_REVIEWER_STALLED,
        )
    if exc.code == ErrorCode.PROCESS_CANCELLED:
        return QualityGateError("the review was cancelled", code=ErrorCode.QUALITY_GATE_ERROR)
    return QualityGateError(
        f"the reviewer for {label} did not answer within the time limit; its processes were "
        "stopped. Try again, or raise the quality gate timeout",
        code=ErrorCode.QUALITY_GATE_TIMEOUT,
    )
