"""`finished_step`: one pipeline over a frozen submission (docs/quality-gate.md, docs/runtime.md).

    validate → evidence and scope → decide → record

`FinishPipeline.run` takes the session a call names (`Target`) and what it submits (`Submission`):

1. **validate** (under the state lock): the session's checkpoint and the outputs, which make the
   `CheckpointContext` every later stage and `Outcomes` share;
2. **evidence and scope**: the audit (stale evidence, the scope guard) and an open approval may
   answer at once (`Outcomes.audit_first`); a checkpoint no review applies to, or an override,
   is accepted there and then;
3. **decide** (lock released, so a slow reviewer blocks nobody): the gate
   (`deepwork_core.gate.gates`) answers one tagged verdict: passed, needs work, self-review,
   or reviewing while background reviews still run;
4. **record** (under the lock, only if the session has not moved on, else `session.changed`):
   the verdict goes to the quality log and the event log, and the answer is the next step,
   `needs_work`, `reviewing`, `awaiting_approval` or `workflow_complete`. An attempt is counted
   here, when a reviewer's verdict or error is recorded; `reviewing` records nothing.

A dry run (`deepwork_core.engine.finishing.dry_run`) stops after planning the reviews and writes
nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from pathlib import Path
from types import MappingProxyType
from typing import Final

from deepwork_core.base.config import OutputsConfig
from deepwork_core.base.error_codes import ErrorCode
from deepwork_core.base.errors import OutputsError, QualityGateError, SessionError
from deepwork_core.base.identifiers import check_text
from deepwork_core.engine.approver import Approver
from deepwork_core.engine.briefing import reviewer_inputs
from deepwork_core.engine.checkpoints import (
    UNCOUNTED,
    count_attempt,
    current_checkpoint,
    next_attempt,
)
from deepwork_core.engine.fanout.fan_in import complete_fan_in
from deepwork_core.engine.fanout.instances import FanOutRunner
from deepwork_core.engine.headless.parking import still_parked, stop_note
from deepwork_core.engine.outcomes import CheckpointContext, Outcomes, needs_work, reviewing
from deepwork_core.engine.outputs import ValidatedOutputs, validate_outputs
from deepwork_core.engine.results import FinishResult
from deepwork_core.engine.safeguards.findings import Findings
from deepwork_core.evidence.verdicts import GATE_OFF_REASON, ReviewVerdict, VerdictKind
from deepwork_core.gate.checkpoint import (
    Checkpoint,
    GateNeedsWork,
    GatePassed,
    GateReviewing,
    GateSelfReviewRequested,
    GateVerdict,
    ProgressReporter,
    has_own_reviews,
)
from deepwork_core.gate.gates import Gate, reused_note
from deepwork_core.jobs.discovery import JobCatalog
from deepwork_core.jobs.model import Step
from deepwork_core.state.session_events import SessionEvents
from deepwork_core.state.sessions import (
    ParkReason,
    QualityEvent,
    Session,
    SessionStore,
    StateTransaction,
)
from deepwork_core.state.stacks import Target, same_checkpoint, stack_items, target_session
from deepwork_core.state.usage.totals import run_id_of


@dataclass(frozen=True, slots=True)
class Submission:
    """What one `finished_step` call submits, checked once and never changed (the session it
    names is its `Target`, `deepwork_core.state.stacks`)."""

    #: A read-only copy of the outputs as the agent sent them.
    outputs: Mapping[str, object]
    notes: str | None = None
    override_reason: str | None = None
    work_summary: str | None = None

    def __post_init__(self) -> None:
        """Reject malformed arguments before any state is touched."""
        if not isinstance(self.outputs, Mapping):
            raise OutputsError(
                "outputs must be an object mapping output names to paths",
                code=ErrorCode.OUTPUTS_WRONG_TYPE,
            )
        why = self.override_reason
        if why is not None and not why.strip():
            raise QualityGateError(
                "quality_review_override_reason is empty; explain why the review is not needed "
                "or leave it out",
                code=ErrorCode.QUALITY_GATE_OVERRIDE_REASON_EMPTY,
            )
        check_text(self.notes, what="notes")
        check_text(why, what="quality_review_override_reason")
        check_text(self.work_summary, what="work_summary")
        object.__setattr__(self, "outputs", MappingProxyType(dict(self.outputs)))


@dataclass(frozen=True, slots=True)
class _Pending:
    """A checkpoint handed to the gate: its context, what the audit found, what the gate sees,
    and the entry the session stood at (its verdict is recorded only while it still does)."""

    context: CheckpointContext
    findings: Findings
    checkpoint: Checkpoint
    entry_index: int


@dataclass(frozen=True, slots=True)
class FinishPipeline:
    """The finish transitions of one project (the engine's `finish` and dry run)."""

    project_root: Path
    catalog: JobCatalog
    store: SessionStore
    gate: Gate | None
    max_attempts: int
    output_limits: OutputsConfig
    events: SessionEvents
    outcomes: Outcomes
    clock: Callable[[], datetime]
    #: The fan-outs of `for_each` steps (docs/fan-out.md); None: no step fans out.
    fan: FanOutRunner | None = None

    def run(
        self,
        target: Target,
        submission: Submission,
        progress: ProgressReporter | None = None,
        approver: Approver | None = None,
    ) -> FinishResult:
        """Run the pipeline; a step that needs approval asks `approver` (lock released) and,
        once answered, runs it again at once."""
        result = self._once(target, submission, progress)
        if self.outcomes.asked_human(result, approver):
            result = self._once(target, submission, progress)
        return result

    def _once(
        self, target: Target, submission: Submission, progress: ProgressReporter | None
    ) -> FinishResult:
        with self.store.transaction() as tx:
            pending = self._validate_and_audit(tx, target, submission)
            if isinstance(pending, FinishResult):
                return pending
            assert self.gate is not None
            # No review applies, and the gate knew it without running anything: recorded now.
            settled = self.gate.settled(pending.checkpoint)
            if settled is not None:
                result = self._recorded(tx, pending, settled)
        verdict: GateVerdict
        if settled is None:
            verdict = self._decide(pending, progress)
            result = self._record(pending, verdict)
        else:
            verdict = settled
        note = reused_note(verdict.reviews).strip() if isinstance(verdict, GatePassed) else ""
        if note:  # an accepted step's answer says which verdicts were reused, and from where
            result = replace(
                result, feedback=f"{result.feedback} {note}".strip() if result.feedback else note
            )
        return replace(result, warnings=list(verdict.warnings)) if verdict.warnings else result

    def _validate_and_audit(
        self, tx: StateTransaction, target: Target, sub: Submission
    ) -> FinishResult | _Pending:
        """Steps 1 and 2: validate, audit; accept at once when no review is due."""
        session = target_session(tx, target)
        self._check_parked(session)
        job, steps = current_checkpoint(self.catalog, session)
        if self.fan is not None and self.fan.mend(tx, job, session):  # a fan-out's parent
            return complete_fan_in(
                self.fan, self.outcomes, tx, job, session, sub.notes, sub.override_reason
            )
        validated = self.validated(session, steps, sub)
        self.events.outputs_submitted(
            session.session_id, session.current_step_ids, validated.merged, sub.notes
        )
        said = (sub.notes, sub.override_reason, sub.work_summary)
        context = CheckpointContext(tx, session, job, tuple(steps), validated, *said)
        answered, findings = self.outcomes.audit_first(context)
        if answered is not None:
            return answered
        gate = self.gate
        if gate is None and sub.override_reason is None and has_own_reviews(steps):
            return self.outcomes.accept(context, findings, GATE_OFF_REASON)
        if gate is None or not (gate.consulted_for(steps) or findings.rereview):
            return self.outcomes.accept(context, findings, sub.override_reason)
        if sub.override_reason is not None:
            return self.outcomes.overridden(context, findings)
        # Counted when its verdict is recorded: a call answered `reviewing` is no attempt.
        attempt = next_attempt(session) if gate.external else 0
        again = [job.definition.step(step_id) for step_id in findings.rereview]
        reviewed_outputs = dict(validated.merged)  # plus those of stale steps, reviewed again
        for step_id in findings.rereview:
            reviewed_outputs.update(session.step_progress[step_id].outputs)
        checkpoint = Checkpoint(
            project_root=self.project_root,
            store=self.store.store,
            session_id=session.session_id,
            job=job.definition,
            step_ids=(*session.current_step_ids, *findings.rereview),
            outputs=reviewed_outputs,
            input_files=reviewer_inputs(session, [*steps, *again], job.definition),
            notes=sub.notes,
            attempt=attempt,
            work_summary=sub.work_summary,
            undeclared_changes=tuple(findings.undeclared),
            run_id=run_id_of(session, tx.load),
            log_length=len(session.quality_log),
            watch=self.outcomes.guards.watch,
        )
        return _Pending(context, findings, checkpoint, session.current_entry_index)

    def _check_parked(self, session: Session) -> None:
        """A headless server answers a parked run's checkpoint as parked (an approval's below,
        with what it asks); an attended one clears the mark: a person is there now."""
        if session.parked is None:
            return
        if self.outcomes.parking is None:
            session.parked = None
        elif session.pending_approval is None:
            raise still_parked(session)

    def _park(
        self, session: Session, reason: ParkReason, exc: QualityGateError
    ) -> QualityGateError | None:
        """On a headless server, park `session` for `reason` (the caller saves it): the error
        the agent gets then tells it to stop. None on an attended server."""
        parking = self.outcomes.parking
        if parking is None:
            return None
        parking.park(session, reason, feedback=exc.message)
        note = stop_note(session.session_id)
        return QualityGateError(f"{exc.message} {note}", code=exc.code)

    def validated(
        self, session: Session, steps: Sequence[Step], sub: Submission
    ) -> ValidatedOutputs:
        """The submitted outputs, valid for the checkpoint's steps (an instance's as the
        project's paths)."""
        outputs, of = sub.outputs, session.instance_of
        if self.fan is not None and of is not None:
            outputs = self.fan.submitted(session, outputs, steps)  # its worktree's paths
        worktree = of.worktree if self.fan is not None and of is not None else None
        return validate_outputs(
            self.project_root, steps, outputs, self.output_limits, paths_from=worktree
        )

    def _decide(self, pending: _Pending, progress: ProgressReporter | None) -> GateVerdict:
        """Step 3: the gate's verdict; a gate error is logged on the session, then raised."""
        assert self.gate is not None
        checkpoint = pending.checkpoint
        try:
            return self.gate.evaluate(checkpoint, progress)
        except QualityGateError as exc:
            with self.store.transaction() as tx:
                session = _unrecorded(tx, pending)
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
                parked = None
                reason = PARKING_CODES.get(exc.code)
                if reason is not None:
                    parked = self._park(session, reason, exc)
                tx.save(session)
            if parked is not None:
                raise parked from None
            raise

    def _record(self, pending: _Pending, verdict: GateVerdict) -> FinishResult:
        """Step 4: log the verdict; advance on a pass, else answer `needs_work` (or hit the
        cap); `reviewing` records nothing."""
        with self.store.transaction() as tx:
            return self._recorded(tx, pending, verdict)

    def _recorded(
        self, tx: StateTransaction, pending: _Pending, verdict: GateVerdict
    ) -> FinishResult:
        checkpoint, findings = pending.checkpoint, pending.findings
        session = _unrecorded(tx, pending)
        if isinstance(verdict, GateReviewing):
            return reviewing(stack_items(tx, session.agent_id), findings, verdict)
        if checkpoint.attempt and not isinstance(verdict, GateSelfReviewRequested):
            count_attempt(session, self.clock())
        session.quality_log.append(quality_event(verdict, checkpoint, self.clock()))
        if not isinstance(verdict, GateSelfReviewRequested):
            self.events.verdicts(session.session_id, verdict.reviews, checkpoint.attempt)
        if isinstance(verdict, GatePassed):
            context = pending.context.reopened(tx, session)
            return self.outcomes.accept(
                context, findings, verdict=verdict.kind, rereviewed=findings.rereview
            )
        exhausted = None
        if isinstance(verdict, GateNeedsWork) and checkpoint.attempt >= self.max_attempts:
            exhausted = QualityGateError(
                f"Quality gate failed after {checkpoint.attempt} attempts. Feedback: "
                f"{verdict.feedback}. Stop and show this feedback to the user; pass "
                "quality_review_override_reason only if the user tells you to accept the "
                "outputs as they are.",
                code=ErrorCode.QUALITY_GATE_MAX_ATTEMPTS,
            )
            parked = self._park(session, ParkReason.ATTEMPTS_EXHAUSTED, exhausted)
            exhausted = parked or exhausted
        tx.save(session)
        failed: list[ReviewVerdict] = []
        if isinstance(verdict, GateNeedsWork):
            failed = [review for review in verdict.reviews if not review.passed]
        self.events.needs_work(
            session.session_id, checkpoint.step_ids, checkpoint.attempt, len(failed)
        )
        if exhausted is not None:
            raise exhausted
        return needs_work(stack_items(tx, session.agent_id), findings, verdict.feedback, failed)

    # --- dry run (docs/quality-gate.md, "Dry run") ---------------------------------------------


#: The gate errors that park a headless run, and why (docs/headless.md): nothing a new attempt
#: of the agent does can get past them; a person must act first.
PARKING_CODES: Final = {
    ErrorCode.QUALITY_GATE_BUDGET_EXHAUSTED: ParkReason.BUDGET_EXHAUSTED,
    ErrorCode.QUALITY_GATE_NOT_INSTALLED: ParkReason.REVIEWER_MISSING,
}


def _unrecorded(tx: StateTransaction, pending: _Pending) -> Session:
    """The session, still at the checkpoint and with nothing recorded since the submission
    (else `session.changed`: another call recorded its outcome, so this one is not recorded
    twice)."""
    checkpoint = pending.checkpoint
    session = same_checkpoint(tx, checkpoint.session_id, pending.entry_index)
    if len(session.quality_log) != checkpoint.log_length:
        raise SessionError(
            "another finished_step call recorded a review of this checkpoint meanwhile; call "
            "get_active_workflow to see where the workflow stands",
            code=ErrorCode.SESSION_CHANGED,
        )
    return session


def quality_event(verdict: GateVerdict, checkpoint: Checkpoint, at: datetime) -> QualityEvent:
    """The session log entry of one gate verdict."""
    if isinstance(verdict, GateSelfReviewRequested):
        return QualityEvent(
            at=at,
            kind=VerdictKind.SELF_REVIEW,
            step_ids=list(checkpoint.step_ids),
            attempt=checkpoint.attempt or None,
            feedback=verdict.feedback,
            review_file=verdict.review_file,
        )
    return QualityEvent(
        at=at,
        kind=verdict.kind if isinstance(verdict, GatePassed) else VerdictKind.REVIEWER,
        step_ids=list(checkpoint.step_ids),
        attempt=checkpoint.attempt or None,
        passed=isinstance(verdict, GatePassed),
        feedback=verdict.feedback,
        reviews=list(verdict.reviews),
    )
