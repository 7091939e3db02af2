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
from datetime import datetime
from enum import StrEnum
from typing import Annotated, Any, Final, Literal, Self

from pydantic import (
    BaseModel,
    ConfigDict,
    Discriminator,
    Field,
    JsonValue,
    ModelWrapValidatorHandler,
    PlainSerializer,
    PrivateAttr,
    Tag,
    TypeAdapter,
    ValidationInfo,
    model_validator,
)

from deepwork_core.base.error_codes import ErrorCode
from deepwork_core.base.errors import DeepWorkError
from deepwork_core.base.fsutil import loads_json
from deepwork_core.base.identifiers import SessionId
from deepwork_core.evidence.hashes import OutputEvidence, ShownOutput, StaleEvidence
from deepwork_core.evidence.verdicts import CriterionVerdict, ReusedFrom, VerdictKind, unset
from deepwork_core.state.usage.pair import RequestUsage

#: The version written on every new line; a line without `v` is version 1.
EVENT_SCHEMA_VERSION: Final = 1
#: Keys every line has before its kind's fields.
HEADER_KEYS: Final = ("v", "ts", "session_id", "event")
#: Validation context under which a record is being read from a log line (see `_Record`).
_READING: Final = "reading an event line"


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
    ABORTED = "aborted"
    COMPLETED = "completed"
    REVIEW_USAGE = "review_usage"
    REVIEW_STALLED = "review_stalled"
    BUDGET_EXHAUSTED = "budget_exhausted"
    PARKED = "parked"
    RESUMED = "resumed"


def _iso(value: datetime) -> str:
    return value.isoformat()


#: A time written as `datetime.isoformat()` (`+00:00`, not pydantic's `Z`), as lines always were.
Stamp = Annotated[datetime, PlainSerializer(_iso, return_type=str, when_used="json")]


class _Record(BaseModel):
    """What every line has, and how a line read from a log keeps its shape for display."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    v: int = EVENT_SCHEMA_VERSION

    #: The line's keys in their order (empty for a record built in code).
    _line_keys: tuple[str, ...] = PrivateAttr(default=())
    #: Keys of the line the model does not know (a newer writer's), with their values.
    _unknown: dict[str, Any] = PrivateAttr(default_factory=dict)

    @model_validator(mode="wrap")
    @classmethod
    def _keep_the_line(
        cls, data: Any, handler: ModelWrapValidatorHandler[Self], info: ValidationInfo
    ) -> Self:
        reading = isinstance(info.context, dict) and info.context.get(_READING) is True
        if not reading or not isinstance(data, dict):
            return handler(data)
        unknown: dict[str, Any] = {}
        if cls.model_config.get("extra") == "forbid":
            unknown = {k: v for k, v in data.items() if k not in cls.model_fields}
            data = {k: v for k, v in data.items() if k in cls.model_fields}
        record = handler(data)
        record._line_keys = tuple(str(key) for key in [*data, *unknown])
        record._unknown = unknown
        return record

    def __eq__(self, other: object) -> bool:
        """Same kind, same fields (and the same unknown keys); the line's key order is not
        compared, so a record read back equals the one that was written."""
        if not isinstance(other, _Record) or type(other) is not type(self):
            return NotImplemented
        return self.model_dump() == other.model_dump() and self._unknown == other._unknown

    def as_written(self) -> dict[str, JsonValue]:
        """The record as its line had it: the same keys, in the same order.

        Keys the line did not have (defaults of fields added later) are left out. A record
        built in code gives its set fields in model order.
        """
        dumped: dict[str, JsonValue] = {
            **self.model_dump(mode="json", exclude_unset=True),
            **self._unknown,
        }
        order = [key for key in self._line_keys if key in dumped]
        order += [key for key in dumped if key not in order]
        return {key: dumped[key] for key in order}

    def details(self) -> dict[str, JsonValue]:
        """`as_written` without the header keys (`v`, `ts`, `session_id`, `event`)."""
        return {k: v for k, v in self.as_written().items() if k not in HEADER_KEYS}


class _Known(_Record):
    ts: Stamp
    session_id: SessionId


class StartedEvent(_Known):
    """A workflow session started (a nested one names its parent)."""

    event: Literal["started"] = "started"
    job: str
    workflow: str
    goal: str | None = None
    instance_id: str | None = None
    agent_id: str | None = None
    parent_session_id: SessionId | None = None
    branch: str | None = None


class StepBegunEvent(_Known):
    """The session moved to a step (several for a concurrent group)."""

    event: Literal["step_begun"] = "step_begun"
    step_ids: list[str]
    entry_index: int | None = None


class OutputsSubmittedEvent(_Known):
    """The agent called `finished_step` with these outputs."""

    event: Literal["outputs_submitted"] = "outputs_submitted"
    step_ids: list[str]
    outputs: dict[str, str | list[str]] = {}
    notes: str | None = None


class ReviewVerdictEvent(_Known):
    """One reviewer verdict: one review of one step (or one target file) in one attempt."""

    event: Literal["review_verdict"] = "review_verdict"
    step_id: str
    review: str | None = None
    target_file: str | None = None
    passed: bool
    feedback: str | None = None
    criteria: list[CriterionVerdict] = []
    #: The gate attempt the verdict belongs to, counted from 1.
    attempt: int | None = None
    #: Set when no reviewer ran: the verdict was judged earlier (docs/quality-gate.md).
    reused_from: ReusedFrom | None = Field(default=None, exclude_if=unset)


class OverrideEvent(_Known):
    """The agent skipped the reviews with a reason."""

    event: Literal["override"] = "override"
    step_ids: list[str]
    reason: str


class NeedsWorkEvent(_Known):
    """An attempt failed the gate: the agent must revise."""

    event: Literal["needs_work"] = "needs_work"
    step_ids: list[str]
    attempt: int | None = None
    failed_reviews: int | None = None


class GoToStepEvent(_Known):
    """`go_to_step` moved the session back (or forward), clearing these steps' progress."""

    event: Literal["go_to_step"] = "go_to_step"
    from_step_ids: list[str] = []
    to_step_ids: list[str]
    cleared_step_ids: list[str] = []


class StepFinishedEvent(_Known):
    """A checkpoint was accepted under `verdict`, binding the hashes in `evidence`."""

    event: Literal["step_finished"] = "step_finished"
    step_ids: list[str]
    verdict: VerdictKind
    evidence: list[OutputEvidence] = []


class StaleEvidenceEvent(_Known):
    """Outputs of accepted steps changed since their checkpoint."""

    event: Literal["stale_evidence"] = "stale_evidence"
    step_ids: list[str]
    stale: list[StaleEvidence]


class UndeclaredChangesEvent(_Known):
    """Files changed during the step that no output declares."""

    event: Literal["undeclared_changes"] = "undeclared_changes"
    step_ids: list[str]
    files: list[str]
    strict: bool


class ApprovalRequestedEvent(_Known):
    """The step waits for a human's approval of the files in `shown`."""

    event: Literal["approval_requested"] = "approval_requested"
    step_ids: list[str]
    request_id: str
    prompt: str
    shown: list[ShownOutput] = []


class ApprovalEvent(_Known):
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
    shown: list[ShownOutput] = []
    #: The trusted approver whose key signed the decision; None: unsigned (the seal decided).
    signer: str | None = None

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


class AbortedEvent(_Known):
    """The session was abandoned."""

    event: Literal["aborted"] = "aborted"
    step_ids: list[str] = []
    reason: str


class CompletedEvent(_Known):
    """The workflow ran to its end."""

    event: Literal["completed"] = "completed"
    steps_completed: int | None = None


class ReviewUsageEvent(_Known):
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
    sources: list[str] = []

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


class ReviewStalledEvent(_Known):
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


class BudgetExhaustedEvent(_Known):
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


class ParkedEvent(_Known):
    """A headless run stopped for a person (`reason`: `awaiting_approval`,
    `attempts_exhausted` or `budget_exhausted`; docs/headless.md)."""

    event: Literal["parked"] = "parked"
    step_ids: list[str]
    reason: str
    request_id: str | None = None
    machine: str = ""


class ResumedEvent(_Known):
    """`deepwork run --resume` started an agent on the run again, on `machine` in the checkout
    `root` (`from_root`: the checkout that served it before, when another one did)."""

    event: Literal["resumed"] = "resumed"
    step_ids: list[str]
    machine: str
    root: str
    from_root: str | None = None


class OtherEvent(_Record):
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
    context = {_READING: True}
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
