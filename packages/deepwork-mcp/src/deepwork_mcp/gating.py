"""The two quality gates the engine can run (docs/quality-gate.md, JOBS-REQ-001.1.6–001.1.9).

`SelfReviewGate` writes review instructions for the agent and always answers `needs_work`;
`ExternalGate` runs the Claude CLI reviewer. Both plan their tasks with `deepwork_core.quality`.
`evaluate` is called by the engine in a worker thread; the external reviewer is async, so it is
run on the server's event loop through `anyio.from_thread`.
"""

from __future__ import annotations

from anyio import from_thread
from deepwork_core.engine import Checkpoint, GateVerdict, ProgressReporter
from deepwork_core.quality import (
    GateRequest,
    InputFile,
    combined_feedback,
    plan_review_tasks,
    self_review_feedback,
    write_self_review_file,
)

from deepwork_mcp.reviewer import ClaudeReviewer

_NOTHING_TO_REVIEW = "No review applies to the submitted outputs."


def gate_request(checkpoint: Checkpoint) -> GateRequest:
    """The gate's view of a checkpoint: validated outputs and the inputs from earlier steps."""
    return GateRequest(
        project_root=checkpoint.project_root,
        session_id=checkpoint.session_id,
        job=checkpoint.job.definition,
        job_dir=checkpoint.job.job_dir,
        step_ids=list(checkpoint.step_ids),
        outputs=checkpoint.outputs,
        input_files=[
            InputFile(step_id=i.step_id, name=i.name, from_step=i.from_step, paths=i.paths)
            for i in checkpoint.input_files
            if i.from_step is not None
        ],
        notes=checkpoint.notes,
    )


class SelfReviewGate:
    """Self-review mode: the agent has a sub-agent review against a written instruction file."""

    external = False
    #: The instruction file lists paths; nothing is inlined (the sub-agent reads the files).
    max_inline_files = 0

    def evaluate(self, checkpoint: Checkpoint, progress: ProgressReporter | None) -> GateVerdict:
        request = gate_request(checkpoint)
        tasks = plan_review_tasks(request)
        if not tasks:
            return GateVerdict(passed=True, feedback=_NOTHING_TO_REVIEW)
        path = write_self_review_file(request, tasks)
        relative = path.relative_to(checkpoint.project_root).as_posix()
        return GateVerdict(passed=False, feedback=self_review_feedback(path), review_file=relative)


class ExternalGate:
    """External mode: each review task runs the Claude CLI; attempts are counted and capped."""

    external = True

    def __init__(self, reviewer: ClaudeReviewer) -> None:
        self.reviewer = reviewer

    @property
    def max_inline_files(self) -> int:
        return self.reviewer.max_inline_files

    def evaluate(self, checkpoint: Checkpoint, progress: ProgressReporter | None) -> GateVerdict:
        request = gate_request(checkpoint)
        tasks = plan_review_tasks(request)
        if not tasks:
            return GateVerdict(passed=True, feedback=_NOTHING_TO_REVIEW)
        verdicts = from_thread.run(self.reviewer.review, request, tasks, progress)
        return GateVerdict(
            passed=all(v.passed for v in verdicts),
            feedback=combined_feedback(verdicts) or "All reviews passed.",
            reviews=tuple(verdicts),
        )
