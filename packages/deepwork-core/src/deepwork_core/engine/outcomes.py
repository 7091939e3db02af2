"""How a checkpoint ends, inside the state transaction (docs/evidence.md, docs/runtime.md):
audit it, accept it (bind its hashes, or first ask a human; unreviewed when overridden),
advance to the next entry or complete the workflow (resuming a waiting parent), and the
answers `needs_work`, `awaiting_approval` and `reviewing`.

`Outcomes` is a collaborator of the finish pipeline (`deepwork_core.engine.finishing.finish`);
it never calls back into it. Each of its methods takes the checkpoint's `CheckpointContext`,
which the pipeline builds once, and, where the evidence decides, the audit's `Findings`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from pathlib import Path

from deepwork_core.base.errors import DeepWorkError
from deepwork_core.base.layout import JOB_FILE
from deepwork_core.engine.approver import Approver
from deepwork_core.engine.branching import completed_summary
from deepwork_core.engine.headless.parking import Parking, approval_feedback
from deepwork_core.engine.nesting import (
    Nesting,
    begin_checkpoint,
    handed_up_outputs,
    waiting_parent,
)
from deepwork_core.engine.outputs import ValidatedOutputs
from deepwork_core.engine.results import (
    ApprovalPrompt,
    EvidenceReport,
    FinishResult,
    FinishStatus,
    prompt_of,
)
from deepwork_core.engine.safeguards.approvals import ApprovalOutcome, ended_by
from deepwork_core.engine.safeguards.evidence import Safeguards, override_kind
from deepwork_core.engine.safeguards.findings import Findings
from deepwork_core.evidence.scope import RepoSnapshot, head_commit
from deepwork_core.evidence.verdicts import ReviewVerdict, VerdictKind
from deepwork_core.gate.checkpoint import GateReviewing
from deepwork_core.gate.gates import Gate
from deepwork_core.gate.job_check import submitted_job_feedback
from deepwork_core.jobs.discovery import JobCatalog, LoadedJob
from deepwork_core.jobs.model import Step
from deepwork_core.receipts.definition import step_definition
from deepwork_core.state.approvals.models import ApprovalRecord
from deepwork_core.state.approvals.seal import ApprovalKeyError
from deepwork_core.state.session_events import SessionEvents
from deepwork_core.state.sessions import (
    OutputValue,
    ParkReason,
    QualityEvent,
    Session,
    SessionStatus,
    StateTransaction,
    StepRecord,
)
from deepwork_core.state.stacks import (
    StackItem,
    settle_declared,
    settle_submitted,
    stack_items,
)


@dataclass(frozen=True, slots=True)
class CheckpointContext:
    """One checkpoint of one `finished_step` call, as the pipeline's stages and every end of it
    see it: built once its outputs are valid, then moved into the transaction that records its
    verdict (`reopened`)."""

    tx: StateTransaction
    session: Session
    job: LoadedJob
    #: The steps of the session's current entry (several for a concurrent group).
    steps: tuple[Step, ...]
    outputs: ValidatedOutputs
    notes: str | None = None
    override_reason: str | None = None
    work_summary: str | None = None

    @classmethod
    def of(
        cls,
        tx: StateTransaction,
        session: Session,
        job: LoadedJob,
        outputs: ValidatedOutputs,
        notes: str | None = None,
    ) -> CheckpointContext:
        """The context of `session`'s current entry, with nothing said beside its outputs but
        `notes` (a fan-in, or a finished workflow completing its parent's step)."""
        steps = tuple(job.definition.step(step_id) for step_id in session.current_step_ids)
        return cls(tx, session, job, steps, outputs, notes)

    @property
    def final(self) -> bool:
        """True at the workflow's last entry."""
        entries = self.job.definition.workflows_by_name[self.session.workflow_name].entries
        return self.session.current_entry_index + 1 >= len(entries)

    def stack(self) -> list[StackItem]:
        """The stack the session is on, as an answer carries it."""
        return stack_items(self.tx, self.session.agent_id)

    def reopened(self, tx: StateTransaction, session: Session) -> CheckpointContext:
        """The same checkpoint inside `tx`, with `session` as loaded there."""
        return replace(self, tx=tx, session=session)


@dataclass(eq=False)
class Outcomes:
    """The ends of a checkpoint, each inside the transaction of its `CheckpointContext`."""

    project_root: Path
    catalog: JobCatalog
    guards: Safeguards
    events: SessionEvents
    nesting: Nesting
    gate: Gate | None
    clock: Callable[[], datetime]
    #: Set on a headless server: runs park where they would wait for a person.
    parking: Parking | None = None

    def audit_first(self, context: CheckpointContext) -> tuple[FinishResult | None, Findings]:
        """Audit the checkpoint; the answer when an open approval, the findings or an invalid
        submitted `job.yml` (`gate.job_check`) decide it."""
        session, definition = context.session, context.job.definition
        fan = self.nesting.fan if session.instance_of is not None else None
        # An instance's changes are judged in its worktree (docs/fan-out.md).
        judged = fan.worktree_undeclared(session, definition, context.outputs) if fan else None
        findings = self.guards.inspect(
            session, definition, context.steps, context.outputs, context.override_reason,
            final=context.final, reviewable=self.gate is not None, judged=judged,
        )  # fmt: skip
        if session.instance_of is not None:  # a sibling's submitted files are not its to undo
            paths = [item.path for item in findings.audit.hashes]
            settle_submitted(context.tx, session, paths, self.project_root)
        if session.pending_approval is not None:
            answered = self.approval_answer(context, findings)
            if answered is not None:
                return answered, findings
        blocked = findings.blocked or submitted_job_feedback(
            self.project_root, definition.name, context.steps, context.outputs.merged
        )
        if blocked is not None:
            context.tx.save(session)
            return needs_work(context.stack(), findings, blocked), findings
        return None, findings

    def accept(
        self,
        context: CheckpointContext,
        findings: Findings,
        reason: str | None = None,
        verdict: VerdictKind = VerdictKind.UNREVIEWED,
        rereviewed: Sequence[str] = (),
        approved: bool = False,
    ) -> FinishResult:
        """Bind the evidence and advance, or first ask the human when a step needs approval."""
        session, steps = context.session, context.steps
        if not approved:  # an approval decided later keeps what the gate accepted
            self.note_definition(context, again=True)
        if not approved and self.guards.needs_approval(steps):
            ask = self.guards.open_approval(
                session, steps, findings, verdict, reason, rereviewed,
                job_file=context.job.job_dir / JOB_FILE,
            )  # fmt: skip
            if self.parking is not None:
                self.parking.park(session, ParkReason.AWAITING_APPROVAL, request_id=ask.request_id)
            context.tx.save(session)
            return awaiting(context.stack(), ask, findings, parked=session.parked is not None)
        began = session.step_progress[session.current_step_ids[0]].began
        self.guards.accept(session, findings, verdict, reason, rereviewed)
        snapshot = findings.audit.snapshot
        probe = snapshot is None and began is not None  # git failed at the checkpoint: retry
        return with_findings(self.advance(context, snapshot, probe), findings, session)

    def overridden(self, context: CheckpointContext, findings: Findings) -> FinishResult:
        """Accept, unreviewed, a checkpoint the agent passed `quality_review_override_reason`
        for: the outcome of the self-review it was asked for, or the user's reason to skip it."""
        session, why = context.session, context.override_reason
        assert why is not None
        session.quality_log.append(
            QualityEvent(
                at=self.clock(),
                kind=VerdictKind.OVERRIDE,
                step_ids=list(session.current_step_ids),
                override_reason=why,
            )
        )
        self.events.override(session.session_id, session.current_step_ids, why)
        return self.accept(context, findings, why, override_kind(session))

    def asked_human(self, result: FinishResult, approver: Approver | None) -> bool:
        """True when `result` awaits an approval that `approver` obtained and that is recorded:
        the checkpoint then runs again, and the engine's approval path decides.

        The human's answer is recorded like one from `deepwork approve` (its own channel,
        docs/evidence.md). A headless engine never asks.
        """
        prompt = result.evidence.approval if result.evidence is not None else None
        if self.parking is not None:
            return False  # headless: no form is offered; the run parks (docs/headless.md)
        if prompt is None or approver is None or self.guards.approvals.trusted.required():
            return False  # the server cannot sign: where signatures count, a human signs
        answer = approver(prompt)
        if answer is None:
            return False
        try:
            self.guards.record_elicited(prompt, answer)
        except ApprovalKeyError:
            raise  # the human answered but nothing can be recorded: say so, do not drop it
        except DeepWorkError:
            return False  # the outputs changed meanwhile: the next finished_step reviews again
        return True

    def approval_answer(
        self, context: CheckpointContext, findings: Findings
    ) -> FinishResult | None:
        """The answer while a human approval is open; None when the request is void."""
        session = context.session
        pending = session.pending_approval
        assert pending is not None
        if self.parking is not None and session.parked is not None:
            record = self.guards.approvals.load(session.session_id)
            if record is not None:  # what it asks; no decision is read while parked
                return awaiting(context.stack(), prompt_of(record), findings, parked=True)
        outcome, record = self.guards.approval_outcome(session, findings)
        stack = context.stack()
        if outcome is ApprovalOutcome.WAIT and record is not None:
            return awaiting(stack, prompt_of(record), findings)
        if outcome is ApprovalOutcome.APPROVED and findings.blocked is not None:
            # An approval covers the files shown, never stale or undeclared ones: the request
            # stays open, so once the agent mends them the same decision still holds.
            context.tx.save(session)
            return needs_work(stack, findings, findings.blocked)
        if outcome is ApprovalOutcome.APPROVED and findings.rereview:
            outcome = ApprovalOutcome.VOID  # stale steps are reviewed again, then asked anew
        end, why = ended_by(outcome, record)
        self.guards.close_approval(session, record, end, why)
        if outcome is ApprovalOutcome.APPROVED and record is not None:
            accepted = self.accept(
                context, findings, pending.override_reason, pending.verdict, pending.rereviewed,
                approved=True,
            )  # fmt: skip
            return naming_decision(accepted, record, f"The approval request ended {why}.")
        context.tx.save(session)
        if outcome is ApprovalOutcome.REJECTED and record is not None and record.decision:
            comment = record.decision.comment or "(no comment)"
            ended = f"The approval request ended {end}: {why}"
            said = f"The human requested changes: {comment}. {ended}"
            return naming_decision(needs_work(stack, findings, said), record)
        return None

    def advance(
        self,
        context: CheckpointContext,
        snapshot: RepoSnapshot | None = None,
        probe: bool = False,
    ) -> FinishResult:
        """Record the checkpoint's outputs and begin the next entry, or complete the workflow."""
        tx, session, job = context.tx, context.session, context.job
        fan = self.nesting.fan
        now = self.clock()
        self.note_definition(context, again=False)
        if fan is not None and session.instance_of is not None:
            # its parent fans in
            return fan.complete(tx, job, session, context.outputs, context.notes)
        for step_id in session.current_step_ids:
            record = session.step_progress[step_id]  # made by note_definition
            record.completed_at = now
            record.outputs = context.outputs.by_step.get(step_id, {})
            record.notes = context.notes

        workflow = job.definition.workflows_by_name[session.workflow_name]
        entries = workflow.entries
        next_index = session.current_entry_index + 1
        if next_index < len(entries):
            if fan is not None:
                fan.check(session, job.definition, entries[next_index])
            session.current_entry_index = next_index
            session.current_step_ids = list(entries[next_index])
            for step_id in entries[next_index]:
                session.step_progress[step_id] = StepRecord(step_id=step_id, started_at=now)
            self.guards.begin(session, job.definition, entries[next_index], snapshot, probe=probe)
            tx.save(session)
            self.events.step_begun(session)
            ids = entries[next_index]
            brief = begin_checkpoint(self.nesting, tx, job, session, ids, pushed=True)
            return FinishResult(FinishStatus.NEXT_STEP, context.stack(), brief=brief)

        return self.complete(context, workflow.post_workflow_instructions, now)

    def note_definition(self, context: CheckpointContext, *, again: bool) -> None:
        """Record on each step of the checkpoint the job definition the gate accepted it under,
        for the run's receipt (docs/verify.md); `again`: also over one recorded before."""
        session, now = context.session, self.clock()
        records = [
            session.step_progress.setdefault(step_id, StepRecord(step_id=step_id, started_at=now))
            for step_id in session.current_step_ids
        ]
        if not again and all(record.definition is not None for record in records):
            return
        ran = step_definition(
            self.project_root, context.job, session.workflow_name, session.current_step_ids
        )
        for record in records:
            if again or record.definition is None:
                record.definition = ran

    def complete(
        self, context: CheckpointContext, after: str | None, now: datetime
    ) -> FinishResult:
        """The workflow's last step is done (at `now`): the session completes, and its parent
        (a `sub_workflow` step waiting for it) goes on."""
        tx, session = context.tx, context.session
        session.status = SessionStatus.COMPLETED
        session.completed_at = now
        tx.save(session)
        tx.remove_from_stack(session.session_id)
        settle_declared(tx, session, self.project_root)
        self.events.completed(session)
        parent = waiting_parent(tx, session)
        if parent is not None:
            return self.resume_parent(context, parent, after)
        stack = context.stack()
        resume = (stack[-1].workflow, stack[-1].step) if stack else None
        branch = session.branch_name if session.parent_session_id is None else None
        # HEAD still at the run's start commit: nothing of the run is committed on its branch.
        committed = branch is None or session.start_commit is None
        committed = committed or head_commit(self.project_root) != session.start_commit
        summary = completed_summary(
            session.workflow_label, branch, session.previous_branch, resume, committed
        )
        return FinishResult(
            FinishStatus.WORKFLOW_COMPLETE,
            stack,
            summary=summary,
            all_outputs=produced_outputs(session),
            post_workflow_instructions=after,
            completed=(session.session_id,),
        )

    def resume_parent(
        self, finished: CheckpointContext, parent: Session, after: str | None
    ) -> FinishResult:
        """Complete the parent's `sub_workflow` step with the workflow `finished` ran."""
        job = self.catalog.get(parent.job_name)
        step = job.definition.step(parent.current_step_id)
        outputs = ValidatedOutputs({step.id: handed_up_outputs(step, finished.session)})
        result = self.advance(CheckpointContext.of(finished.tx, parent, job, outputs))
        note = (
            f"Workflow '{finished.session.workflow_label}' completed; step '{step.id}' of "
            f"'{parent.workflow_label}' completed with it."
        )
        if after:
            note += f" Afterwards: {after}"
        done = (finished.session.session_id, *result.completed)
        return replace(result, summary=f"{note} {result.summary or ''}".rstrip(), completed=done)


def produced_outputs(session: Session) -> dict[str, OutputValue]:
    """What a completed workflow made (`all_outputs`): every completed step's outputs, in the
    order the steps completed. When two steps produce an output of the same name, the files of
    both are kept (one list, in order, without repeats: an improved job.yml is one file, the
    instruction files of two steps all of them); a later text output replaces an earlier one."""
    files = {(item.output, item.path) for item in session.evidence}
    merged: dict[str, OutputValue] = {}
    done = [r for r in session.step_progress.values() if r.completed_at is not None]
    for record in sorted(done, key=lambda r: r.completed_at or r.started_at):
        for name, value in record.outputs.items():
            paths = [value] if isinstance(value, str) else list(value)
            earlier = merged.get(name)
            if earlier is None or not all((name, path) in files for path in paths):
                merged[name] = value
                continue
            kept = [earlier] if isinstance(earlier, str) else list(earlier)
            kept += [path for path in paths if path not in kept]
            merged[name] = kept[0] if len(kept) == 1 else kept
    return merged


def awaiting(
    stack: list[StackItem], prompt: ApprovalPrompt, findings: Findings, *, parked: bool = False
) -> FinishResult:
    """The `awaiting_approval` answer: the agent shows the user the command and waits, or, in a
    `parked` headless run, stops at once (docs/headless.md)."""
    if parked:
        feedback = approval_feedback(prompt.session_id, prompt.prompt)
        result = FinishResult(FinishStatus.AWAITING_APPROVAL, stack, feedback=feedback)
        return with_findings(result, findings, approval=prompt)
    feedback = (
        f"This step needs a human's approval: {prompt.prompt} Show the user this command to run "
        f"in a terminal: `{prompt.command}` (to send it back: `{prompt.command} --reject "
        '--comment "..."`). When they have answered, call finished_step again with the same '
        "outputs. You must not approve it yourself, not even by running that command: the "
        "decision is the person's, and the trail records who answered and how."
    )
    if prompt.standing is not None:
        feedback += f" So far {prompt.standing}: each approver runs the command themselves."
    if prompt.expires_at is not None:
        feedback += f" The request expires at {prompt.expires_at.isoformat()}."
    result = FinishResult(FinishStatus.AWAITING_APPROVAL, stack, feedback=feedback)
    return with_findings(result, findings, approval=prompt)


def needs_work(
    stack: list[StackItem],
    findings: Findings,
    feedback: str,
    failed: list[ReviewVerdict] | None = None,
) -> FinishResult:
    result = FinishResult(
        FinishStatus.NEEDS_WORK, stack, feedback=feedback, failed_reviews=failed or []
    )
    return with_findings(result, findings)


def reviewing(stack: list[StackItem], findings: Findings, verdict: GateReviewing) -> FinishResult:
    """The `reviewing` answer: background reviews still run (docs/quality-gate.md)."""
    result = FinishResult(
        FinishStatus.REVIEWING,
        stack,
        feedback=verdict.feedback,
        reviews=list(verdict.reviews),
        price=verdict.price,
    )
    return with_findings(result, findings)


def with_findings(
    result: FinishResult,
    findings: Findings,
    completed: Session | None = None,
    approval: ApprovalPrompt | None = None,
) -> FinishResult:
    """`result` carrying what the audit found, and the evidence summary once `completed`."""
    done = completed is not None and result.status is FinishStatus.WORKFLOW_COMPLETE
    report = EvidenceReport(
        stale_evidence=list(findings.stale),
        undeclared_changes=list(findings.undeclared),
        scope_guard_note=findings.note,
        approval=approval,
        outputs=list(completed.evidence) if done and completed else None,
        approvals=list(completed.approvals) if done and completed else None,
    )
    return replace(result, evidence=report)


def naming_decision(
    result: FinishResult, record: ApprovalRecord, said: str | None = None
) -> FinishResult:
    """`result`, the answer that follows the decision in `record`, naming who decided: the
    record in the evidence's `approvals` (where `workflow_complete` lists every one of the run)
    and `said` (who approved, in a person's words) at the head of the feedback."""
    evidence = result.evidence
    if evidence is None:
        return result
    if evidence.approvals is None:
        evidence = replace(evidence, approvals=[record])
    feedback = result.feedback
    if said is not None:
        feedback = said if feedback is None else f"{said} {feedback}"
    return replace(result, evidence=evidence, feedback=feedback)
