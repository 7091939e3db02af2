"""The engine's evidence checks at each transition (see `docs/evidence.md`).

`Safeguards` is the engine's helper for everything `docs/evidence.md` describes: it notes the
repository when steps begin, audits each checkpoint (output hashes, stale evidence of earlier
steps, undeclared changes), decides when those findings send the agent back, opens and reads
human approvals, and binds the accepted outputs' hashes to their verdict. It changes the session
object it is given; the engine saves it in its transaction.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import Future
from dataclasses import replace
from datetime import datetime
from pathlib import Path

from deepwork_core.base.errors import GitError
from deepwork_core.engine.outputs import ValidatedOutputs
from deepwork_core.engine.safeguards.approvals import ApprovalGuards
from deepwork_core.engine.safeguards.findings import Findings
from deepwork_core.evidence.audit import SNAPSHOT_POOL, Audit, audit_checkpoint
from deepwork_core.evidence.hashes import (
    OutputHash,
    StaleEvidence,
    bind,
    hash_outputs,
    merge,
)
from deepwork_core.evidence.scope import RepoSnapshot, undeclared_feedback, under_git
from deepwork_core.evidence.snapshots import Snapshots
from deepwork_core.evidence.verdicts import VerdictKind
from deepwork_core.evidence.watch import ChangeWatch
from deepwork_core.jobs.model import JobDefinition, ScopeGuard, Step
from deepwork_core.state.approvals.ending import EndState
from deepwork_core.state.approvals.store import ApprovalStore
from deepwork_core.state.event_kinds import (
    StaleEvidenceEvent,
    StepFinishedEvent,
    UndeclaredChangesEvent,
)
from deepwork_core.state.sessions import Session

OFF_OUTSIDE_GIT = (
    "Scope guard off: the project is not in a git work tree, so files changed outside the "
    "declared outputs are not checked."
)


class Safeguards(ApprovalGuards):
    """Evidence, scope guard and approvals for the sessions of one project."""

    def __init__(
        self,
        project_root: Path,
        clock: Callable[[], datetime],
        approvals: ApprovalStore,
        watch: ChangeWatch | None = None,
    ) -> None:
        super().__init__(project_root, clock, approvals)
        #: The project's change watch, when the server keeps one (saves `git status` calls).
        self.watch = watch
        self.snapshots = Snapshots(project_root, watch)

    # --- steps begin ---------------------------------------------------------------------------

    def prefetch(self, job: JobDefinition) -> RepoSnapshot | Future[RepoSnapshot | None] | None:
        """The snapshot of a workflow's first step: from the watch at once, else started early
        so git runs while the engine prepares the step (pass the result to `begin`)."""
        if job.scope_guard is ScopeGuard.OFF or not under_git(self.project_root):
            return None  # outside git the snapshot is None at once: `begin` needs no thread
        return self.snapshots.derived() or SNAPSHOT_POOL.submit(self.snapshots.take)

    def begin(
        self,
        session: Session,
        job: JobDefinition,
        step_ids: Sequence[str],
        snapshot: RepoSnapshot | Future[RepoSnapshot | None] | None = None,
        *,
        probe: bool = True,
    ) -> str | None:
        """Note the repository for the steps beginning now; return the note to show, once."""
        if job.scope_guard is ScopeGuard.OFF:
            return None
        note: str | None = None
        taken: RepoSnapshot | None = snapshot if isinstance(snapshot, RepoSnapshot) else None
        if isinstance(snapshot, Future) or (snapshot is None and probe):
            try:
                taken = snapshot.result() if isinstance(snapshot, Future) else self.snapshots.take()
            except GitError as exc:
                note = f"Scope guard off for this step: {exc.code}: {exc.message}"
            else:
                note = OFF_OUTSIDE_GIT if taken is None else None
        for step_id in step_ids:
            record = session.step_progress.get(step_id)
            if record is not None:
                record.began = taken
        if note is None or session.scope_guard_noted:
            return None
        session.scope_guard_noted = True
        return note

    def begin_nested(
        self,
        child: Session,
        job: JobDefinition,
        step_ids: tuple[str, ...],
        baseline: RepoSnapshot | None,
    ) -> None:
        """A nested workflow begins at the same moment as the step that starts it: its first
        steps share that step's baseline (a snapshot of their own only when it has none)."""
        self.begin(child, job, step_ids, baseline)

    def rewound(
        self,
        session: Session,
        job: JobDefinition,
        step_ids: Sequence[str],
        entry_index: int,
        baseline: RepoSnapshot | None,
    ) -> None:
        """`go_to_step` began entry `entry_index` again: drop an approval request of an entry that
        is no longer done, and keep `baseline`, the repository as the step left began, so what
        changed since is still unacknowledged (a new snapshot only when there was none)."""
        pending = session.pending_approval
        if pending is not None and pending.entry_index >= entry_index:
            why = f"the run moved back to step {', '.join(step_ids)} (go_to_step)"
            self.close_approval(session, None, EndState.CANCELLED, why)
        session.stale_reported = []
        self.begin(session, job, step_ids, baseline)

    # --- a checkpoint --------------------------------------------------------------------------

    def inspect(
        self,
        session: Session,
        job: JobDefinition,
        steps: Sequence[Step],
        validated: ValidatedOutputs,
        override_reason: str | None,
        *,
        final: bool,
        reviewable: bool,
        judged: list[str] | None = None,
        extra: Sequence[str] = (),
    ) -> Findings:
        """Audit the checkpoint and decide whether its findings alone send the agent back.

        `judged`: the undeclared changes, when they were judged elsewhere than in the project's
        tree (an instance's worktree, docs/fan-out.md); `extra`: undeclared changes found
        beside the project's tree (files written in worktrees after their instances passed)."""
        step_ids = [step.id for step in steps]
        began = session.step_progress[step_ids[0]].began
        guard = job.scope_guard is not ScopeGuard.OFF and began is not None
        earlier = [item for item in session.evidence if item.step_id not in step_ids]
        may_change = [glob for step in steps for glob in step.may_change]
        audit = audit_checkpoint(
            self.project_root, validated.by_step, earlier, began,
            may_change=may_change, guard=guard, watch=self.watch,
        )  # fmt: skip
        if judged is not None or extra:
            found = audit.undeclared if judged is None else judged
            audit = replace(audit, undeclared=[*found, *extra])
        note = None
        if guard and audit.guard_note is not None and not session.scope_guard_noted:
            session.scope_guard_noted = True
            note = f"Scope guard off for this checkpoint: {audit.guard_note}"
        strict = job.scope_guard is ScopeGuard.STRICT
        self._log_findings(session.session_id, step_ids, audit, strict)
        blocked: str | None = None
        rereview: tuple[str, ...] = ()
        if audit.undeclared and strict and override_reason is None:
            of = session.instance_of
            shared = of is not None and of.worktree is None
            blocked = undeclared_feedback(audit.undeclared, shared_instance=shared)
        elif final and audit.stale and override_reason is None:
            resubmitted = _submitted_paths(validated)
            blocked, rereview = self._stale_at_the_end(
                session, job, audit.stale, reviewable, resubmitted
            )
        return Findings(audit, note, rereview, blocked)

    def _stale_at_the_end(
        self,
        session: Session,
        job: JobDefinition,
        stale: list[StaleEvidence],
        reviewable: bool,
        resubmitted: frozenset[str] = frozenset(),
    ) -> tuple[str | None, tuple[str, ...]]:
        """Send the agent back once to learn of the changed files, then review them again.

        Files this checkpoint submits as its own outputs are ones the agent knowingly changed:
        their earlier reviews run again at once, without the round trip.
        """
        steps = sorted({item.step_id for item in stale})
        paths = sorted(item.path for item in stale)
        changed = (
            f"Output files changed after their step was accepted: {', '.join(paths)} "
            f"(step {', '.join(steps)})."
        )
        unreviewed = [s for s in steps if not reviewable or not _has_reviews(job, s)]
        if unreviewed:
            return (
                f"{changed} Step {', '.join(unreviewed)} has no review to run again: pass "
                "quality_review_override_reason saying why the change is fine, or undo it.",
                (),
            )
        if paths != session.stale_reported and not set(paths) <= resubmitted:
            session.stale_reported = paths
            return (
                f"{changed} Call finished_step again with this step's outputs: the reviews of "
                f"step {', '.join(steps)} then run on the new content together with this "
                "step's. Or pass quality_review_override_reason to accept the change unreviewed.",
                (),
            )
        return None, tuple(steps)

    def _log_findings(
        self, session_id: str, step_ids: list[str], audit: Audit, strict: bool
    ) -> None:
        if audit.undeclared:
            self._write(
                UndeclaredChangesEvent(
                    ts=self.clock(),
                    session_id=session_id,
                    step_ids=step_ids,
                    files=list(audit.undeclared),
                    strict=strict,
                )
            )
        if audit.stale:
            self._write(
                StaleEvidenceEvent(
                    ts=self.clock(),
                    session_id=session_id,
                    step_ids=step_ids,
                    stale=list(audit.stale),
                )
            )

    # --- accepting a checkpoint ----------------------------------------------------------------

    def accept(
        self,
        session: Session,
        findings: Findings,
        verdict: VerdictKind,
        override_reason: str | None = None,
        rereviewed: Sequence[str] = (),
    ) -> None:
        """Bind the checkpoint's files (and the re-reviewed or acknowledged ones) to `verdict`."""
        step_ids = list(session.current_step_ids)
        now = self.clock()
        new = bind(findings.audit.hashes, verdict, now, override_reason)
        if rereviewed:
            outputs = {step: session.step_progress[step].outputs for step in rereviewed}
            new += bind(hash_outputs(self.project_root, outputs), verdict, now, override_reason)
        elif override_reason is not None:  # the agent acknowledged the stale files it was shown
            acknowledged = [_hashed_now(item) for item in findings.stale]
            new += bind(acknowledged, VerdictKind.OVERRIDE, now, override_reason)
        session.evidence = merge(session.evidence, new, steps=[*step_ids, *rereviewed])
        session.stale_reported = []
        self._write(
            StepFinishedEvent(
                ts=self.clock(),
                session_id=session.session_id,
                step_ids=step_ids,
                verdict=verdict,
                evidence=new,
            )
        )


def _has_reviews(job: JobDefinition, step_id: str) -> bool:
    step = job.steps_by_id.get(step_id)
    return step is not None and bool(step.reviews)


def _hashed_now(item: StaleEvidence) -> OutputHash:
    """A stale file as it is now: what an override that acknowledges it binds."""
    return OutputHash(
        output=item.output, step_id=item.step_id, path=item.path, sha256=item.new_sha256
    )


def override_kind(session: Session) -> VerdictKind:
    """`self_review` when the agent was given a self-review file for this checkpoint."""
    record = session.step_progress[session.current_step_id]
    reviewed = any(
        event.kind is VerdictKind.SELF_REVIEW
        and event.step_ids == session.current_step_ids
        and event.at >= record.started_at
        for event in session.quality_log
    )
    return VerdictKind.SELF_REVIEW if reviewed else VerdictKind.OVERRIDE


def join_notes(*notes: str | None) -> str | None:
    """The notes that are set, as one text (the branch note and the scope guard's)."""
    return " ".join(note for note in notes if note) or None


def _submitted_paths(validated: ValidatedOutputs) -> frozenset[str]:
    """Every path among the checkpoint's submitted outputs."""
    return frozenset(
        path
        for outputs in validated.by_step.values()
        for value in outputs.values()
        for path in ([value] if isinstance(value, str) else value)
    )
