"""`finished_step(..., dry_run=true)`: what a real call would check and review, without
recording anything (docs/quality-gate.md, "Dry run").

The outputs are validated exactly as the pipeline (`deepwork_core.engine.finishing.finish`)
validates them and the evidence audit runs read-only (stale evidence, the scope guard); the
gate plans its review tasks and prices them, and no reviewer starts. At the last step the
stale outputs of earlier steps are planned with it, as a real call reviews them again.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from deepwork_core.base.config import DEFAULT_REVIEW_DEPTH
from deepwork_core.engine.briefing import reviewer_inputs
from deepwork_core.engine.checkpoints import (
    current_checkpoint,
)
from deepwork_core.engine.finishing.finish import FinishPipeline, Submission
from deepwork_core.engine.outputs import ValidatedOutputs
from deepwork_core.engine.results import EvidenceReport, FinishResult, FinishStatus, PlannedReview
from deepwork_core.evidence.audit import audit_checkpoint
from deepwork_core.gate.checkpoint import (
    Checkpoint,
)
from deepwork_core.gate.costs.quotes import ReviewPrice, TaskPrice
from deepwork_core.gate.gates import Gate
from deepwork_core.gate.job_check import submitted_job_feedback
from deepwork_core.gate.tasks import QualityReviewTask
from deepwork_core.jobs.model import JobDefinition, ScopeGuard, Step
from deepwork_core.state.sessions import (
    Session,
)
from deepwork_core.state.stacks import Target, stack_items, target_session
from deepwork_core.state.usage.totals import run_id_of


def dry_run(pipeline: FinishPipeline, target: Target, sub: Submission) -> FinishResult:
    """What `pipeline` would check and review, as a `dry_run` result: the outputs are
    validated exactly as a real call does and the evidence audit runs read-only (stale
    evidence, the scope guard); no reviewer starts, nothing is recorded."""
    with pipeline.store.transaction() as tx:
        session = target_session(tx, target)
        job, steps = current_checkpoint(pipeline.catalog, session)
        validated = pipeline.validated(session, steps, sub)
        stack = stack_items(tx, session.agent_id)
        run_id = run_id_of(session, tx.load)
    evidence, blocked = _dry_audit(pipeline.project_root, session, job.definition, steps, validated)
    gate = pipeline.gate
    tasks: list[PlannedReview] = []
    price: ReviewPrice | None = None
    # At the last step, stale outputs of earlier steps are reviewed again with this one.
    entries = job.definition.workflows_by_name[session.workflow_name].entries
    final = session.current_entry_index + 1 >= len(entries)
    again = _stale_steps(evidence, job.definition) if final and gate is not None else ()
    if gate is not None and (gate.consulted_for(steps) or again):
        reviewed = dict(validated.merged)
        for step_id in again:
            reviewed.update(session.step_progress[step_id].outputs)
        more = [job.definition.step(step_id) for step_id in again]
        checkpoint = Checkpoint(
            project_root=pipeline.project_root,
            store=pipeline.store.store,
            session_id=session.session_id,
            job=job.definition,
            step_ids=(*session.current_step_ids, *again),
            outputs=reviewed,
            input_files=reviewer_inputs(session, [*steps, *more], job.definition),
            notes=sub.notes,
            work_summary=sub.work_summary,
            run_id=run_id,
            watch=pipeline.outcomes.guards.watch,
        )
        tasks, price = _priced_plan(gate, checkpoint)
    if final and evidence.stale_evidence and blocked is None:
        blocked = _stale_note(evidence, validated, again, session.stale_reported)
    invalid = submitted_job_feedback(
        pipeline.project_root, job.definition.name, steps, validated.merged
    )
    feedback = _dry_feedback(invalid, tasks, price, blocked)
    return FinishResult(
        FinishStatus.DRY_RUN,
        stack,
        feedback=feedback,
        evidence=evidence,
        review_tasks=tasks,
        price=price,
    )


def _dry_audit(
    project_root: Path,
    session: Session,
    job: JobDefinition,
    steps: Sequence[Step],
    validated: ValidatedOutputs,
) -> tuple[EvidenceReport, str | None]:
    """The checkpoint's evidence audit, read-only, and what a strict scope guard would say."""
    step_ids = {step.id for step in steps}
    record = session.step_progress.get(steps[0].id)
    began = record.began if record is not None else None
    guard = job.scope_guard is not ScopeGuard.OFF and began is not None
    audit = audit_checkpoint(
        project_root,
        validated.by_step,
        [item for item in session.evidence if item.step_id not in step_ids],
        began,
        may_change=[glob for step in steps for glob in step.may_change],
        guard=guard,
    )
    blocked = None
    if audit.undeclared and job.scope_guard is ScopeGuard.STRICT:
        blocked = (
            "files changed during this step that it does not declare: "
            f"{', '.join(audit.undeclared)} (scope_guard: strict)."
        )
    report = EvidenceReport(
        stale_evidence=list(audit.stale),
        undeclared_changes=list(audit.undeclared),
        scope_guard_note=audit.guard_note if guard else None,
    )
    return report, blocked


def _stale_steps(evidence: EvidenceReport, job: JobDefinition) -> tuple[str, ...]:
    """The earlier steps whose changed outputs a real call reviews again, when every one of them
    has a review (else the real call asks for an override instead)."""
    steps = sorted({item.step_id for item in evidence.stale_evidence})
    return tuple(steps) if all(job.step(step_id).reviews for step_id in steps) else ()


def _stale_note(
    evidence: EvidenceReport,
    validated: ValidatedOutputs,
    again: Sequence[str],
    reported: Sequence[str],
) -> str | None:
    """What a real call at the last step does first about stale outputs (docs/evidence.md)."""
    paths = sorted(item.path for item in evidence.stale_evidence)
    if not again:
        return (
            f"outputs of earlier steps changed after they were accepted ({', '.join(paths)}) and "
            "have no review to run again: pass quality_review_override_reason or undo them."
        )
    submitted = {p for v in validated.merged.values() for p in ([v] if isinstance(v, str) else v)}
    if set(paths) <= submitted or paths == list(reported):
        return None  # submitted again, or named already: reviewed with this call, listed above
    return (
        f"outputs of step {', '.join(again)} changed after they were accepted "
        f"({', '.join(paths)}); a real call names them once, and the call after it runs their "
        "reviews again with this step's (listed above). Submitting those files among this "
        "step's outputs saves that call."
    )


def _priced_plan(
    gate: Gate, checkpoint: Checkpoint
) -> tuple[list[PlannedReview], ReviewPrice | None]:
    """The review tasks a real call would run, each with what it is expected to cost."""
    planned = gate.tasks(checkpoint)
    price = gate.price(checkpoint, planned) if planned else None
    expected = price.tasks if price is not None else [None] * len(planned)
    return [_planned(task, cost) for task, cost in zip(planned, expected, strict=True)], price


def _dry_feedback(
    invalid: str | None,
    tasks: Sequence[PlannedReview],
    price: ReviewPrice | None,
    blocked: str | None,
) -> str:
    """What a dry run says: what a real call would answer first, and what it would review."""
    priced = f" ({price.text})" if price is not None else ""
    feedback = (
        f"Dry run: a real call would answer needs_work, before any review. {invalid}"
        if invalid is not None
        else f"Dry run: the outputs pass every check; a real call would run {len(tasks)} "
        f"review task(s), listed in review_tasks{priced}. Nothing was recorded."
        if tasks
        else "Dry run: the outputs pass every check; no review applies. Nothing was recorded."
    )
    if blocked is not None:
        feedback = f"{feedback} But a real call would answer needs_work first: {blocked}"
    return feedback


def _planned(task: QualityReviewTask, expected: TaskPrice | None) -> PlannedReview:
    return PlannedReview(
        expected=expected,
        name=task.label,
        step_id=task.step_id,
        run_each=task.run_each,
        target_file=task.target_file,
        criteria=list(task.criteria),
        depth=task.depth or DEFAULT_REVIEW_DEPTH,
        files=list(task.files),
        agent=dict(task.agent) if task.agent else None,
        context=list(task.context) or None,
    )
