"""The one read model of runs: what every viewer shows of a workflow session
(the dashboard, `deepwork report --html`, `deepwork status`; docs/dashboard.md).

`list_runs` lists every session of a project as a `Run`, newest first; `run_tree` nests the runs a
step started under it. `run_detail` reads one session as a `RunDetail`: its summary first
(outcome, steps done, every verdict labelled as what it is, every approval, review cost, branch),
its accepted outputs with whether they went stale, and its timeline as sentences. The event log
is read from the store in bounded memory and time (`scan_events`): the timeline holds the
newest `max_events` events and says how many older ones it left out; the summary still counts
every verdict, approval and review call of the log. A run whose background reviews are still
queued or running is `reviewing` (that answer records nothing, and is never an attempt).
Everything here only reads, through the public state APIs (`SessionStore`, `scan_events`,
`session_marks`, `sessions_with_live_jobs`), so it does not care which database keeps the data.
"""

from __future__ import annotations

import contextlib
from datetime import UTC, datetime
from enum import StrEnum
from pathlib import Path
from typing import Final

from pydantic import BaseModel, ConfigDict, Field

from deepwork_core.base.errors import DeepWorkError, SessionError
from deepwork_core.base.identifiers import SessionId
from deepwork_core.evidence.hashes import sha256_file
from deepwork_core.evidence.verdicts import VerdictKind
from deepwork_core.state.event_kinds import (
    ApprovalEvent,
    EventName,
    EventRecord,
    OverrideEvent,
    ReviewUsageEvent,
    ReviewVerdictEvent,
    StepFinishedEvent,
)
from deepwork_core.state.events import EventScan, last_event_at, scan_events, session_marks
from deepwork_core.state.fan_out import InstanceOf
from deepwork_core.state.read_model.timeline import (
    VERDICT_LABELS,
    TimelineEntry,
    clip,
    timeline_entry,
)
from deepwork_core.state.sessions import Session, SessionStatus, SessionStore
from deepwork_core.state.store.port import Store
from deepwork_core.state.store.review_jobs import sessions_with_live_jobs
from deepwork_core.state.store.runs import ProjectRun, project_runs
from deepwork_core.state.usage.pair import RunUsage
from deepwork_core.state.usage.totals import sum_usage

#: Events the timeline of one run page shows (the newest); older ones are counted, not shown.
DEFAULT_MAX_EVENTS: Final = 500
#: Reviewer verdicts and review calls listed in full on one run page (the newest).
MAX_LISTED: Final = 200
#: Kinds the summary reads from the whole log, however long it is.
SUMMARY_KINDS: Final = frozenset(
    {
        EventName.STEP_FINISHED,
        EventName.OVERRIDE,
        EventName.REVIEW_VERDICT,
        EventName.APPROVAL,
        EventName.REVIEW_USAGE,
    }
)
_USAGE: Final = frozenset({EventName.REVIEW_USAGE})
#: Runs whose review totals `run_cost` remembers.
MAX_CACHED_COSTS: Final = 10_000
#: How deep `run_tree` nests runs.
MAX_NESTING: Final = 32


class RunStatus(StrEnum):
    """Where a run is, as the viewers list it."""

    ACTIVE = "active"
    #: Active, with background reviews still queued or running (docs/quality-gate.md).
    REVIEWING = "reviewing"
    AWAITING_APPROVAL = "awaiting approval"
    COMPLETED = "completed"
    ABORTED = "aborted"


class _View(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Run(_View):
    """One session in a list of runs, with the runs it started nested under it (`run_tree`)."""

    session_id: SessionId
    job: str
    workflow: str
    goal: str
    agent_id: str | None
    steps: list[str]
    status: RunStatus
    started_at: datetime
    finished_at: datetime | None
    #: When the session's event log was last written (None: no log).
    last_event_at: datetime | None
    parent_session_id: SessionId | None
    branch: str | None
    #: The branch the repository was on when the run switched to `branch`.
    started_from_branch: str | None
    abort_reason: str | None
    #: Set on an instance of a fanned-out step: the item it runs (docs/fan-out.md).
    instance_of: InstanceOf | None = None
    #: What the reviews of the run cost, for a top-level run when asked (`list_runs`); a nested
    #: run's reviews are counted in its top-level run's log.
    review_usage: RunUsage | None = None
    children: list[Run] = Field(default_factory=list)


class VerdictLine(_View):
    """How one checkpoint was accepted, labelled as what it is (never "passed" unless a
    reviewer passed it), with the reason given."""

    at: datetime
    step_ids: list[str]
    kind: VerdictKind
    label: str
    reason: str | None


class ApprovalLine(_View):
    at: datetime
    step_ids: list[str]
    approved: bool
    actor: str
    channel: str
    comment: str | None
    #: The trusted approver who signed; None: unsigned.
    signer: str | None = None
    #: Who decided in a person's words (`event_kinds.decided_by`).
    decided_by: str = ""


class RunSummary(_View):
    """What a reader wants first: how the run ended and on what it rests."""

    outcome: str
    steps_done: int
    verdicts: list[VerdictLine]
    approvals: list[ApprovalLine]
    review_usage: RunUsage


class OutputLine(_View):
    """One accepted output file with the verdict that covers it and whether it went stale."""

    step_id: str
    output: str
    path: str
    sha256: str | None
    verdict: VerdictKind
    current_sha256: str | None
    stale: bool


class RunDetail(_View):
    run: Run
    inputs: dict[str, str | list[str]]
    summary: RunSummary
    outputs: list[OutputLine]
    #: The newest reviewer verdicts and review calls (at most MAX_LISTED of each).
    reviews: list[ReviewVerdictEvent]
    review_calls: list[ReviewUsageEvent]
    #: The newest events, oldest first, and how many older ones were left out.
    timeline: list[TimelineEntry]
    events_total: int = 0
    events_omitted: int = 0
    #: Why the log could not be read (the summary then rests on the session file alone).
    timeline_problem: str | None = None


def run_status(session: Session, reviewing: bool = False) -> RunStatus:
    """Where the session is; `reviewing`: it has background reviews queued or running."""
    return _status(session.status.value, session.pending_approval is not None, reviewing)


def _status(stored: str, awaiting_approval: bool, reviewing: bool) -> RunStatus:
    if stored != SessionStatus.ACTIVE.value:
        return RunStatus(stored)
    if awaiting_approval:
        return RunStatus.AWAITING_APPROVAL
    return RunStatus.REVIEWING if reviewing else RunStatus.ACTIVE


def reviewing_sessions(store: Store) -> set[str]:
    """The sessions whose background reviews are still queued or running."""
    return sessions_with_live_jobs(store)


def _stamp(mark: tuple[int, float] | None) -> datetime | None:
    return datetime.fromtimestamp(mark[1], UTC) if mark is not None else None


def run_of(
    project_root: Path,
    session: Session,
    *,
    last_event_at: datetime | None = None,
    reviewing: bool = False,
) -> Run:
    """`session` as a run (`last_event_at`: when its newest event was logged)."""
    return Run(
        session_id=session.session_id,
        job=session.job_name,
        workflow=session.workflow_name,
        goal=session.goal,
        agent_id=session.agent_id,
        steps=list(session.current_step_ids),
        status=run_status(session, reviewing),
        started_at=session.started_at,
        finished_at=session.completed_at,
        last_event_at=last_event_at,
        parent_session_id=session.parent_session_id,
        branch=session.branch_name,
        started_from_branch=session.previous_branch,
        abort_reason=session.abort_reason,
        instance_of=session.instance_of,
    )


def load_sessions(store: SessionStore) -> list[Session]:
    """Every session of the project that can be read, newest start first."""
    ids = store.session_ids()
    if not ids:
        return []
    sessions: list[Session] = []
    with store.transaction() as tx:
        for session_id in ids:
            with contextlib.suppress(SessionError):
                sessions.append(tx.load(session_id))
    sessions.sort(key=lambda s: s.started_at, reverse=True)
    return sessions


def list_runs(store: SessionStore, *, with_usage: bool = False) -> list[Run]:
    """Every session of the project (active and finished), newest start first, each top-level
    run with its review cost when `with_usage`. A session that cannot be read (pruned
    meanwhile, or corrupt) is left out; `deepwork log` reports it."""
    root, db = store.project_root, store.store
    sessions = load_sessions(store)
    if not sessions:
        return []
    marks, reviewing = session_marks(db), reviewing_sessions(db)
    runs = [
        run_of(
            root,
            s,
            last_event_at=_stamp(marks.get(s.session_id)),
            reviewing=s.session_id in reviewing,
        )
        for s in sessions
    ]
    if not with_usage:
        return runs
    usage = session_marks(db, kind=EventName.REVIEW_USAGE)
    return [
        run
        if run.parent_session_id is not None
        else run.model_copy(
            update={"review_usage": run_cost(db, run.session_id, usage.get(run.session_id))}
        )
        for run in runs
    ]


def page_runs(store: SessionStore, *, limit: int, offset: int = 0) -> list[Run]:
    """One page of the project's runs, newest start first, from the store's list columns (one
    indexed query; no session document is read), each nested run under its parent when both are
    on the page and each top-level run with its review cost. `for_each` instances are left out
    (their parent's page lists them)."""
    db = store.store
    with db.read() as tx:
        rows = project_runs(tx, db.project.project_id, limit=limit, offset=offset)
    if not rows:
        return []
    reviewing = reviewing_sessions(db)
    usage = session_marks(db, kind=EventName.REVIEW_USAGE)
    runs = []
    for row in rows:
        run = _listed_run(row, reviewing=row.session_id in reviewing)
        if run.parent_session_id is None:
            cost = run_cost(db, run.session_id, usage.get(run.session_id))
            run = run.model_copy(update={"review_usage": cost})
        runs.append(run)
    return run_tree(runs)


def _listed_run(row: ProjectRun, *, reviewing: bool) -> Run:
    """A run from its list columns; what the list does not show (when it finished, its
    branches, why it was aborted) is not in them and stays None: `run_detail` has it."""
    status = _status(row.status, row.awaiting_approval, reviewing)
    last = row.last_event_at
    return Run(
        session_id=row.session_id,
        job=row.job,
        workflow=row.workflow,
        goal=row.goal,
        agent_id=row.agent,
        steps=row.steps,
        status=status,
        started_at=datetime.fromtimestamp(row.started_at, UTC),
        finished_at=None,
        last_event_at=datetime.fromtimestamp(last, UTC) if last is not None else None,
        parent_session_id=row.parent_session_id,
        branch=None,
        started_from_branch=None,
        abort_reason=None,
    )


#: (newest review call's number, totals) per store, project and run: a run list is redrawn every
#: second, and its review calls rarely change.
_COSTS: dict[tuple[str, str, str], tuple[int, RunUsage]] = {}


def run_cost(
    store: Store, session_id: SessionId, mark: tuple[int, float] | None
) -> RunUsage | None:
    """The review totals of a run (None when its log cannot be read); `mark` is its newest
    review call's from `session_marks` (None: it has none), and the calls are read again only
    when it changed."""
    if mark is None:
        return RunUsage()
    key = (store.display, store.project.project_id, session_id)
    cached = _COSTS.get(key)
    if cached is not None and cached[0] == mark[0]:
        return cached[1]
    try:
        scan = scan_events(store, session_id, keep_last=0, kinds=_USAGE)
    except DeepWorkError:
        return None
    usage = sum_usage(scan.selected)
    if len(_COSTS) > MAX_CACHED_COSTS:
        _COSTS.clear()
    _COSTS[key] = (mark[0], usage)
    return usage


def run_tree(runs: list[Run]) -> list[Run]:
    """`runs` with each nested run under its parent (an orphan stays on top), order kept."""
    known = {run.session_id for run in runs}
    children: dict[str, list[Run]] = {}
    roots: list[Run] = []
    for run in runs:
        parent = run.parent_session_id
        if parent is not None and parent in known and parent != run.session_id:
            children.setdefault(parent, []).append(run)
        else:
            roots.append(run)

    def build(run: Run, depth: int) -> Run:
        kids = children.get(run.session_id, []) if depth < MAX_NESTING else []
        return run.model_copy(update={"children": [build(k, depth + 1) for k in kids]})

    return [build(run, 0) for run in roots]


def _outcome(run: Run) -> str:
    steps = ", ".join(run.steps)
    if run.status is RunStatus.COMPLETED:
        return "completed"
    if run.status is RunStatus.ABORTED:
        return f"aborted: {clip(run.abort_reason or 'no reason given')}"
    if run.status is RunStatus.AWAITING_APPROVAL:
        return f"waiting for a human to approve step {steps}"
    if run.status is RunStatus.REVIEWING:
        return f"in progress, at step {steps}, its reviews still running"
    return f"in progress, at step {steps}"


def _verdicts(events: list[EventRecord]) -> list[VerdictLine]:
    """One line per accepted checkpoint, with its reason: the override's, or the passing
    reviews' feedback, or why nothing was reviewed."""
    lines: list[VerdictLine] = []
    override: dict[str, str] = {}
    feedback: dict[str, list[str]] = {}
    for event in events:
        if isinstance(event, OverrideEvent):
            override.update(dict.fromkeys(event.step_ids, event.reason))
        elif isinstance(event, ReviewVerdictEvent) and event.passed and event.feedback:
            feedback.setdefault(event.step_id, []).append(event.feedback)
        elif isinstance(event, StepFinishedEvent):
            steps = event.step_ids
            given = next((e.override_reason for e in event.evidence if e.override_reason), None)
            reason = given or {
                VerdictKind.OVERRIDE: next((override[s] for s in steps if s in override), None),
                VerdictKind.REVIEWER: "; ".join(f for s in steps for f in feedback.get(s, [])),
                VerdictKind.SELF_REVIEW: "the agent followed the review instructions itself",
                VerdictKind.UNREVIEWED: "no review applies to these outputs",
            }.get(event.verdict)
            lines.append(
                VerdictLine(
                    at=event.ts,
                    step_ids=list(steps),
                    kind=event.verdict,
                    label=VERDICT_LABELS[event.verdict],
                    reason=clip(reason) if reason else None,
                )
            )
            for step in steps:
                override.pop(step, None)
                feedback.pop(step, None)
    return lines


def _approvals(events: list[EventRecord]) -> list[ApprovalLine]:
    return [
        ApprovalLine(
            at=e.decided_at,
            step_ids=list(e.step_ids),
            approved=e.approved,
            actor=e.actor,
            channel=e.channel,
            comment=e.comment,
            signer=e.signer,
            decided_by=e.decided_by,
        )
        for e in events
        if isinstance(e, ApprovalEvent)
    ]


def _outputs(project_root: Path, session: Session) -> list[OutputLine]:
    lines: list[OutputLine] = []
    for item in session.evidence:
        current = sha256_file(project_root, item.path)
        lines.append(
            OutputLine(
                step_id=item.step_id,
                output=item.output,
                path=item.path,
                sha256=item.sha256,
                verdict=item.verdict,
                current_sha256=current,
                stale=current != item.sha256,
            )
        )
    return lines


def run_detail(
    store: SessionStore, session_id: SessionId, *, max_events: int = DEFAULT_MAX_EVENTS
) -> RunDetail:
    """Everything a run page shows. Raises `session.not_found` for an unknown session."""
    session = store.load(session_id)
    root, db = store.project_root, store.store
    problem = None
    try:
        scan = scan_events(db, session_id, keep_last=max_events, kinds=SUMMARY_KINDS)
    except DeepWorkError as exc:
        scan, problem = EventScan(0, [], []), f"{exc.code}: {exc.message}"
    last = last_event_at(db, session_id) if scan.total else None
    reviewing = session_id in reviewing_sessions(db)
    run = run_of(root, session, last_event_at=last, reviewing=reviewing)
    summary = RunSummary(
        outcome=_outcome(run),
        steps_done=sum(1 for record in session.step_progress.values() if record.completed_at),
        verdicts=_verdicts(scan.selected),
        approvals=_approvals(scan.selected),
        review_usage=sum_usage(scan.selected),
    )
    return RunDetail(
        run=run,
        inputs=dict(session.inputs),
        summary=summary,
        outputs=_outputs(root, session),
        reviews=[e for e in scan.selected if isinstance(e, ReviewVerdictEvent)][-MAX_LISTED:],
        review_calls=[e for e in scan.selected if isinstance(e, ReviewUsageEvent)][-MAX_LISTED:],
        timeline=[timeline_entry(event) for event in scan.recent],
        events_total=scan.total,
        events_omitted=scan.omitted,
        timeline_problem=problem,
    )
