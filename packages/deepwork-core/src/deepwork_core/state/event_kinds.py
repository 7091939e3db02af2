"""The kinds of event a session's log records: one frozen model per kind, one union over them.

Each line of `.deepwork/tmp/events/<session_id>.jsonl` is one of these models as JSON. The
`event` key names the kind and picks the model (`EventRecord` is the discriminated union); `v` is
the version of the line format. The kinds, their fields and the compatibility rule are in
docs/navigation.md, "The event log":

- a line without `v` is version 1, today's format;
- a line of an unknown kind (a newer DeepWork's, say) reads as `OtherEvent`, with all its keys;
- a line of a known kind whose fields do not fit its model also reads as `OtherEvent`;
- a known kind's line with keys its model does not know keeps them for display (`as_written`).

Writers build the models (`deepwork_core.state.events.append_event` takes one); readers get
them back from `read_events`, so nothing reads an event by string keys.
"""

from __future__ import annotations

import contextlib
from enum import StrEnum
from typing import Annotated, Any, Final, Literal

from pydantic import (
    ConfigDict,
    Discriminator,
    Field,
    Tag,
    TypeAdapter,
)

from deepwork_core.base.error_codes import ErrorCode
from deepwork_core.base.errors import DeepWorkError
from deepwork_core.base.fsutil import loads_json
from deepwork_core.base.identifiers import SessionId
from deepwork_core.evidence.hashes import OutputEvidence, ShownOutput, StaleEvidence
from deepwork_core.evidence.verdicts import CriterionVerdict, ReusedFrom, VerdictKind, unset
from deepwork_core.state.event_line import EVENT_SCHEMA_VERSION as EVENT_SCHEMA_VERSION
from deepwork_core.state.event_line import HEADER_KEYS as HEADER_KEYS
from deepwork_core.state.event_line import READING, EventLine, KnownLine, Stamp
from deepwork_core.state.usage.pair import RequestUsage


class EventName(StrEnum):
    """The kinds of event a session records (the `event` key of a line)."""

    STARTED = "started"
    STEP_BEGUN = "step_begun"
    OUTPUTS_SUBMITTED = "outputs_submitted"
    REVIEW_VERDICT = "review_verdict"
    OVERRIDE = "override"
    NEEDS_WORK = "needs_work"
    GO_TO_STEP = "go_to_step"
    STEP_FINISHED = "step_finished"
    STALE_EVIDENCE = "stale_evidence"
    UNDECLARED_CHANGES = "undeclared_changes"
    APPROVAL_REQUESTED = "approval_requested"
    APPROVAL = "approval"
    APPROVAL_ENDED = "approval_ended"
    ABORTED = "aborted"
    COMPLETED = "completed"
    REVIEW_USAGE = "review_usage"
    REVIEW_STALLED = "review_stalled"
    BUDGET_EXHAUSTED = "budget_exhausted"
    PARKED = "parked"
    RESUMED = "resumed"


class StartedEvent(KnownLine):
    """A workflow session started (a nested one names its parent)."""

    event: Literal["started"] = "started"
    job: str
    workflow: str
    goal: str | None = None
    instance_id: str | None = None
    agent_id: str | None = None
    parent_session_id: SessionId | None = None
    branch: str | None = None


class StepBegunEvent(KnownLine):
    """The session moved to a step (several for a concurrent group)."""

    event: Literal["step_begun"] = "step_begun"
    step_ids: list[str]
    entry_index: int | None = None


class OutputsSubmittedEvent(KnownLine):
    """The agent called `finished_step` with these outputs."""

    event: Literal["outputs_submitted"] = "outputs_submitted"
    step_ids: list[str]
    outputs: dict[str, str | list[str]] = Field(default_factory=dict)
    notes: str | None = None


class ReviewVerdictEvent(KnownLine):
    """One reviewer verdict: one review of one step (or one target file) in one attempt."""

    event: Literal["review_verdict"] = "review_verdict"
    step_id: str
    review: str | None = None
    target_file: str | None = None
    passed: bool
    feedback: str | None = None
    criteria: list[CriterionVerdict] = Field(default_factory=list)
    #: The gate attempt the verdict belongs to, counted from 1.
    attempt: int | None = None
    #: Set when no reviewer ran: the verdict was judged earlier (docs/quality-gate.md).
    reused_from: ReusedFrom | None = Field(default=None, exclude_if=unset)


class OverrideEvent(KnownLine):
    """The agent skipped the reviews with a reason."""

    event: Literal["override"] = "override"
    step_ids: list[str]
    reason: str


class NeedsWorkEvent(KnownLine):
    """An attempt failed the gate: the agent must revise."""

    event: Literal["needs_work"] = "needs_work"
    step_ids: list[str]
    attempt: int | None = None
    failed_reviews: int | None = None


class GoToStepEvent(KnownLine):
    """`go_to_step` moved the session back (or forward), clearing these steps' progress."""

    event: Literal["go_to_step"] = "go_to_step"
    from_step_ids: list[str] = Field(default_factory=list)
    to_step_ids: list[str]
    cleared_step_ids: list[str] = Field(default_factory=list)


class StepFinishedEvent(KnownLine):
    """A checkpoint was accepted under `verdict`, binding the hashes in `evidence`."""

    event: Literal["step_finished"] = "step_finished"
    step_ids: list[str]
    verdict: VerdictKind
    evidence: list[OutputEvidence] = Field(default_factory=list)


class StaleEvidenceEvent(KnownLine):
    """Outputs of accepted steps changed since their checkpoint."""

    event: Literal["stale_evidence"] = "stale_evidence"
    step_ids: list[str]
    stale: list[StaleEvidence]


class UndeclaredChangesEvent(KnownLine):
    """Files changed during the step that no output declares."""

    event: Literal["undeclared_changes"] = "undeclared_changes"
    step_ids: list[str]
    files: list[str]
    strict: bool


class ApprovalRequestedEvent(KnownLine):
    """The step waits for a human's approval of the files in `shown`."""

    event: Literal["approval_requested"] = "approval_requested"
    step_ids: list[str]
    request_id: str
    prompt: str
    shown: list[ShownOutput] = Field(default_factory=list)


class ApprovalEvent(KnownLine):
    """A human approved or rejected a request (`channel` is `cli` or `elicitation`)."""

    event: Literal["approval"] = "approval"
    step_ids: list[str]
    request_id: str
    approved: bool
    comment: str | None = None
    channel: str
    actor: str
    terminal: str | None = None
    decided_at: Stamp
    shown: list[ShownOutput] = Field(default_factory=list)
    #: The trusted approver whose key signed the decision; None: unsigned (the seal decided).
    signer: str | None = None
    #: Where a request several must sign stood after this decision (`1 of 2 approvals
    #: (alice)`); None where one decision settles the request.
    standing: str | None = None

    @property
    def decided_by(self) -> str:
        """Who decided, in a person's words (`decided_by`)."""
        return decided_by(self.signer, self.actor)


def decided_by(signer: str | None, actor: str) -> str:
    """Who decided, in a person's words: the approver's name when a trusted key signed, with the
    OS user only as "on <machine> as <user>" (`actor` is `user@host` from the command line and
    the dashboard, the client's name and version from a client's form)."""
    user, at, host = actor.rpartition("@")
    where = f"on {host} as {user}" if at and user and host else f"through {actor}"
    return f"approver {signer} ({where})" if signer else f"an unsigned decision ({where})"


class ApprovalEndedEvent(KnownLine):
    """An approval request ended: `state` is approved, rejected, expired, cancelled or failed
    (`deepwork_core.state.approvals.ending`), `why` says why in a person's words."""

    event: Literal["approval_ended"] = "approval_ended"
    step_ids: list[str]
    request_id: str
    state: str
    why: str


class AbortedEvent(KnownLine):
    """The session was abandoned."""

    event: Literal["aborted"] = "aborted"
    step_ids: list[str] = Field(default_factory=list)
    reason: str


class CompletedEvent(KnownLine):
    """The workflow ran to its end."""

    event: Literal["completed"] = "completed"
    steps_completed: int | None = None


class ReviewUsageEvent(KnownLine):
    """What one review task cost, in the log of the run's top-level session (docs/quality-gate.md).

    `mode` is `external` (one reviewer call: tokens and cost as the reviewer reported them),
    `reused` (no reviewer ran: the verdict of the same brief over the same bytes was taken from
    `reused_from`; it costs 0, and `saved_usd` is what it cost when it was judged) or `self` (a
    self-review was requested: nothing is metered, it is only counted). `outcome` is
    `passed`, `failed` or the error code the call ended with. The usage fields are a
    `RequestUsage`'s, flat as the log has always held them (`usage` gives them back as one).
    """

    event: Literal["review_usage"] = "review_usage"
    job: str
    step_id: str
    review: str
    target_file: str | None = None
    #: The nested session the step belongs to, when it is not the run's own session.
    reviewed_session_id: str | None = None
    mode: Literal["external", "reused", "self"] = "external"
    criteria: int = 0
    depth: str = "standard"
    model: str | None = None
    seconds: float = 0.0
    attempt: int | None = None
    outcome: str
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_creation_tokens: int = 0
    #: None: the reviewer CLI reports no cost (codex, gemini); never written as 0.
    cost_usd: float | None = 0.0
    #: The reviewer CLI that ran (`claude`, `codex`, `gemini`); None for self-review and for
    #: events written before runners were recorded.
    runner: str | None = None
    #: With `mode: reused`: where the verdict was judged, and what it cost then.
    reused_from: ReusedFrom | None = Field(default=None, exclude_if=unset)
    saved_usd: float | None = Field(default=None, exclude_if=unset)
    #: SHA-256 of the review's criteria as given (None: written before it was recorded).
    criteria_sha256: str | None = None
    #: The project files beside job.yml that define the review (a `.deepreview` rule's).
    sources: list[str] = Field(default_factory=list)
    #: The SHA-256 of each of `sources` when the gate planned the review (None: absent).
    sources_sha256: dict[str, str | None] = Field(default_factory=dict)

    @property
    def usage(self) -> RequestUsage:
        """The call's usage as the one request type (the fields above, as written)."""
        return RequestUsage.model_construct(
            input_tokens=self.input_tokens,
            output_tokens=self.output_tokens,
            cache_read_tokens=self.cache_read_tokens,
            cache_creation_tokens=self.cache_creation_tokens,
            cost_usd=self.cost_usd,
            model=self.model,
        )


class ReviewStalledEvent(KnownLine):
    """A reviewer went silent for `waited_seconds` and was killed; `retrying` says whether it
    was started once more."""

    event: Literal["review_stalled"] = "review_stalled"
    job: str
    step_id: str
    review: str
    target_file: str | None = None
    waited_seconds: float
    try_number: int
    retrying: bool


def _is_run(cap: object) -> bool:
    return cap == "run"  # the cap every line before day caps meant: left out


class BudgetExhaustedEvent(KnownLine):
    """The run spent its review budget: the gate started no reviewer for these steps."""

    event: Literal["budget_exhausted"] = "budget_exhausted"
    job: str
    step_ids: list[str]
    spent_usd: float
    spent_tokens: int
    max_cost_usd: float | None = None
    max_tokens: int | None = None
    #: Which cap stopped it: the run's `budget`, or the project's `max_budget_usd_per_day`
    #: (then `spent_usd` is the day's spending on the store, and `resets_at` when it resets).
    cap: Literal["run", "day"] = Field(default="run", exclude_if=_is_run)
    resets_at: Stamp | None = Field(default=None, exclude_if=unset)


class ParkedEvent(KnownLine):
    """A headless run stopped for a person (`reason`: `awaiting_approval`,
    `attempts_exhausted`, `budget_exhausted` or `reviewer_missing`; docs/headless.md)."""

    event: Literal["parked"] = "parked"
    step_ids: list[str]
    reason: str
    request_id: str | None = None
    machine: str = ""


class ResumedEvent(KnownLine):
    """`deepwork run --resume` started an agent on the run again, on `machine` in the checkout
    `root` (`from_root`: the checkout that served it before, when another one did; `adopted`:
    this checkout took the run over from that one's project, on `from_machine`)."""

    event: Literal["resumed"] = "resumed"
    step_ids: list[str]
    machine: str
    root: str
    from_root: str | None = None
    from_machine: str | None = None
    adopted: bool = False


class OtherEvent(EventLine):
    """A line of a kind this version does not know, or whose fields do not fit its kind.

    It keeps every key of the line; `deepwork log` shows it, `deepwork stats` passes it by.
    """

    model_config = ConfigDict(extra="allow", frozen=True)

    ts: Stamp | None = None
    session_id: str | None = None
    event: str


#: Every kind this version writes.
KnownEvent = (
    StartedEvent
    | StepBegunEvent
    | OutputsSubmittedEvent
    | ReviewVerdictEvent
    | OverrideEvent
    | NeedsWorkEvent
    | GoToStepEvent
    | StepFinishedEvent
    | StaleEvidenceEvent
    | UndeclaredChangesEvent
    | ApprovalRequestedEvent
    | ApprovalEvent
    | ApprovalEndedEvent
    | AbortedEvent
    | CompletedEvent
    | ReviewUsageEvent
    | ReviewStalledEvent
    | BudgetExhaustedEvent
    | ParkedEvent
    | ResumedEvent
)

_OTHER: Final = "other"
_KNOWN_NAMES: Final = frozenset(name.value for name in EventName)


def _kind(data: Any) -> str:
    """The union member a line (a dict) or a record (a model) belongs to."""
    name = data.get("event") if isinstance(data, dict) else getattr(data, "event", None)
    return name if isinstance(name, str) and name in _KNOWN_NAMES else _OTHER


#: Any line of an event log: the kind its `event` names, else `OtherEvent`.
EventRecord = Annotated[
    Annotated[StartedEvent, Tag("started")]
    | Annotated[StepBegunEvent, Tag("step_begun")]
    | Annotated[OutputsSubmittedEvent, Tag("outputs_submitted")]
    | Annotated[ReviewVerdictEvent, Tag("review_verdict")]
    | Annotated[OverrideEvent, Tag("override")]
    | Annotated[NeedsWorkEvent, Tag("needs_work")]
    | Annotated[GoToStepEvent, Tag("go_to_step")]
    | Annotated[StepFinishedEvent, Tag("step_finished")]
    | Annotated[StaleEvidenceEvent, Tag("stale_evidence")]
    | Annotated[UndeclaredChangesEvent, Tag("undeclared_changes")]
    | Annotated[ApprovalRequestedEvent, Tag("approval_requested")]
    | Annotated[ApprovalEvent, Tag("approval")]
    | Annotated[ApprovalEndedEvent, Tag("approval_ended")]
    | Annotated[AbortedEvent, Tag("aborted")]
    | Annotated[CompletedEvent, Tag("completed")]
    | Annotated[ReviewUsageEvent, Tag("review_usage")]
    | Annotated[ReviewStalledEvent, Tag("review_stalled")]
    | Annotated[BudgetExhaustedEvent, Tag("budget_exhausted")]
    | Annotated[ParkedEvent, Tag("parked")]
    | Annotated[ResumedEvent, Tag("resumed")]
    | Annotated[OtherEvent, Tag(_OTHER)],
    Discriminator(_kind),
]

_EVENT_RECORD: Final[TypeAdapter[EventRecord]] = TypeAdapter(EventRecord)


def parse_event(record: dict[str, Any]) -> EventRecord:
    """The model of one decoded line; a known kind that does not fit reads as `OtherEvent`.

    Raises pydantic's `ValidationError` only when the line's header (`v`, `ts`, `session_id`)
    cannot be read at all.
    """
    context = {READING: True}
    try:
        return _EVENT_RECORD.validate_python(record, context=context)
    except ValueError:
        if _kind(record) == _OTHER:
            raise
        return OtherEvent.model_validate(record, context=context)


class EventLogError(DeepWorkError):
    """An event log could not be read (`events.*` codes)."""

    code = ErrorCode.EVENTS_ERROR


def parse_line(raw: str | bytes, where: str) -> EventRecord:
    """One stored record (a JSON line); `events.corrupt` naming `where` when it is none."""
    record: Any
    try:
        record = loads_json(raw)  # bounded: a record nested too deeply is corrupt, no crash
    except (ValueError, UnicodeDecodeError):
        record = None
    if isinstance(record, dict) and isinstance(record.get("event"), str):
        with contextlib.suppress(ValueError):
            return parse_event(record)
    raise EventLogError(
        f"{where}: not an event record (a JSON object with an 'event')",
        code=ErrorCode.EVENTS_CORRUPT,
    )


def parse_counted(raw: str | bytes, where: str) -> EventRecord:
    """One stored record read for its fields only (what `deepwork stats` counts): the line is
    validated straight from its JSON, without keeping its key order for display; a line that
    does not fit that way (an unknown key, a field of the wrong shape, no JSON) is read by
    `parse_line`, so it gives the same record, or the same `events.corrupt`."""
    try:
        return _EVENT_RECORD.validate_json(raw)
    except ValueError:
        return parse_line(raw, where)
