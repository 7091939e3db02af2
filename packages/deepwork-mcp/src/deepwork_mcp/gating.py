"""The two quality gates the engine can run (see `docs/quality-gate.md`).

`SelfReviewGate` writes review instructions for the agent and asks for a self-review;
`ExternalGate` runs the Claude CLI reviewer. Both plan their tasks with `deepwork_core.gate.quality`
from the engine's `Checkpoint`, plus the `.deepreview` rules matching the step's output files
(`deepwork_review.rule_review_tasks`) unless `quality_gate.deepreview_rules` is off. `evaluate` is
called by the engine in a worker thread; the external reviewer is async, so it is run on the
server's event loop through `anyio.from_thread`.
"""

from __future__ import annotations

from collections.abc import Sequence

from anyio import from_thread
from deepwork_core.gate.checkpoint import (
    Checkpoint,
    GateNeedsWork,
    GatePassed,
    GateSelfReviewRequested,
    GateVerdict,
    ProgressReporter,
    has_own_reviews,
)
from deepwork_core.gate.quality import (
    QualityReviewTask,
    combined_feedback,
    plan_review_tasks,
    self_review_feedback,
    write_self_review_file,
)
from deepwork_core.jobs.model import Step
from deepwork_review import rule_review_tasks

from deepwork_mcp.reviewer import ClaudeReviewer

_NOTHING_TO_REVIEW = "No review applies to the submitted outputs."


class _Planner:
    """What both gates share: which checkpoints they see and the tasks they plan."""

    def __init__(self, *, deepreview_rules: bool = True) -> None:
        self.deepreview_rules = deepreview_rules

    def consulted_for(self, steps: Sequence[Step]) -> bool:
        return has_own_reviews(steps) or (
            self.deepreview_rules
            and any(spec.type.is_file for step in steps for spec in step.outputs.values())
        )

    def tasks(self, checkpoint: Checkpoint) -> list[QualityReviewTask]:
        tasks = plan_review_tasks(checkpoint)
        if self.deepreview_rules:
            tasks += rule_review_tasks(checkpoint)
        return tasks


class SelfReviewGate(_Planner):
    """Self-review mode: the agent has a sub-agent review against a written instruction file."""

    external = False

    def evaluate(self, checkpoint: Checkpoint, progress: ProgressReporter | None) -> GateVerdict:
        tasks = self.tasks(checkpoint)
        if not tasks:
            return GatePassed(feedback=_NOTHING_TO_REVIEW)
        path = write_self_review_file(checkpoint, tasks)
        relative = path.relative_to(checkpoint.project_root).as_posix()
        return GateSelfReviewRequested(feedback=self_review_feedback(path), review_file=relative)


class ExternalGate(_Planner):
    """External mode: each review task runs the Claude CLI; attempts are counted and capped."""

    external = True

    def __init__(self, reviewer: ClaudeReviewer, *, deepreview_rules: bool = True) -> None:
        super().__init__(deepreview_rules=deepreview_rules)
        self.reviewer = reviewer

    def evaluate(self, checkpoint: Checkpoint, progress: ProgressReporter | None) -> GateVerdict:
        tasks = self.tasks(checkpoint)
        if not tasks:
            return GatePassed(feedback=_NOTHING_TO_REVIEW)
        verdicts = tuple(from_thread.run(self.reviewer.review, checkpoint, tasks, progress))
        if all(verdict.passed for verdict in verdicts):
            return GatePassed(feedback="All reviews passed.", reviews=verdicts)
        return GateNeedsWork(feedback=combined_feedback(verdicts), reviews=verdicts)
