"""`.deepreview` rules as review tasks of the quality gate (docs/quality-gate.md).

At a checkpoint, the step's output files stand in for the change set: each rule that matches one
of them becomes a `QualityReviewTask` beside the step's own reviews, with one criterion (the
rule's instructions), so its verdict lands in the same audit trail.
"""

from __future__ import annotations

from deepwork_core.base.errors import GitError, ReviewError
from deepwork_core.gate.checkpoint import Checkpoint
from deepwork_core.gate.process_review import RULE_PREFIX
from deepwork_core.gate.quality import QualityReviewTask
from deepwork_review import GateRuleReview, gate_rule_reviews


def rule_review_tasks(checkpoint: Checkpoint) -> list[QualityReviewTask]:
    """The rule reviews of the checkpoint's output files (its `string` outputs left out)."""
    files: list[str] = []
    for step_id in checkpoint.step_ids:
        declared = checkpoint.job.step(step_id).outputs
        for name, value in checkpoint.outputs.items():
            if name in declared and declared[name].type.is_file:
                files.extend([value] if isinstance(value, str) else value)
    if not files:
        return []
    try:
        reviews = gate_rule_reviews(checkpoint.project_root, files)
    except (GitError, ReviewError):
        return []  # no git, or not a repository: rules cannot be found, the step's own apply
    return [_task(checkpoint.step_ids[0], review) for review in reviews]


def _task(step_id: str, review: GateRuleReview) -> QualityReviewTask:
    context = []
    if review.all_changed_filenames is not None:
        context.append("All outputs of the step: " + ", ".join(review.all_changed_filenames))
    if review.unchanged_matching_files is not None:
        listed = ", ".join(review.unchanged_matching_files) or "none"
        context.append(f"Unchanged files the rule matches (read for context): {listed}")
    return QualityReviewTask(
        step_id=step_id,
        run_each=f"{RULE_PREFIX}{review.rule}",
        files=list(review.files),
        criteria={review.rule: f"{review.description}\n\n{review.instructions.strip()}"},
        guidance="\n".join(context) or None,
    )
