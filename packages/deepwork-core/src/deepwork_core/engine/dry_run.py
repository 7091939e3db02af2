"""`finished_step(..., dry_run=true)`: check the outputs, list the reviews, change nothing.

A dry run validates the outputs exactly as a real call does (the same coded problems, in the
same structured list) and plans the review tasks the gate would run, with their depth and
files. It starts no reviewer, records no attempt and no event, does not move the session and
does not touch evidence (the evidence audit and the self-review file belong to real calls).
See docs/quality-gate.md, "Dry run".
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Protocol

from deepwork_core.base.config import DEFAULT_REVIEW_DEPTH, OutputsConfig
from deepwork_core.engine.briefing import reviewer_inputs
from deepwork_core.engine.checkpoints import current_checkpoint, run_of
from deepwork_core.engine.outputs import validate_outputs
from deepwork_core.engine.results import (
    EvidenceReport,
    FinishResult,
    FinishStatus,
    PlannedReview,
)
from deepwork_core.gate.checkpoint import Checkpoint, check_finish_arguments
from deepwork_core.gate.gates import Gate
from deepwork_core.gate.tasks import QualityReviewTask
from deepwork_core.jobs.discovery import JobCatalog
from deepwork_core.state.sessions import SessionStore
from deepwork_core.state.stacks import check_target, stack_items, target_session


class DryRunnable(Protocol):
    """What a dry run reads of the engine (`WorkflowEngine` has it all)."""

    @property
    def project_root(self) -> Path: ...
    @property
    def catalog(self) -> JobCatalog: ...
    @property
    def store(self) -> SessionStore: ...
    @property
    def gate(self) -> Gate | None: ...
    @property
    def output_limits(self) -> OutputsConfig: ...


def dry_run_finish(
    engine: DryRunnable,
    outputs: Mapping[str, object],
    *,
    notes: str | None = None,
    session_id: str | None = None,
    agent_id: str | None = None,
    work_summary: str | None = None,
) -> FinishResult:
    """What `finish` would check and review, as a `dry_run` result (nothing is written)."""
    check_finish_arguments(outputs, notes, None, work_summary)
    check_target(session_id, agent_id)
    with engine.store.transaction() as tx:
        session = target_session(tx, session_id, agent_id)
        job, steps = current_checkpoint(engine.catalog, session)
        validated = validate_outputs(engine.project_root, steps, outputs, engine.output_limits)
        stack = stack_items(tx, session.agent_id)
        run_id = run_of(tx, session)
    gate, tasks = engine.gate, []
    if gate is not None and gate.consulted_for(steps):
        checkpoint = Checkpoint(
            project_root=engine.project_root,
            session_id=session.session_id,
            job=job.definition,
            step_ids=tuple(session.current_step_ids),
            outputs=dict(validated.merged),
            input_files=reviewer_inputs(session, steps, job.definition),
            notes=notes,
            work_summary=work_summary,
            run_id=run_id,
        )
        tasks = [_planned(task) for task in gate.tasks(checkpoint)]
    feedback = (
        f"Dry run: the outputs pass every check; a real call would run {len(tasks)} review "
        "task(s), listed in review_tasks. Nothing was recorded."
        if tasks
        else "Dry run: the outputs pass every check; no review applies. Nothing was recorded."
    )
    evidence = EvidenceReport(stale_evidence=[], undeclared_changes=[])  # the audit is not run
    return FinishResult(
        FinishStatus.DRY_RUN, stack, feedback=feedback, evidence=evidence, review_tasks=tasks
    )


def _planned(task: QualityReviewTask) -> PlannedReview:
    return PlannedReview(
        name=task.label,
        step_id=task.step_id,
        run_each=task.run_each,
        target_file=task.target_file,
        criteria=list(task.criteria),
        depth=task.depth or DEFAULT_REVIEW_DEPTH,
        files=list(task.files),
    )
