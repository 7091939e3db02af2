"""The session document: one workflow run as the store keeps it (`docs/runtime-layout.md`).

`Session` is the JSON document of a `sessions` row, with what happened to each step
(`StepRecord`), its quality-gate trail (`QualityEvent`), the approval it waits for
(`PendingApproval`), for a run no person attends why it stopped (`Parked`, docs/headless.md),
and what a fanned-out step records (docs/fan-out.md): a step with `for_each` runs once per item,
the parent noting the fan-out (`FanOut`, one `FanInstance` per item in item order) while each
instance is a session of its own that knows its item (`InstanceOf`). A concurrent group with
`isolation: worktree` is recorded the same way, one instance per step of the group, whose item
is its step id (`FanOut.group`). An instance's status is its session's; the parent records only
what fan-in did with it (merged into the run's branch, worktree removed).
`deepwork_core.state.sessions` keeps the documents in the store.
"""

from __future__ import annotations

from datetime import UTC, datetime
from enum import StrEnum
from typing import Final, Literal

from pydantic import BaseModel, ConfigDict, Field

from deepwork_core.base.error_codes import ErrorCode
from deepwork_core.base.identifiers import SessionId
from deepwork_core.evidence.hashes import OutputEvidence, OutputHash
from deepwork_core.evidence.scope import RepoSnapshot
from deepwork_core.evidence.verdicts import LoggedVerdictKind, ReviewVerdict, VerdictKind
from deepwork_core.state.approvals.models import ApprovalRecord
from deepwork_core.state.approvals.policy import RunAuthor

SCHEMA_VERSION: Literal[1] = 1

OutputValue = str | list[str]
#: Where a file of a job definition lives: the project, DeepWork's standard jobs, or an
#: additional jobs folder outside the project (docs/verify.md).
DefinitionRoot = Literal["project", "standard", "additional"]


def utc_now() -> datetime:
    return datetime.now(UTC)


class SessionStatus(StrEnum):
    ACTIVE = "active"
    COMPLETED = "completed"
    ABORTED = "aborted"


class _State(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_assignment=False)


class InstanceOf(_State):
    """On an instance's session: which item of which fan-out it runs."""

    index: int = Field(ge=0)
    item: str
    #: Project-relative folder of the instance's git worktree (`isolation: worktree`).
    worktree: str | None = None
    branch: str | None = None
    #: True when the instance is one step of a concurrent group (its item is the step id).
    group: bool = False
    #: The git tree of everything the worktree held when the gate accepted the instance: what
    #: fan-in merges (docs/fan-out.md); None before it was accepted.
    accepted_tree: str | None = None


class FanInstance(_State):
    """On the parent's session: one instance of the fan-out, in item order."""

    index: int = Field(ge=0)
    item: str
    session_id: SessionId
    worktree: str | None = None
    branch: str | None = None
    #: True once fan-in merged the instance's branch into the run's branch.
    merged: bool = False
    #: True once the instance's worktree and branch are gone.
    cleaned: bool = False


class FanOut(_State):
    """On the parent's session: the fan-out of its current step."""

    step_id: str
    entry_index: int
    instances: list[FanInstance] = Field(default_factory=list)
    isolation: str = "shared"
    max_parallel: int | None = None
    #: The commit the worktrees were made from (`isolation: worktree`).
    base_commit: str | None = None
    #: The step ids of a concurrent group run in worktrees (each instance runs one of them);
    #: empty for a `for_each` step.
    group: list[str] = Field(default_factory=list)

    @property
    def step_ids(self) -> list[str]:
        """The steps of the checkpoint the fan-out stands for."""
        return list(self.group) or [self.step_id]

    def instance_step(self, instance: FanInstance) -> str:
        """The step an instance runs: its item in a group, else the fanned-out step."""
        return instance.item if self.group else self.step_id


class DefinedFile(_State):
    """One file of the job definition as it was when the gate accepted a step (docs/verify.md),
    as a receipt's `job_definition` names it."""

    root: DefinitionRoot
    path: str
    #: None when the file was not there.
    sha256: str | None


class StepRecord(_State):
    """What happened to one step of a session."""

    step_id: str
    started_at: datetime
    completed_at: datetime | None = None
    outputs: dict[str, OutputValue] = Field(default_factory=dict)
    notes: str | None = None
    #: Quality-gate evaluations of the checkpoint this step belongs to (external reviewer).
    quality_attempts: int = 0
    #: The repository when the step began (the scope guard's baseline); None outside git.
    began: RepoSnapshot | None = None
    #: The job's own files (job.yml, the workflow's instruction files, their doc specs) with
    #: their SHA-256 when the gate accepted the step: the definition it ran under, which the
    #: receipt compares with the one the run completed with. None: accepted by a DeepWork that
    #: did not record it, or not accepted yet.
    definition: list[DefinedFile] | None = None


#: Gate errors that are not an attempt (docs/quality-gate.md): no reviewer judged the outputs,
#: so the engine gives the attempt back and no count of attempts includes them.
NOT_AN_ATTEMPT: Final = frozenset(
    {ErrorCode.QUALITY_GATE_REVIEWER_STALLED, ErrorCode.QUALITY_GATE_BUDGET_EXHAUSTED}
    | {ErrorCode.QUALITY_GATE_DAY_BUDGET_EXHAUSTED}  # the run's cap, the project's day cap
)


class QualityEvent(_State):
    """One entry of a session's quality-gate audit trail."""

    at: datetime
    kind: LoggedVerdictKind
    step_ids: list[str]
    attempt: int | None = None
    passed: bool | None = None
    feedback: str | None = None
    override_reason: str | None = None
    error_code: str | None = None
    review_file: str | None = None
    reviews: list[ReviewVerdict] = Field(default_factory=list)

    @property
    def is_attempt(self) -> bool:
        """False for the gate errors in `NOT_AN_ATTEMPT`."""
        return self.error_code not in NOT_AN_ATTEMPT


class PendingApproval(_State):
    """A checkpoint that passed its reviews and waits for a human (docs/evidence.md)."""

    request_id: str
    entry_index: int
    step_ids: list[str]
    #: The verdict the evidence is bound to once the human approves.
    verdict: VerdictKind
    override_reason: str | None = None
    #: The checkpoint's files as reviewed; a change voids the request.
    hashes: list[OutputHash] = Field(default_factory=list)
    #: Steps whose stale outputs were reviewed again with this checkpoint.
    rereviewed: list[str] = Field(default_factory=list)


class ParkReason(StrEnum):
    """Why a run no person attends stopped for one (docs/headless.md)."""

    #: A step waits for a human's approval.
    AWAITING_APPROVAL = "awaiting_approval"
    #: The quality gate's attempts at a checkpoint ran out.
    ATTEMPTS_EXHAUSTED = "attempts_exhausted"
    #: The run's review budget is spent.
    BUDGET_EXHAUSTED = "budget_exhausted"
    #: The reviewer's CLI is not on the server's `PATH` (`quality_gate.not_installed`).
    REVIEWER_MISSING = "reviewer_missing"


class Parked(_State):
    """A headless run stopped for a person: no agent works on it until `deepwork run --resume`
    starts one (docs/headless.md). While it is set, a headless server answers every
    `finished_step` of the run as parked and counts no decision."""

    reason: ParkReason
    at: datetime
    step_ids: list[str]
    #: The approval request a person decides (`awaiting_approval` only).
    request_id: str | None = None
    #: The machine whose server parked the run.
    machine: str = ""
    #: The checkout whose server parked the run.
    root: str = ""
    #: What the gate said last (the exhausted reasons).
    feedback: str | None = None


class Session(_State):
    """One run of a workflow."""

    schema_version: Literal[1] = SCHEMA_VERSION
    session_id: SessionId
    job_name: str
    workflow_name: str
    instance_id: str | None = None
    goal: str
    status: SessionStatus = SessionStatus.ACTIVE
    #: Index into the workflow's entries (a concurrent group counts once).
    current_entry_index: int = 0
    #: The step ids of the current entry (several for a concurrent group).
    current_step_ids: list[str] = Field(min_length=1)
    step_progress: dict[str, StepRecord] = Field(default_factory=dict)
    parent_session_id: SessionId | None = None
    #: The agent whose stack the session is on (None: the main stack).
    agent_id: str | None = None
    #: Set on a workflow a `sub_workflow` step started: that step of the parent session.
    started_for_step: str | None = None
    #: Values given at `start_workflow` (argument name -> text or project-relative path(s)).
    inputs: dict[str, OutputValue] = Field(default_factory=dict)
    branch_name: str | None = None
    #: The branch the repository was on before the workflow's branch was checked out.
    previous_branch: str | None = None
    started_at: datetime
    start_commit: str | None = None  # HEAD when the run started: its receipt's (docs/verify.md)
    #: Who started the run, for `not_by_author` approvals (docs/job-format.md#approval-policy).
    author: RunAuthor | None = None
    completed_at: datetime | None = None
    abort_reason: str | None = None
    quality_log: list[QualityEvent] = Field(default_factory=list)
    #: The hash of every accepted output file with the verdict that covers it.
    evidence: list[OutputEvidence] = Field(default_factory=list)
    #: Stale files already reported at the last checkpoint (the next call reviews them again).
    stale_reported: list[str] = Field(default_factory=list)
    pending_approval: PendingApproval | None = None
    #: Set while a headless run is parked for a person (docs/headless.md).
    parked: Parked | None = None
    approvals: list[ApprovalRecord] = Field(default_factory=list)
    #: True once the answer said the scope guard is off (it says so once per session).
    scope_guard_noted: bool = False
    #: The fan-out of the current step, when it has `for_each` (docs/fan-out.md).
    fan_out: FanOut | None = None
    #: Set on an instance of a fanned-out step: its item.
    instance_of: InstanceOf | None = None

    @property
    def workflow_label(self) -> str:
        """`job_name/workflow_name`, as stack entries and abort responses name a workflow."""
        return f"{self.job_name}/{self.workflow_name}"

    @property
    def current_step_id(self) -> str:
        return self.current_step_ids[0]

    def all_outputs(self) -> dict[str, OutputValue]:
        """Outputs of every completed step, merged in completion order (later steps win)."""
        merged: dict[str, OutputValue] = {}
        records = sorted(
            (r for r in self.step_progress.values() if r.completed_at is not None),
            key=lambda r: r.completed_at or r.started_at,
        )
        for record in records:
            merged.update(record.outputs)
        return merged
