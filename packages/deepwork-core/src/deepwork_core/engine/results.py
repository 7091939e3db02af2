"""What the engine's transitions return: the core side of the workflow tools' responses."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from deepwork_core.base.identifiers import SessionId
from deepwork_core.engine.briefing import StepBrief
from deepwork_core.evidence.hashes import OutputEvidence, ShownOutput, StaleEvidence
from deepwork_core.evidence.verdicts import ReviewVerdict
from deepwork_core.gate.checkpoint import ReviewProgress
from deepwork_core.gate.costs.quotes import ReviewPrice, TaskPrice
from deepwork_core.receipts.writer import ReceiptNote
from deepwork_core.state.approvals.models import ApprovalRecord
from deepwork_core.state.sessions import OutputValue
from deepwork_core.state.stacks import StackItem


class FinishStatus(StrEnum):
    NEEDS_WORK = "needs_work"
    NEXT_STEP = "next_step"
    WORKFLOW_COMPLETE = "workflow_complete"
    AWAITING_APPROVAL = "awaiting_approval"
    DRY_RUN = "dry_run"
    #: Background reviews still run: call finished_step again with the same outputs.
    REVIEWING = "reviewing"


@dataclass(frozen=True, slots=True)
class StartResult:
    brief: StepBrief
    stack: list[StackItem]
    branch_name: str | None
    branch_note: str | None


@dataclass(frozen=True, slots=True)
class ApprovalPrompt:
    """A step waiting for a human: what to ask, and the command that answers from a terminal."""

    session_id: SessionId
    request_id: str
    step_ids: list[str]
    prompt: str
    command: str
    shown: list[ShownOutput]
    job_name: str
    workflow_name: str


@dataclass(frozen=True, slots=True)
class EvidenceReport:
    """What a checkpoint's audit found (docs/evidence.md); `outputs` and `approvals`, the
    evidence summary, are set when the workflow completes."""

    stale_evidence: list[StaleEvidence]
    undeclared_changes: list[str]
    #: Why the scope guard is off, said once per session.
    scope_guard_note: str | None = None
    #: Set with `AWAITING_APPROVAL`: what the human is asked, and how they answer.
    approval: ApprovalPrompt | None = None
    outputs: list[OutputEvidence] | None = None
    approvals: list[ApprovalRecord] | None = None
    #: The receipt of each run this call completed (docs/verify.md); None when none completed.
    receipts: list[ReceiptNote] | None = None


@dataclass(frozen=True, slots=True)
class FinishResult:
    status: FinishStatus
    stack: list[StackItem]
    brief: StepBrief | None = None
    feedback: str | None = None
    #: The reviews that failed; set with `NEEDS_WORK` only.
    failed_reviews: list[ReviewVerdict] | None = None
    summary: str | None = None
    all_outputs: dict[str, OutputValue] | None = None
    evidence: EvidenceReport | None = None
    #: With `WORKFLOW_COMPLETE`: what the completed workflow asks the agent to do next.
    post_workflow_instructions: str | None = None
    #: The quality gate's warnings (`<code>: <message>`), e.g. a `.deepreview` that failed to load.
    warnings: list[str] | None = None
    #: Set with `DRY_RUN`: the review tasks a real call would run (docs/quality-gate.md).
    review_tasks: list[PlannedReview] | None = None
    #: Set with `REVIEWING`: each background review, what it judges and how far it got.
    reviews: list[ReviewProgress] | None = None
    #: Set with `DRY_RUN` and `REVIEWING` under an external reviewer: what the reviews are
    #: expected to cost in all, with its basis (docs/quality-gate.md).
    price: ReviewPrice | None = None
    #: The runs this call completed (the workflow's, and a nested one whose parent goes on).
    completed: tuple[SessionId, ...] = ()


@dataclass(frozen=True, slots=True)
class PlannedReview:
    """A review task a `finished_step` dry run found: what would run, without running it."""

    name: str
    step_id: str
    run_each: str
    target_file: str | None
    criteria: list[str]
    depth: str
    files: list[str]
    #: The review's `agent` (runner or platform → persona), None when it names none.
    agent: dict[str, str] | None = None
    #: What the review's `additional_context` adds to the brief, one line each.
    context: list[str] | None = None
    #: What it is expected to cost (None: self-review, which DeepWork cannot meter).
    expected: TaskPrice | None = None


@dataclass(frozen=True, slots=True)
class AbortResult:
    aborted_workflow: str
    aborted_step: str
    explanation: str
    stack: list[StackItem]
    resumed_workflow: str | None
    resumed_step: str | None
    #: For an aborted top-level workflow on its own branch: the branch remains; how to go back.
    branch_note: str | None = None
