"""Workflow transitions: start, finish a checkpoint, abort (`docs/quality-gate.md`).

The engine is synchronous and knows nothing of MCP. Every transition is one transaction of the
`SessionStore` (one atomic write of the session, plus one of the stack when it changes). The
quality gate is the one slow part: `finish()` validates and records the attempt under the lock,
releases it while the reviewer runs, then re-checks that the session has not moved on before it
records the verdict and advances, so a slow review never blocks other calls and never completes a
session that changed meanwhile.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from datetime import datetime
from functools import partial
from pathlib import Path

from deepwork_core.base.config import DEFAULT_MAX_QUALITY_ATTEMPTS, OutputsConfig
from deepwork_core.base.error_codes import ErrorCode
from deepwork_core.base.errors import QualityGateError, WorkflowNotFoundError
from deepwork_core.base.identifiers import check_agent_id, check_text
from deepwork_core.engine.approver import Approver
from deepwork_core.engine.branching import BranchOutcome, abandoned_note
from deepwork_core.engine.briefing import InstructionReader, reviewer_inputs
from deepwork_core.engine.checkpoints import (
    UNCOUNTED,
    count_attempt,
    current_checkpoint,
    next_attempt,
    run_of,
)
from deepwork_core.engine.evidence_steps import EvidenceSteps, needs_work, reviewing
from deepwork_core.engine.nesting import (
    Nesting,
    begin_checkpoint,
    handed_up_outputs,
    waiting_parent,
)
from deepwork_core.engine.outputs import ValidatedOutputs, validate_outputs
from deepwork_core.engine.results import (
    AbortResult,
    FinishResult,
    FinishStatus,
    StartResult,
)
from deepwork_core.engine.safeguards import (
    Findings,
    Safeguards,
    join_notes,
    outputs_with,
    override_kind,
)
from deepwork_core.engine.start_inputs import check_start_inputs
from deepwork_core.evidence.scope import RepoSnapshot
from deepwork_core.evidence.verdicts import ReviewVerdict, VerdictKind
from deepwork_core.gate.checkpoint import (
    Checkpoint,
    GateNeedsWork,
    GatePassed,
    GateReviewing,
    GateSelfReviewRequested,
    GateVerdict,
    ProgressReporter,
    check_finish_arguments,
    quality_event,
)
from deepwork_core.gate.gates import Gate
from deepwork_core.jobs.discovery import Catalog, JobCatalog, LoadedJob
from deepwork_core.jobs.lookup import select_workflow
from deepwork_core.state.approval_seal import ApprovalKey
from deepwork_core.state.session_events import SessionEvents
from deepwork_core.state.sessions import (
    QualityEvent,
    Session,
    SessionStatus,
    SessionStore,
    StateTransaction,
    StepRecord,
    new_session_id,
    utc_now,
)
from deepwork_core.state.stacks import (
    StackItem,
    check_target,
    same_checkpoint,
    stack_item,
    stack_items,
    target_session,
)

#: `(job_name, label) -> BranchOutcome`: switches to the workflow's branch.
BranchMaker = Callable[[str, str], BranchOutcome]


@dataclass(frozen=True, slots=True)
class _Pending:
    """A checkpoint handed to the gate, and what is needed to record its verdict."""

    checkpoint: Checkpoint
    job: LoadedJob
    validated: ValidatedOutputs
    entry_index: int
    findings: Findings


class WorkflowEngine(EvidenceSteps):
    """Runs workflows of one project over a `JobCatalog` and a `SessionStore`. Thread-safe.

    `approval_key` seals and verifies human approvals (docs/security.md); the command line and
    the server pass the project's key. Without it a step that needs approval waits for good.
    """

    def __init__(
        self,
        project_root: Path,
        catalog: JobCatalog,
        store: SessionStore,
        *,
        gate: Gate | None = None,
        max_quality_attempts: int = DEFAULT_MAX_QUALITY_ATTEMPTS,
        branch_maker: BranchMaker | None = None,
        clock: Callable[[], datetime] = utc_now,
        output_limits: OutputsConfig | None = None,
        approval_key: ApprovalKey | None = None,
    ) -> None:
        self.project_root = project_root
        self.catalog = catalog
        self.store = store
        self.gate = gate
        self.max_quality_attempts = max_quality_attempts
        self.branch_maker = branch_maker
        self.clock = clock
        self.output_limits = OutputsConfig() if output_limits is None else output_limits
        self.instructions = InstructionReader(project_root)
        self.events = SessionEvents(project_root, clock)
        self.guards = Safeguards(project_root, clock, approval_key)
        self.nesting = Nesting(
            catalog, self.instructions, self.events.started, clock, self.guards.begin_nested
        )
        if gate is not None:  # resumes the review jobs a stopped server left in this project
            gate.start(project_root, lambda name: catalog.get(name).definition)

    # --- reads -------------------------------------------------------------------------------

    def list_jobs(self) -> Catalog:
        return self.catalog.scan()

    def stack(self, agent_id: str | None = None) -> list[StackItem]:
        return [stack_item(session) for session in self.store.stack(agent_id)]

    # --- start -------------------------------------------------------------------------------

    def start(
        self,
        goal: str,
        job_name: str,
        workflow_name: str,
        instance_id: str | None = None,
        agent_id: str | None = None,
        inputs: Mapping[str, object] | None = None,
    ) -> StartResult:
        """Start a workflow on top of the caller's stack and begin its first checkpoint. Only a
        top-level workflow of the main stack switches branches (agents share the work tree)."""
        check_text(goal, what="goal")
        check_text(instance_id, what="instance_id")
        check_agent_id(agent_id)
        job = self.catalog.get(job_name)
        workflow = select_workflow(job, workflow_name)
        given = check_start_inputs(
            self.project_root, job.definition, workflow, inputs,
            enforce_required=job.parsed.format == "0.10",
        )  # fmt: skip
        entries = workflow.entries
        if not entries:
            raise WorkflowNotFoundError(
                f"workflow {workflow.name!r} of job {job.name!r} has no steps",
                code=ErrorCode.WORKFLOW_EMPTY,
            )

        outcome = BranchOutcome(branch_name=None)
        if agent_id is None and self.branch_maker is not None and self._main_stack_empty():
            outcome = self.branch_maker(job.name, instance_id or workflow.name)
        branch_name, branch_note = outcome.branch_name, outcome.note

        now, snapshot = self.clock(), self.guards.prefetch(job.definition)
        with self.store.transaction() as tx:
            parent = tx.top(agent_id)
            if parent is not None:  # nested workflows stay on their parent's branch
                branch_name, branch_note = parent.branch_name, None
            session = Session(
                session_id=new_session_id(),
                job_name=job.name,
                workflow_name=workflow.name,
                instance_id=instance_id,
                goal=goal,
                current_step_ids=list(entries[0]),
                step_progress={
                    step_id: StepRecord(step_id=step_id, started_at=now) for step_id in entries[0]
                },
                parent_session_id=parent.session_id if parent is not None else None,
                agent_id=agent_id,
                inputs=given,
                branch_name=branch_name,
                previous_branch=outcome.previous_branch if parent is None else None,
                started_at=now,
            )
            guard_note = self.guards.begin(session, job.definition, entries[0], snapshot)
            brief = begin_checkpoint(self.nesting, tx, job, session, entries[0])
            stack = stack_items(tx, agent_id)
        if parent is None:
            self.store.prune()
        return StartResult(brief, stack, branch_name, join_notes(branch_note, guard_note))

    # --- finish ------------------------------------------------------------------------------

    def finish(
        self,
        outputs: Mapping[str, object],
        *,
        notes: str | None = None,
        override_reason: str | None = None,
        session_id: str | None = None,
        progress: ProgressReporter | None = None,
        agent_id: str | None = None,
        work_summary: str | None = None,
        approver: Approver | None = None,
    ) -> FinishResult:
        """Check the current checkpoint's outputs, run the quality gate, then advance.

        Three phases: validate and either advance at once or hand out a checkpoint (under the
        lock); run the gate (lock released); record its verdict and advance or answer
        `needs_work` (under the lock, if the session has not moved on meanwhile). A step that
        needs approval asks `approver` (lock released) and, once answered, goes on at once.
        """
        check_finish_arguments(outputs, notes, override_reason, work_summary)
        check_target(session_id, agent_id)
        once = partial(
            self._finish_once, outputs, notes, override_reason, session_id, agent_id, work_summary
        )
        return self._answered_by_human(once(progress), approver, lambda: once(progress))

    def _finish_once(
        self,
        outputs: Mapping[str, object],
        notes: str | None,
        override_reason: str | None,
        session_id: str | None,
        agent_id: str | None,
        work_summary: str | None,
        progress: ProgressReporter | None,
    ) -> FinishResult:
        prepared = self._prepare_checkpoint(
            outputs, notes, override_reason, session_id, agent_id, work_summary
        )
        if isinstance(prepared, FinishResult):
            return prepared
        verdict = self._evaluate(prepared, progress)
        result = self._record_verdict(prepared, verdict, notes)
        return replace(result, warnings=list(verdict.warnings)) if verdict.warnings else result

    def _prepare_checkpoint(
        self,
        outputs: Mapping[str, object],
        notes: str | None,
        override_reason: str | None,
        session_id: str | None,
        agent_id: str | None,
        work_summary: str | None = None,
    ) -> FinishResult | _Pending:
        """Validate the outputs; advance when no review is due, else count the attempt."""
        gate = self.gate
        with self.store.transaction() as tx:
            session = target_session(tx, session_id, agent_id)
            job, steps = current_checkpoint(self.catalog, session)
            validated = validate_outputs(self.project_root, steps, outputs, self.output_limits)
            self.events.outputs_submitted(
                session.session_id, session.current_step_ids, validated.merged, notes
            )
            answered, findings = self._audit_first(
                tx, session, job, steps, validated, notes, override_reason
            )
            if answered is not None:
                return answered
            reviewed = gate is not None and (gate.consulted_for(steps) or bool(findings.rereview))
            if gate is None or not reviewed:
                return self._accept(tx, session, job, validated, notes, findings, override_reason)
            if override_reason is not None:
                session.quality_log.append(
                    QualityEvent(
                        at=self.clock(),
                        kind=VerdictKind.OVERRIDE,
                        step_ids=list(session.current_step_ids),
                        override_reason=override_reason,
                    )
                )
                self.events.override(session.session_id, session.current_step_ids, override_reason)
                kind, why = override_kind(session), override_reason
                return self._accept(tx, session, job, validated, notes, findings, why, kind)
            # Counted when its verdict is recorded: a call answered `reviewing` is no attempt.
            attempt = next_attempt(session) if gate.external else 0
            again = [job.definition.step(step_id) for step_id in findings.rereview]
            checkpoint = Checkpoint(
                project_root=self.project_root,
                session_id=session.session_id,
                job=job.definition,
                step_ids=(*session.current_step_ids, *findings.rereview),
                outputs=outputs_with(session, findings.rereview, validated.merged),
                input_files=reviewer_inputs(session, [*steps, *again], job.definition),
                notes=notes,
                attempt=attempt,
                work_summary=work_summary,
                undeclared_changes=tuple(findings.undeclared),
                run_id=run_of(tx, session),
            )
            return _Pending(checkpoint, job, validated, session.current_entry_index, findings)

    def _evaluate(self, pending: _Pending, progress: ProgressReporter | None) -> GateVerdict:
        """Run the gate; a gate error is logged on the session, then raised."""
        assert self.gate is not None
        checkpoint = pending.checkpoint
        try:
            return self.gate.evaluate(checkpoint, progress)
        except QualityGateError as exc:
            with self.store.transaction() as tx:
                session = same_checkpoint(tx, checkpoint.session_id, pending.entry_index)
                if checkpoint.attempt and exc.code not in UNCOUNTED:
                    count_attempt(session, self.clock())
                session.quality_log.append(
                    QualityEvent(
                        at=self.clock(),
                        kind=VerdictKind.ERROR,
                        step_ids=list(checkpoint.step_ids),
                        attempt=checkpoint.attempt or None,
                        error_code=exc.code,
                        feedback=exc.message,
                    )
                )
                tx.save(session)
            raise

    def _record_verdict(
        self, pending: _Pending, verdict: GateVerdict, notes: str | None
    ) -> FinishResult:
        """Log the verdict; advance on a pass, else answer `needs_work` (or hit the cap)."""
        checkpoint = pending.checkpoint
        if isinstance(verdict, GateReviewing):  # nothing is recorded while reviews run
            with self.store.transaction() as tx:
                session = same_checkpoint(tx, checkpoint.session_id, pending.entry_index)
                stack = stack_items(tx, session.agent_id)
            return reviewing(stack, pending.findings, verdict)
        with self.store.transaction() as tx:
            session = same_checkpoint(tx, checkpoint.session_id, pending.entry_index)
            if checkpoint.attempt and not isinstance(verdict, GateSelfReviewRequested):
                count_attempt(session, self.clock())
            session.quality_log.append(quality_event(verdict, checkpoint, self.clock()))
            if not isinstance(verdict, GateSelfReviewRequested):
                self.events.verdicts(session.session_id, verdict.reviews, checkpoint.attempt)
            if isinstance(verdict, GatePassed):
                return self._accept(
                    tx, session, pending.job, pending.validated, notes, pending.findings,
                    verdict=verdict.kind, rereviewed=pending.findings.rereview,
                )  # fmt: skip
            tx.save(session)
            failed: list[ReviewVerdict] = []
            if isinstance(verdict, GateNeedsWork):
                failed = [review for review in verdict.reviews if not review.passed]
            self.events.needs_work(
                session.session_id, checkpoint.step_ids, checkpoint.attempt, len(failed)
            )
            if (
                isinstance(verdict, GateNeedsWork)
                and checkpoint.attempt >= self.max_quality_attempts
            ):
                raise QualityGateError(
                    f"Quality gate failed after {checkpoint.attempt} attempts. Feedback: "
                    f"{verdict.feedback}. Stop and show this feedback to the user; pass "
                    "quality_review_override_reason only if the user tells you to accept the "
                    "outputs as they are.",
                    code=ErrorCode.QUALITY_GATE_MAX_ATTEMPTS,
                )
            stack = stack_items(tx, session.agent_id)
            return needs_work(stack, pending.findings, verdict.feedback, failed)

    # --- abort -------------------------------------------------------------------------------

    def abort(
        self, explanation: str, session_id: str | None = None, agent_id: str | None = None
    ) -> AbortResult:
        """Abort a workflow (the top one unless `session_id` names another) and pop it."""
        check_text(explanation, what="explanation")
        check_target(session_id, agent_id)
        with self.store.transaction() as tx:
            session = target_session(tx, session_id, agent_id)
            session.status = SessionStatus.ABORTED
            session.abort_reason = explanation
            session.completed_at = self.clock()
            tx.save(session)
            tx.remove_from_stack(session.session_id)
            self.events.aborted(session, explanation)
            stack = stack_items(tx, session.agent_id)
        top = stack[-1] if stack else None
        note = None
        if session.parent_session_id is None and session.branch_name is not None:
            note = abandoned_note(session.branch_name, session.previous_branch)
        return AbortResult(
            aborted_workflow=session.workflow_label,
            aborted_step=session.current_step_id,
            explanation=explanation,
            stack=stack,
            resumed_workflow=top.workflow if top else None,
            resumed_step=top.step if top else None,
            branch_note=note,
        )

    # --- internals ---------------------------------------------------------------------------

    def _main_stack_empty(self) -> bool:
        """No workflow on the main stack (the lock is taken only when the stack file exists)."""
        if not self.store.stack_path.exists():
            return True
        with self.store.transaction() as tx:
            return not tx.stack_ids(None)

    def _advance(
        self,
        tx: StateTransaction,
        session: Session,
        job: LoadedJob,
        validated: ValidatedOutputs,
        notes: str | None,
        snapshot: RepoSnapshot | None = None,
        probe: bool = False,
    ) -> FinishResult:
        now = self.clock()
        for step_id in session.current_step_ids:
            record = session.step_progress.setdefault(
                step_id, StepRecord(step_id=step_id, started_at=now)
            )
            record.completed_at = now
            record.outputs = validated.by_step.get(step_id, {})
            record.notes = notes

        workflow = job.definition.workflows_by_name[session.workflow_name]
        entries = workflow.entries
        next_index = session.current_entry_index + 1
        if next_index < len(entries):
            session.current_entry_index = next_index
            session.current_step_ids = list(entries[next_index])
            for step_id in entries[next_index]:
                session.step_progress[step_id] = StepRecord(step_id=step_id, started_at=now)
            self.guards.begin(session, job.definition, entries[next_index], snapshot, probe=probe)
            tx.save(session)
            self.events.step_begun(session)
            ids = entries[next_index]
            brief = begin_checkpoint(self.nesting, tx, job, session, ids, pushed=True)
            return FinishResult(
                FinishStatus.NEXT_STEP, stack_items(tx, session.agent_id), brief=brief
            )

        session.status = SessionStatus.COMPLETED
        session.completed_at = now
        tx.save(session)
        tx.remove_from_stack(session.session_id)
        self.events.completed(session)
        parent = waiting_parent(tx, session)
        if parent is not None:
            return self._resume_parent(tx, session, parent, workflow.post_workflow_instructions)
        stack = stack_items(tx, session.agent_id)
        summary = f"Workflow '{session.workflow_label}' completed successfully!"
        if stack:
            summary += (
                f" Resume the parent workflow '{stack[-1].workflow}' at step '{stack[-1].step}'."
            )
        return FinishResult(
            FinishStatus.WORKFLOW_COMPLETE,
            stack,
            summary=summary,
            all_outputs=session.all_outputs(),
            post_workflow_instructions=workflow.post_workflow_instructions,
        )

    def _resume_parent(
        self, tx: StateTransaction, finished: Session, parent: Session, after: str | None
    ) -> FinishResult:
        """Complete the parent's `sub_workflow` step with the workflow `finished` ran."""
        job = self.catalog.get(parent.job_name)
        step = job.definition.step(parent.current_step_id)
        outputs = ValidatedOutputs({step.id: handed_up_outputs(step, finished)})
        result = self._advance(tx, parent, job, outputs, None)
        note = (
            f"Workflow '{finished.workflow_label}' completed; step '{step.id}' of "
            f"'{parent.workflow_label}' completed with it."
        )
        if after:
            note += f" Afterwards: {after}"
        return replace(result, summary=f"{note} {result.summary or ''}".rstrip())
