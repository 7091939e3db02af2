"""The two quality gates the engine can run (see `docs/quality-gate.md`).

`SelfReviewGate` writes review instructions for the agent and asks for a self-review;
`ExternalGate` runs the Claude CLI reviewer. Both plan their tasks with `deepwork_core.gate.quality`
from the engine's `Checkpoint`, plus the `.deepreview` rules matching the step's output files
(`deepwork_review.rule_review_tasks`) unless `quality_gate.deepreview_rules` is off. A `.deepreview`
file (or rule) that fails to load is not skipped silently: every verdict then carries a
`quality_gate.deepreview_invalid` warning naming the file and the reason. `evaluate` is
called by the engine in a worker thread; the external reviewer is async, so it is run on the
server's event loop through `anyio.from_thread`.
"""

from __future__ import annotations

from collections.abc import Sequence

from anyio import from_thread
from deepwork_core.base.config import DEFAULT_REVIEW_DEPTH, ReviewDepth
from deepwork_core.base.error_codes import ErrorCode
from deepwork_core.base.errors import GitError, Problem, QualityGateError, ReviewError
from deepwork_core.base.escaping import printable, quote_name
from deepwork_core.gate.budget import log_self_reviews, with_self_review
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
from deepwork_review import rule_file_problems, rule_review_tasks

from deepwork_mcp.reviewer import CliReviewer

_NOTHING_TO_REVIEW = "No review applies to the submitted outputs."
#: The warning code of a `.deepreview` file or rule the gate could not load.
RULES_UNLOADED = ErrorCode.QUALITY_GATE_DEEPREVIEW_INVALID


class _Planner:
    """What both gates share: which checkpoints they see and the tasks they plan."""

    def __init__(
        self, *, deepreview_rules: bool = True, review_depth: ReviewDepth = DEFAULT_REVIEW_DEPTH
    ) -> None:
        self.deepreview_rules = deepreview_rules
        self.review_depth = review_depth

    def consulted_for(self, steps: Sequence[Step]) -> bool:
        return has_own_reviews(steps) or (self.deepreview_rules and _has_file_outputs(steps))

    def tasks(self, checkpoint: Checkpoint) -> list[QualityReviewTask]:
        """The review tasks of `checkpoint`, each at its depth (`quality_gate.review_depth`
        unless its review names one)."""
        tasks = plan_review_tasks(checkpoint, self.review_depth)
        if self.deepreview_rules:
            tasks += rule_review_tasks(checkpoint)
        return [t if t.depth else t.model_copy(update={"depth": self.review_depth}) for t in tasks]

    def warnings(self, checkpoint: Checkpoint) -> tuple[str, ...]:
        """One warning per `.deepreview` problem, when the rules are consulted for the
        checkpoint (they are on and the steps have file outputs)."""
        steps = [checkpoint.job.step(step_id) for step_id in checkpoint.step_ids]
        if not (self.deepreview_rules and _has_file_outputs(steps)):
            return ()
        try:
            problems = rule_file_problems(checkpoint.project_root)
        except (GitError, ReviewError):
            return ()  # no rules can be found at all: the step's own reviews apply
        return tuple(
            printable(
                f"{RULES_UNLOADED}: {_where(problem)}: {problem.code}: "
                f"{problem.message} (the rules this concerns were not applied; fix the file)"
            )
            for problem in problems
        )


def _has_file_outputs(steps: Sequence[Step]) -> bool:
    return any(spec.type.is_file for step in steps for spec in step.outputs.values())


def _where(problem: Problem) -> str:
    """`file:line` of a problem, the file's name quoted when it is not plain."""
    where = "<unknown>" if problem.file is None else quote_name(problem.file.as_posix())
    return where if problem.line is None else f"{where}:{problem.line}"


class SelfReviewGate(_Planner):
    """Self-review mode: the agent has a sub-agent review against a written instruction file."""

    external = False

    def evaluate(self, checkpoint: Checkpoint, progress: ProgressReporter | None) -> GateVerdict:
        tasks, warnings = self.tasks(checkpoint), self.warnings(checkpoint)
        if not tasks:
            return GatePassed(feedback=_NOTHING_TO_REVIEW, warnings=warnings)
        path = write_self_review_file(checkpoint, tasks)
        log_self_reviews(checkpoint, tasks)
        relative = path.relative_to(checkpoint.project_root).as_posix()
        feedback = self_review_feedback(path)
        return GateSelfReviewRequested(feedback=feedback, review_file=relative, warnings=warnings)


class ExternalGate(_Planner):
    """External mode: each review task runs the Claude CLI; attempts are counted and capped."""

    external = True

    def __init__(
        self,
        reviewer: CliReviewer,
        *,
        deepreview_rules: bool = True,
        review_depth: ReviewDepth = DEFAULT_REVIEW_DEPTH,
    ) -> None:
        super().__init__(deepreview_rules=deepreview_rules, review_depth=review_depth)
        self.reviewer = reviewer

    def evaluate(self, checkpoint: Checkpoint, progress: ProgressReporter | None) -> GateVerdict:
        tasks, warnings = self.tasks(checkpoint), self.warnings(checkpoint)
        if not tasks:
            return GatePassed(feedback=_NOTHING_TO_REVIEW, warnings=warnings)
        try:
            verdicts = tuple(from_thread.run(self.reviewer.review, checkpoint, tasks, progress))
        except QualityGateError as exc:  # stalled or out of budget: self-review is the way on
            raise with_self_review(exc, checkpoint, tasks, self.reviewer.budget) from None
        if all(verdict.passed for verdict in verdicts):
            return GatePassed(feedback="All reviews passed.", reviews=verdicts, warnings=warnings)
        feedback = combined_feedback(verdicts)
        return GateNeedsWork(feedback=feedback, reviews=verdicts, warnings=warnings)
