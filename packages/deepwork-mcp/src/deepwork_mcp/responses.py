"""Tool responses (docs/runtime.md, JOBS-REQ-001) as pydantic models, validated from core results.

Returning these models gives clients an `outputSchema` and `structuredContent`. Field names are the
wire contract: fields may be added, never renamed or removed. Each response is validated straight
from the engine's result object (`from_attributes`): `FinishedStepResponse.model_validate(result)`.
Where a wire name differs from the core attribute, the field's `validation_alias` names the
attribute; serialisation always uses the wire name.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Literal

from deepwork_core.base.escaping import printable
from deepwork_core.state.event_kinds import decided_by
from deepwork_core.state.usage.pair import RunUsage
from pydantic import BaseModel, BeforeValidator, ConfigDict, Field
from pydantic.json_schema import SkipJsonSchema

if TYPE_CHECKING:
    from deepwork_core.state.overview import ActiveEntry

# The two names below restate core types instead of importing them: this module is loaded for the
# first `get_workflows`, and the core modules defining them load the engine's state and gate
# modules (about 40 ms of a cold start). tests/unit/mcp/tools/test_output_schemas.py keeps them
# equal to the core's. The usage pair is imported as it is: its module loads only pydantic.

#: The values of `deepwork_core.engine.results.FinishStatus`, in its order.
FinishStatusValue = Literal[
    "needs_work", "next_step", "workflow_complete", "awaiting_approval", "dry_run", "reviewing"
]
#: `deepwork_core.state.sessions.OutputValue`: a path or text, or a list of paths.
OutputValue = str | list[str]


class _Model(BaseModel):
    model_config = ConfigDict(from_attributes=True, populate_by_name=True)


def _is_none(value: object) -> bool:
    return value is None


#: A field added for 0.10-format jobs, left out of the wire form when None: it is rarely set, and
#: every byte of a listing or brief is paid for in every conversation.
_Sparse = Field(default=None, exclude_if=_is_none)


def _text(value: object) -> object:
    """Paths and string enums as the plain strings the wire carries."""
    return str(value) if isinstance(value, (Path, str)) else value


#: A path or string enum member, sent as a plain string.
_Text = Annotated[str, BeforeValidator(_text)]


class WorkflowInfo(_Model):
    name: str
    summary: str
    #: Hand the whole workflow to this agent type (0.10-format jobs); left out when not set.
    agent: str | None = _Sparse


class JobInfo(_Model):
    name: str
    summary: str
    description: str | None
    workflows: list[WorkflowInfo]


def _escaped(value: object) -> object:
    """Text from the file system (a folder's name, a parse error quoting it) escaped: no line
    break or control character reaches the model raw (docs/security.md)."""
    return printable(str(value)) if isinstance(value, (Path, str)) else value


#: A name, path or message read from the file system, sent escaped.
_Escaped = Annotated[str, BeforeValidator(_escaped)]


class JobLoadErrorInfo(_Model):
    job_name: _Escaped
    job_dir: _Escaped
    error: _Escaped


class GetWorkflowsResponse(_Model):
    jobs: list[JobInfo]
    errors: list[JobLoadErrorInfo]


class ExpectedOutputInfo(_Model):
    name: str
    type: Annotated[Literal["file", "files", "file_path", "string"], BeforeValidator(_text)]
    description: str
    required: bool
    syntax_for_finished_step_tool: str


class ReviewInfo(_Model):
    run_each: str
    quality_criteria: dict[str, str]
    additional_review_guidance: str | None = None


def _reviews(value: object) -> object:
    """A brief's step reviews as the reviewer judges them: a 0.10-format review's rules are its
    one criterion, "Review instructions", not guidance (`gate.process_review.review_criteria`)."""
    if not isinstance(value, (list, tuple)):
        return value
    from deepwork_core.gate.process_review import review_criteria  # with the engine, not before
    from deepwork_core.jobs.steps.parts import Review

    shown: list[object] = []
    for item in value:
        review = getattr(item, "review", item)
        if isinstance(review, Review):
            criteria, guidance = review_criteria(review)
            review = {"run_each": review.run_each, "quality_criteria": criteria}
            review["additional_review_guidance"] = guidance
        shown.append(review)
    return shown


class StepInputInfo(_Model):
    """A user parameter (no paths) or files an earlier step submitted."""

    step_id: str
    name: str
    description: str | None = None
    from_step: str | None = None
    paths: list[str]
    #: Text: a `string` output of an earlier step, or a value given at start; a list of texts
    #: for a fanned-out `string` output or a list given for a `string` argument.
    value: str | list[str] | None = _Sparse


class FanInstanceInfo(_Model):
    """One instance of a fanned-out step (docs/fan-out.md)."""

    index: int
    item: str
    session_id: str
    state: Literal["running", "needs_work", "done", "aborted"]
    worktree: str | None = _Sparse
    abort_reason: str | None = _Sparse


class FanOutInfo(_Model):
    """The instances of a fanned-out step: hand each to a sub-agent, or do them in turn."""

    step_id: str
    parent_session_id: str
    instances: list[FanInstanceInfo]
    max_parallel: int | None = _Sparse
    isolation: Literal["shared", "worktree"]
    counts: dict[str, int]
    #: A concurrent group run in worktrees: its steps, one instance each (absent for for_each).
    group: Annotated[list[str] | None, BeforeValidator(lambda v: v or None)] = _Sparse


class ActiveStepInfo(_Model):
    session_id: str
    step_id: str
    job_dir: _Text
    step_expected_outputs: list[ExpectedOutputInfo] = Field(validation_alias="expected_outputs")
    step_reviews: Annotated[list[ReviewInfo], BeforeValidator(_reviews)] = Field(
        validation_alias="reviews"
    )
    step_instructions: str = Field(validation_alias="instructions")
    common_job_info: str
    step_inputs: list[StepInputInfo] = Field(validation_alias="inputs")
    #: The agent type the workflow is handed to (0.10-format jobs), if set.
    agent: str | None = _Sparse
    #: Set when the step runs once per item: its instances (docs/fan-out.md).
    fan_out: FanOutInfo | None = _Sparse


class StackEntry(_Model):
    workflow: str
    step: str
    session_id: str


class StartWorkflowResponse(_Model):
    begin_step: ActiveStepInfo = Field(validation_alias="brief")
    stack: list[StackEntry]
    branch_name: str | None
    branch_note: str | None = None


class QualityCriteriaResult(_Model):
    criterion: str
    passed: bool
    feedback: str | None


def _reuse_text(value: object) -> object:
    """A `ReusedFrom` as every view says it: `reused from <session>/<step>, <when>`."""
    return getattr(value, "text", value)


class ReviewResult(_Model):
    review_run_each: str
    target_file: str | None
    passed: bool
    feedback: str
    criteria_results: list[QualityCriteriaResult]
    #: Set when no reviewer ran: the verdict was judged earlier (docs/quality-gate.md). Kept
    #: out of the listed schema (every byte of tools/list is paid in every conversation).
    reused_from: SkipJsonSchema[Annotated[str | None, BeforeValidator(_reuse_text)]] = _Sparse


class StaleEvidenceInfo(_Model):
    """An output file that changed since its step was accepted (docs/evidence.md)."""

    output: str
    step: str = Field(validation_alias="step_id")
    path: str
    old_sha256: str | None
    new_sha256: str | None


class ShownFile(_Model):
    output: str
    path: str
    sha256: str | None


class ApprovalInfo(_Model):
    """A step waiting for a human; `command` is what the user runs to answer."""

    session_id: str
    prompt: str
    command: str
    shown: list[ShownFile]


class OutputEvidenceInfo(_Model):
    output: str
    step: str = Field(validation_alias="step_id")
    path: str
    sha256: str | None
    verdict: _Text
    recorded_at: datetime
    override_reason: str | None = None


class ApprovalGiven(_Model):
    step_ids: list[str]
    approved: bool
    comment: str | None
    channel: _Text
    actor: str
    terminal: str | None
    decided_at: datetime
    shown: list[ShownFile]
    #: The trusted approver whose key signed; None: unsigned.
    signer: str | None = None
    #: Who decided, in a person's words: the signer, the OS user only as "on <host> as <user>".
    decided_by: str = ""


def _approvals(value: object) -> object:
    """Approval records (request + decision) as one flat entry each."""
    if not isinstance(value, (list, tuple)):
        return value
    flat: list[object] = []
    for record in value:
        decision = getattr(record, "decision", None)
        request = getattr(record, "request", None)
        if decision is None or request is None:
            flat.append(record)
            continue
        fields = decision.model_dump(exclude={"mac"})
        who = decided_by(decision.signer, decision.actor)
        flat.append({"step_ids": request.step_ids, **fields, "decided_by": who})
    return flat


class ReceiptInfo(_Model):
    """The receipt a completed run left (docs/verify.md): commit it with the outputs."""

    session_id: str
    #: Project-relative path of the receipt; left out when none was written.
    path: str | None = _Sparse
    #: The gate key that signed it (`.deepwork/gate_keys/<key>.pub`).
    key: str | None = _Sparse
    #: The key's `.pub`, when this run listed it in the project (commit it too).
    listed_key: str | None = _Sparse
    #: `<code>: <message>` when no receipt was written.
    error: str | None = _Sparse


class EvidenceInfo(_Model):
    """What the checkpoint's audit found; at `workflow_complete` also the evidence summary."""

    stale_evidence: list[StaleEvidenceInfo] = Field(default_factory=list)
    undeclared_changes: list[str] = Field(default_factory=list)
    scope_guard_note: str | None = None
    approval: ApprovalInfo | None = None
    outputs: list[OutputEvidenceInfo] | None = None
    approvals: Annotated[list[ApprovalGiven] | None, BeforeValidator(_approvals)] = None
    #: The receipt of each run the call completed; left out when none completed.
    receipts: list[ReceiptInfo] | None = _Sparse


class TaskPriceInfo(_Model):
    """What one review task is expected to cost (`deepwork_core.gate.costs.quotes.TaskPrice`)."""

    label: str
    tokens: int
    usd: float | None
    basis: str


class ReviewPriceInfo(_Model):
    """What a step's reviews are expected to cost in all (docs/quality-gate.md, "A price
    before the run")."""

    tokens: int
    usd: float
    unpriced: int
    basis: str
    text: str


class PlannedReviewInfo(_Model):
    """A review task a dry run found (docs/quality-gate.md, "Dry run")."""

    name: str
    run_each: str
    criteria: list[str]
    depth: str
    files: list[str]
    #: The review's persona per runner or platform (its `agent`); left out when it names none.
    agent: dict[str, str] | None = _Sparse
    #: What the review's `additional_context` adds to the brief; left out when it asks none.
    context: list[str] | None = _Sparse
    #: What it is expected to cost, and on what basis; left out under self-review.
    expected: TaskPriceInfo | None = _Sparse


class ReviewProgressInfo(_Model):
    """A background review, as a `reviewing` answer lists it (docs/quality-gate.md)."""

    review_id: str
    judges: str
    #: `queued`, `running`, `passed` or `failed`.
    state: str
    #: What it is expected to cost, and on what basis.
    expected: TaskPriceInfo | None = _Sparse


class FinishedStepResponse(_Model):
    status: FinishStatusValue
    feedback: str | None = None
    #: Set with `needs_work` only.
    failed_reviews: list[ReviewResult] | None = None
    begin_step: ActiveStepInfo | None = Field(default=None, validation_alias="brief")
    summary: str | None = None
    all_outputs: dict[str, OutputValue] | None = None
    #: With `workflow_complete`: what to do now that the workflow is done.
    post_workflow_instructions: str | None = _Sparse
    stack: list[StackEntry]
    #: Always present: the audit's findings (docs/evidence.md).
    evidence: EvidenceInfo = Field(default_factory=EvidenceInfo)
    #: The quality gate's warnings, `<code>: <message>`; left out when there are none.
    warnings: list[str] | None = _Sparse
    #: With `dry_run` only: the review tasks a real call would run. Kept out of the listed
    #: output schema (every byte of tools/list is paid in every conversation).
    review_tasks: SkipJsonSchema[list[PlannedReviewInfo] | None] = _Sparse
    #: With `reviewing` only: each background review and how far it got (kept out of the
    #: listed schema like `review_tasks`).
    reviews: SkipJsonSchema[list[ReviewProgressInfo] | None] = _Sparse
    #: With `dry_run` and `reviewing` under an external reviewer: what the reviews are expected
    #: to cost in all, with its basis (kept out of the listed schema like `review_tasks`).
    price: SkipJsonSchema[ReviewPriceInfo | None] = _Sparse


class AbortWorkflowResponse(_Model):
    aborted_workflow: str
    aborted_step: str
    explanation: str
    stack: list[StackEntry]
    resumed_workflow: str | None
    resumed_step: str | None
    branch_note: str | None = None


class ActiveStackEntry(_Model):
    """One session of the caller's stack, as `get_active_workflow` lists it."""

    job: str
    workflow: str
    step: str
    session_id: str
    agent_id: str | None
    started_at: datetime
    attempts: int

    @classmethod
    def of(cls, entry: ActiveEntry) -> ActiveStackEntry:
        return cls(
            job=entry.job,
            workflow=f"{entry.job}/{entry.workflow}",
            step=entry.steps[0],
            session_id=entry.session_id,
            agent_id=entry.agent_id,
            started_at=entry.started_at,
            attempts=entry.attempts,
        )


class GetActiveWorkflowResponse(_Model):
    stack: list[ActiveStackEntry]
    #: What the reviews of the target session's run cost so far (docs/quality-gate.md).
    review_usage: RunUsage | None = _Sparse
    #: The target session's current step again; None when no workflow is active.
    begin_step: ActiveStepInfo | None = Field(validation_alias="brief")
