"""The two quality gates the engine can run (see `docs/quality-gate.md`).

`SelfReviewGate` writes review instructions for the agent and asks for a self-review;
`ExternalGate` runs the Claude CLI reviewer. Both plan their tasks with `deepwork_core.quality`
from the engine's `Checkpoint`. `evaluate` is called by the engine in a worker thread; the
external reviewer is async, so it is run on the server's event loop through `anyio.from_thread`.
"""

from __future__ import annotations

from anyio import from_thread
from deepwork_core import (
    Checkpoint,
    GateNeedsWork,
    GatePassed,
    GateSelfReviewRequested,
    GateVerdict,
    ProgressReporter,
    combined_feedback,
    plan_review_tasks,
    self_review_feedback,
    write_self_review_file,
)

from deepwork_mcp.reviewer import ClaudeReviewer

_NOTHING_TO_REVIEW = "No review applies to the submitted outputs."


class SelfReviewGate:
    """Self-review mode: the agent has a sub-agent review against a written instruction file."""

    external = False

    def evaluate(self, checkpoint: Checkpoint, progress: ProgressReporter | None) -> GateVerdict:
        tasks = plan_review_tasks(checkpoint)
        if not tasks:
            return GatePassed(feedback=_NOTHING_TO_REVIEW)
        path = write_self_review_file(checkpoint, tasks)
        relative = path.relative_to(checkpoint.project_root).as_posix()
        return GateSelfReviewRequested(feedback=self_review_feedback(path), review_file=relative)


class ExternalGate:
    """External mode: each review task runs the Claude CLI; attempts are counted and capped."""

    external = True

    def __init__(self, reviewer: ClaudeReviewer) -> None:
        self.reviewer = reviewer

    def evaluate(self, checkpoint: Checkpoint, progress: ProgressReporter | None) -> GateVerdict:
        tasks = plan_review_tasks(checkpoint)
        if not tasks:
            return GatePassed(feedback=_NOTHING_TO_REVIEW)
        verdicts = tuple(from_thread.run(self.reviewer.review, checkpoint, tasks, progress))
        if all(verdict.passed for verdict in verdicts):
            return GatePassed(feedback="All reviews passed.", reviews=verdicts)
        return GateNeedsWork(feedback=combined_feedback(verdicts), reviews=verdicts)
