"""Workflow transitions: start, finish a checkpoint, abort (`docs/quality-gate.md`).

The engine is synchronous and knows nothing of MCP. Every transition is one transaction of the
`SessionStore` (one atomic write of the session, plus one of the stack when it changes).
`finish()` hands the session it names (`Target`) and a frozen `Submission` to the finish
pipeline (`deepwork_core.engine.finishing.finish`: validate → evidence and scope → decide →
record), where the quality gate decides; `dry_run()` asks `engine.finishing.dry_run` instead.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace
from datetime import datetime
from pathlib import Path

from deepwork_core.base.config import DEFAULT_MAX_QUALITY_ATTEMPTS, OutputsConfig
from deepwork_core.base.error_codes import ErrorCode
from deepwork_core.base.errors import WorkflowNotFoundError
from deepwork_core.base.git import user_email
from deepwork_core.base.identifiers import SessionId, check_agent_id, check_text
from deepwork_core.engine.approver import Approver
from deepwork_core.engine.branching import BranchOutcome, abandoned_note, undo_switch
from deepwork_core.engine.briefing import InstructionReader
from deepwork_core.engine.fanout.instances import FanOutRunner
from deepwork_core.engine.finishing.dry_run import dry_run
from deepwork_core.engine.finishing.finish import FinishPipeline, Submission
from deepwork_core.engine.headless.parking import Parking
from deepwork_core.engine.nesting import Nesting, begin_checkpoint
from deepwork_core.engine.outcomes import Outcomes
from deepwork_core.engine.results import AbortResult, EvidenceReport, FinishResult, StartResult
from deepwork_core.engine.safeguards.evidence import Safeguards, join_notes
from deepwork_core.engine.start_inputs import check_start_inputs
from deepwork_core.evidence.scope import head_commit, under_git
from deepwork_core.evidence.watch import ChangeWatch
from deepwork_core.gate.checkpoint import ProgressReporter
from deepwork_core.gate.gates import Gate
from deepwork_core.gate.review_queue import cancel_reviews
from deepwork_core.jobs.discovery import Catalog, JobCatalog, LoadedJob
from deepwork_core.jobs.lookup import select_workflow
from deepwork_core.jobs.model import JobDefinition, Workflow
from deepwork_core.receipts.keys import GateKey
from deepwork_core.receipts.writer import ReceiptWriter, commit_advice
from deepwork_core.state.approvals.ending import EndState
from deepwork_core.state.approvals.policy import RunAuthor
from deepwork_core.state.approvals.seal import ApprovalKey
from deepwork_core.state.approvals.signatures import TrustedApprovers
from deepwork_core.state.approvals.store import ApprovalStore
from deepwork_core.state.session_events import SessionEvents
from deepwork_core.state.sessions import (
    OutputValue,
    Session,
    SessionStatus,
    SessionStore,
    StepRecord,
    new_session_id,
    utc_now,
)
from deepwork_core.state.stacks import (
    StackItem,
    Target,
    settle_declared,
    stack_item,
    stack_items,
    target_session,
)

#: `(job_name, label) -> BranchOutcome`: switches to the workflow's branch.
BranchMaker = Callable[[str, str], BranchOutcome]


class WorkflowEngine:
    """Runs workflows of one project over a `JobCatalog` and a `SessionStore`. Thread-safe.

    `approval_key` seals and verifies human approvals (docs/security.md); the command line and
    the server pass the project's key. Without it a step that needs approval waits for good.
    `approvers` are the human approvers whose signatures count (by default the project's
    `.deepwork/approvers/`, with signatures required only once it trusts a key).
    `watch`, a started `ChangeWatch` of the project, lets the scope guard skip `git status`.
    `headless`: no person attends the runs of this engine, so where one would wait for a person
    the run parks instead (`deepwork_core.engine.headless.parking`, docs/headless.md).
    `receipt_key`, the machine's gate key, signs the receipt each completed run leaves in the
    project (docs/verify.md); without it no receipt is written.
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
        approvers: TrustedApprovers | None = None,
        max_instances: int | None = None,
        watch: ChangeWatch | None = None,
        headless: bool = False,
        receipt_key: GateKey | None = None,
        author_approver: str | None = None,
    ) -> None:
        self.project_root = project_root
        #: The local approver of the user this engine runs as (a run's author, docs/team.md).
        self.author_approver = author_approver
        self.catalog = catalog
        self.store = store
        self.gate = gate
        self.max_quality_attempts = max_quality_attempts
        self.branch_maker = branch_maker
        self.clock = clock
        self.output_limits = OutputsConfig() if output_limits is None else output_limits
        self.instructions = InstructionReader(project_root, reviews_run=gate is not None)
        self.events = SessionEvents(store.store, clock)
        approvals = ApprovalStore(store.store, project_root, approval_key, trusted=approvers)
        self.guards = Safeguards(project_root, clock, approvals, watch)
        self.fan = FanOutRunner(project_root, clock, self.events, self.guards, max_instances)
        nested = (catalog, self.instructions, self.events.started, clock, self.guards.begin_nested)
        self.nesting = Nesting(*nested, self.fan)
        machine = store.store.project.machine
        parking = Parking(store.store, clock, machine) if headless else None
        self.outcomes = Outcomes(
            project_root, catalog, self.guards, self.events, self.nesting, gate, clock, parking
        )
        self.pipeline = FinishPipeline(
            project_root, catalog, store, gate, max_quality_attempts, self.output_limits,
            self.events, self.outcomes, clock, self.fan,
        )  # fmt: skip
        self.receipts = (
            ReceiptWriter(project_root, catalog, store, receipt_key) if receipt_key else None
        )
        if gate is not None:  # resumes the review jobs a stopped server left in this project
            gate.start(project_root, store.store, lambda name: catalog.get(name).definition)

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
        job, workflow, given = self._start_inputs(job_name, workflow_name, inputs)
        outcome = BranchOutcome(branch_name=None)
        if agent_id is None and self.branch_maker is not None and self._main_stack_empty():
            outcome = self.branch_maker(job.name, instance_id or workflow.name)
        try:
            result = self._begin(goal, job, workflow, given, outcome, instance_id, agent_id)
        except BaseException:
            undo_switch(self.project_root, outcome)  # nothing was written: HEAD goes back too
            raise
        if result.stack and len(result.stack) == 1:
            self.store.prune()
        return result

    def _begin(
        self,
        goal: str,
        job: LoadedJob,
        workflow: Workflow,
        given: dict[str, OutputValue],
        outcome: BranchOutcome,
        instance_id: str | None,
        agent_id: str | None,
    ) -> StartResult:
        """The new session of `start`, on the branch `outcome` put HEAD on."""
        entries = workflow.entries
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
                author=self._author(job.definition, parent),
            )
            guard_note = self.guards.begin(session, job.definition, entries[0], snapshot)
            session.start_commit = self._start_commit(session, parent)
            brief = begin_checkpoint(self.nesting, tx, job, session, entries[0])
            stack = stack_items(tx, agent_id)
        return StartResult(brief, stack, branch_name, join_notes(branch_note, guard_note))

    # --- finish ------------------------------------------------------------------------------

    def finish(
        self,
        outputs: Mapping[str, object],
        *,
        notes: str | None = None,
        override_reason: str | None = None,
        session_id: SessionId | None = None,
        progress: ProgressReporter | None = None,
        agent_id: str | None = None,
        work_summary: str | None = None,
        approver: Approver | None = None,
    ) -> FinishResult:
        """Check the current checkpoint's outputs, run the quality gate, then advance: the
        pipeline of `deepwork_core.engine.finishing.finish`."""
        submission = Submission(outputs, notes, override_reason, work_summary)
        target = Target(session_id, agent_id)
        return self._with_receipts(self.pipeline.run(target, submission, progress, approver))

    def dry_run(
        self,
        outputs: Mapping[str, object],
        *,
        notes: str | None = None,
        session_id: SessionId | None = None,
        agent_id: str | None = None,
        work_summary: str | None = None,
    ) -> FinishResult:
        """What `finish` would check and review; nothing is written (docs/quality-gate.md)."""
        submission = Submission(outputs, notes, None, work_summary)
        target = Target(session_id, agent_id)
        return dry_run(self.pipeline, target, submission)

    # --- abort -------------------------------------------------------------------------------

    def abort(
        self, explanation: str, session_id: SessionId | None = None, agent_id: str | None = None
    ) -> AbortResult:
        """Abort a workflow (the top one unless `session_id` names another) and pop it."""
        check_text(explanation, what="explanation")
        target = Target(session_id, agent_id)
        with self.store.transaction() as tx:
            session = target_session(tx, target)
            if session.pending_approval is not None:
                why = f"the run was aborted: {explanation}"  # nobody can approve it now
                self.guards.close_approval(session, None, EndState.CANCELLED, why)
            session.status = SessionStatus.ABORTED
            session.abort_reason = explanation
            session.completed_at = self.clock()
            tx.save(session)
            tx.remove_from_stack(session.session_id)
            settle_declared(tx, session, self.project_root)
            self.fan.aborted(tx, session, explanation)
            self.events.aborted(session, explanation)
            stack = stack_items(tx, session.agent_id)
        self.cancel_reviews(session)
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

    def cancel_reviews(self, session: Session) -> None:
        """Cancel the review jobs of `session` and of its fanned-out instances, and stop the
        reviewers running them: an aborted or rewound run pays for no review after."""
        ids = [session.session_id]
        if session.fan_out is not None:
            ids += [instance.session_id for instance in session.fan_out.instances]
        if self.gate is not None:
            self.gate.cancel(self.project_root, self.store.store, ids)
        else:
            cancel_reviews(self.store.store, ids)

    # --- internals ---------------------------------------------------------------------------

    def _start_inputs(
        self, job_name: str, workflow_name: str, inputs: Mapping[str, object] | None
    ) -> tuple[LoadedJob, Workflow, dict[str, OutputValue]]:
        """The job and workflow a start names, with its checked inputs; a workflow without
        steps cannot start."""
        job = self.catalog.get(job_name)
        workflow = select_workflow(job, workflow_name)
        given = check_start_inputs(
            self.project_root, job.definition, workflow, inputs,
            enforce_required=job.parsed.format == "0.10",
        )  # fmt: skip
        if not workflow.entries:
            raise WorkflowNotFoundError(
                f"workflow {workflow.name!r} of job {job.name!r} has no steps",
                code=ErrorCode.WORKFLOW_EMPTY,
            )
        return job, workflow, given

    def _with_receipts(self, result: FinishResult) -> FinishResult:
        """`result` with the receipt of each run it completed written, and the answer telling
        the agent to commit them (written after the transactions that completed the runs)."""
        if not result.completed or self.receipts is None:
            return result
        notes = [self.receipts.write(session_id) for session_id in result.completed]
        evidence = result.evidence or EvidenceReport(stale_evidence=[], undeclared_changes=[])
        advice = commit_advice(notes)
        summary = " ".join(part for part in (result.summary, advice) if part) or None
        return replace(result, evidence=replace(evidence, receipts=notes), summary=summary)

    def _start_commit(self, session: Session, parent: Session | None) -> str | None:
        """The commit the run starts from (docs/verify.md): the one the scope guard noted for
        its first step, else the parent's, else HEAD (one git call, only without the guard)."""
        began = session.step_progress[session.current_step_ids[0]].began
        if began is not None:
            return began.head
        if parent is not None:
            return parent.start_commit
        return head_commit(self.project_root) if under_git(self.project_root) else None

    def _author(self, job: JobDefinition, parent: Session | None) -> RunAuthor | None:
        """Who starts the run, recorded only for a job with a `not_by_author` approval (a
        nested run keeps its parent's author)."""
        if parent is not None:
            return parent.author
        if not any(s.approval is not None and s.approval.not_by_author for s in job.steps):
            return None
        return RunAuthor(approver=self.author_approver, email=user_email(self.project_root))

    def _main_stack_empty(self) -> bool:
        """No workflow on the main stack (the lock is taken only when the stack file exists)."""
        if not self.store.stack_path.exists():
            return True
        with self.store.transaction() as tx:
            return not tx.stack_ids(None)
