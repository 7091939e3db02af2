"""What the dashboard pages show, read from the project's state files (docs/dashboard.md).

Every function here only reads: the sessions (`SessionStore`), their event logs (`read_events`),
the open approval requests (`ApprovalStore`) and the files shown for approval. Text in these views
is raw; the pages escape it.
"""

from __future__ import annotations

import contextlib
import os
from datetime import UTC, datetime
from enum import StrEnum
from pathlib import Path
from typing import Final

from deepwork_core import DeepWorkError, JobCatalog
from deepwork_core.base.error_codes import ErrorCode
from deepwork_core.base.errors import FileReadError, SessionError
from deepwork_core.base.fsutil import read_bytes_file
from deepwork_core.engine.fanout.instances import instance_state
from deepwork_core.evidence.hashes import sha256_file
from deepwork_core.jobs.discovery import parse_folder_list
from deepwork_core.jobs.graph import build_graph
from deepwork_core.state.approvals import ApprovalRecord, ApprovalRequest, ApprovalStore
from deepwork_core.state.event_kinds import EventRecord, ReviewUsageEvent, ReviewVerdictEvent
from deepwork_core.state.events import last_event_at, read_events
from deepwork_core.state.review_usage import ReviewUsage, sum_usage
from deepwork_core.state.sessions import Session, SessionStatus, SessionStore
from deepwork_core.state.store.approval_rows import undecided_requests
from deepwork_core.state.store.opening import existing_store
from deepwork_core.state.store.runs import ProjectRun, StoredRun, list_runs, project_runs
from pydantic import BaseModel, ConfigDict, Field

from deepwork_mcp.dashboard.graph_svg import StepState, graph_svg

#: The environment variable naming more job folders (as for `deepwork serve`).
ADDITIONAL_FOLDERS_ENV: Final = "DEEPWORK_ADDITIONAL_JOBS_FOLDERS"
#: A shown file larger than this is not previewed.
MAX_PREVIEW_BYTES: Final = 1024 * 1024
#: Characters of a text file the approval page shows.
PREVIEW_CHARS: Final = 4000
#: Characters of one timeline line.
SUMMARY_CHARS: Final = 300
#: Runs on one page of the list (newest first; `?page=2` shows the next ones).
RUNS_PER_PAGE: Final = 100


class RunStatus(StrEnum):
    """Where a run is, as the dashboard lists it."""

    ACTIVE = "active"
    AWAITING_APPROVAL = "awaiting approval"
    COMPLETED = "completed"
    ABORTED = "aborted"


class _View(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class RunRow(_View):
    """One session in the list of runs, with the runs it started nested under it."""

    session_id: str
    job: str
    workflow: str
    goal: str
    agent_id: str | None
    steps: list[str]
    status: RunStatus
    started_at: datetime
    #: When the session's event log was last written (None: no log).
    last_event_at: datetime | None
    parent_session_id: str | None
    children: list[RunRow] = Field(default_factory=list)


class TimelineRow(_View):
    at: datetime | None
    kind: str
    summary: str


class OutputRow(_View):
    """One accepted output file with the verdict that covers it and whether it went stale."""

    step_id: str
    output: str
    path: str
    sha256: str | None
    verdict: str
    current_sha256: str | None
    stale: bool


class FilePreview(_View):
    output: str
    path: str
    sha256: str | None
    #: The start of the file when it is UTF-8 text; None otherwise (`note` says why).
    text: str | None
    note: str | None = None


class ApprovalView(_View):
    """An open approval request: what the human approves."""

    session_id: str
    request_id: str
    job: str
    workflow: str
    step_ids: list[str]
    prompt: str
    requested_at: datetime
    files: list[FilePreview]
    #: Set when the request is not the one the server opened (its seal does not verify): then
    #: nothing of it is shown and it cannot be decided.
    problem: str | None = None
    #: Another project of a shared store (docs/team.md): its id, and `root on machine`.
    project_id: str | None = None
    project: str | None = None


class InstanceRow(_View):
    """One instance of a fanned-out step of the run (docs/fan-out.md)."""

    step_id: str
    index: int
    item: str
    session_id: str
    state: str
    abort_reason: str | None = None


class RunDetail(_View):
    run: RunRow
    inputs: dict[str, str | list[str]]
    abort_reason: str | None
    #: The workflow graph as SVG, or None (`graph_problem` says why).
    graph_svg: str | None
    graph_problem: str | None = None
    timeline: list[TimelineRow]
    timeline_problem: str | None = None
    outputs: list[OutputRow]
    reviews: list[ReviewVerdictEvent]
    #: The review calls this session's log records (a top-level run's log holds its nested
    #: runs' calls too), and their totals.
    review_calls: list[ReviewUsageEvent]
    review_usage: ReviewUsage
    approval: ApprovalView | None
    #: The instances of the run's fanned-out steps, by step then item order.
    instances: list[InstanceRow] = Field(default_factory=list)


def run_status(session: Session) -> RunStatus:
    if session.status is SessionStatus.ACTIVE:
        if session.pending_approval is not None:
            return RunStatus.AWAITING_APPROVAL
        return RunStatus.ACTIVE
    return RunStatus(session.status.value)


def all_sessions(store: SessionStore) -> list[Session]:
    """Every session of the project (active and finished), newest start first."""
    ids = store.session_ids()
    sessions: list[Session] = []
    with store.transaction() as tx:
        for session_id in ids:
            with contextlib.suppress(SessionError):  # pruned meanwhile, or unreadable
                sessions.append(tx.load(session_id))
    return sorted(sessions, key=lambda s: s.started_at, reverse=True)


def _last_event_at(project_root: Path, session_id: str) -> datetime | None:
    return last_event_at(project_root, session_id)


def run_row(project_root: Path, session: Session) -> RunRow:
    return RunRow(
        session_id=session.session_id,
        job=session.job_name,
        workflow=session.workflow_name,
        goal=session.goal,
        agent_id=session.agent_id,
        steps=list(session.current_step_ids),
        status=run_status(session),
        started_at=session.started_at,
        last_event_at=_last_event_at(project_root, session.session_id),
        parent_session_id=session.parent_session_id,
    )


def run_tree(store: SessionStore, *, limit: int = RUNS_PER_PAGE, offset: int = 0) -> list[RunRow]:
    """One page of runs, newest start first, each nested run under its parent when both are on
    the page (else on top): one indexed query of the store's list columns (`project_runs`), no
    session document read. Instances of a fanned-out step are listed on their parent's page."""
    db = existing_store(store.project_root)
    if db is None:
        return []
    with db.read() as tx:
        runs = project_runs(tx, db.project.project_id, limit=limit, offset=offset)
    known = {run.session_id for run in runs}
    children: dict[str, list[ProjectRun]] = {}
    roots: list[ProjectRun] = []
    for run in runs:
        parent = run.parent_session_id
        if parent is not None and parent in known and parent != run.session_id:
            children.setdefault(parent, []).append(run)
        else:
            roots.append(run)

    def build(run: ProjectRun, depth: int) -> RunRow:
        kids = children.get(run.session_id, []) if depth < 32 else []
        return _listed_row(run, [build(kid, depth + 1) for kid in kids])

    return [build(run, 0) for run in roots]


def _listed_row(run: ProjectRun, children: list[RunRow]) -> RunRow:
    active = RunStatus.AWAITING_APPROVAL if run.awaiting_approval else RunStatus.ACTIVE
    status = active if run.status == SessionStatus.ACTIVE.value else RunStatus(run.status)
    last = run.last_event_at
    return RunRow(
        session_id=run.session_id,
        job=run.job,
        workflow=run.workflow,
        goal=run.goal,
        agent_id=run.agent,
        steps=run.steps,
        status=status,
        started_at=datetime.fromtimestamp(run.started_at, UTC),
        last_event_at=datetime.fromtimestamp(last, UTC) if last is not None else None,
        parent_session_id=run.parent_session_id,
        children=children,
    )


def step_states(session: Session) -> dict[str, StepState]:
    states: dict[str, StepState] = {}
    for step_id, record in session.step_progress.items():
        states[step_id] = StepState.DONE if record.completed_at else StepState.STARTED
    if session.status is SessionStatus.ACTIVE:
        for step_id in session.current_step_ids:
            states[step_id] = StepState.CURRENT
    return states


def instance_rows(store: SessionStore, session: Session) -> list[InstanceRow]:
    """The instances `session`'s fanned-out steps started, by step then item order."""
    rows = []
    for other in all_sessions(store):
        of = other.instance_of
        if of is None or other.parent_session_id != session.session_id:
            continue
        rows.append(
            InstanceRow(
                step_id=other.started_for_step or other.current_step_id,
                index=of.index,
                item=of.item,
                session_id=other.session_id,
                state=instance_state(other),
                abort_reason=other.abort_reason,
            )
        )
    return sorted(rows, key=lambda row: (row.step_id, row.index))


def fan_counts(rows: list[InstanceRow]) -> dict[str, dict[str, int]]:
    """Each fanned-out step's instances by state."""
    counts: dict[str, dict[str, int]] = {}
    for row in rows:
        by_state = counts.setdefault(row.step_id, {})
        by_state[row.state] = by_state.get(row.state, 0) + 1
    return counts


def _graph(
    project_root: Path, session: Session, counts: dict[str, dict[str, int]] | None = None
) -> tuple[str | None, str | None]:
    additional = parse_folder_list(os.environ.get(ADDITIONAL_FOLDERS_ENV))
    try:
        catalog = JobCatalog.for_project(
            project_root, [p.expanduser().resolve() for p in additional]
        )
        graph = build_graph(catalog.get(session.job_name).definition, session.workflow_name)
    except DeepWorkError as exc:
        return None, f"{exc.code}: {exc.message}"
    return graph_svg(graph, step_states(session), counts), None


def _summary(event: EventRecord) -> str:
    fields = event.as_written()
    for key in ("v", "ts", "session_id", "event"):
        fields.pop(key, None)
    text = "  ".join(f"{key}={value}" for key, value in fields.items())
    return text if len(text) <= SUMMARY_CHARS else text[: SUMMARY_CHARS - 1] + "…"


def _timeline(events: list[EventRecord]) -> list[TimelineRow]:
    return [TimelineRow(at=e.ts, kind=str(e.event), summary=_summary(e)) for e in events]


def _outputs(project_root: Path, session: Session) -> list[OutputRow]:
    rows: list[OutputRow] = []
    for item in session.evidence:
        current = sha256_file(project_root, item.path)
        rows.append(
            OutputRow(
                step_id=item.step_id,
                output=item.output,
                path=item.path,
                sha256=item.sha256,
                verdict=item.verdict.value,
                current_sha256=current,
                stale=current != item.sha256,
            )
        )
    return rows


def run_detail(
    store: SessionStore, session_id: str, approvals: ApprovalStore | None = None
) -> RunDetail:
    """Everything the run page shows. Raises `session.not_found` for an unknown session."""
    session = store.load(session_id)
    root = store.project_root
    instances = instance_rows(store, session)
    svg, graph_problem = _graph(root, session, fan_counts(instances))
    timeline_problem = None
    try:
        events = read_events(root, session_id)
    except DeepWorkError as exc:
        events, timeline_problem = [], f"{exc.code}: {exc.message}"
    return RunDetail(
        run=run_row(root, session),
        inputs=dict(session.inputs),
        abort_reason=session.abort_reason,
        graph_svg=svg,
        graph_problem=graph_problem,
        timeline=_timeline(events),
        timeline_problem=timeline_problem,
        outputs=_outputs(root, session),
        reviews=[e for e in events if isinstance(e, ReviewVerdictEvent)],
        review_calls=[e for e in events if isinstance(e, ReviewUsageEvent)],
        review_usage=sum_usage(events),
        approval=pending_approval(approvals or ApprovalStore(root), session),
        instances=instances,
    )


def preview(project_root: Path, relative: str) -> tuple[str | None, str | None]:
    """(the start of the file as text, None) or (None, why there is no preview)."""
    path = project_root / relative
    try:
        path.resolve().relative_to(project_root.resolve())
    except (ValueError, OSError):
        return None, "outside the project: not shown"
    try:
        data = read_bytes_file(path, limit=MAX_PREVIEW_BYTES, follow_symlinks=False)
    except FileReadError as exc:
        return None, f"no preview ({exc.code})"
    if b"\0" in data[:8192]:
        return None, "binary file: no preview"
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return None, "not UTF-8 text: no preview"
    if len(text) > PREVIEW_CHARS:
        return text[:PREVIEW_CHARS], f"first {PREVIEW_CHARS} characters of {len(text)}"
    return text, None


def pending_approval(approvals: ApprovalStore, session: Session) -> ApprovalView | None:
    """The open, undecided approval request of `session`, with previews of its files.

    With the project's key (`approvals.key`) the request is shown only when its seal verifies:
    what the human sees is what the server asked, never an agent's edit of the file.
    """
    if session.pending_approval is None or session.status is not SessionStatus.ACTIVE:
        return None
    try:
        record = approvals.load(session.session_id)
    except DeepWorkError:
        return None
    if record is None or record.decision is not None:
        return None
    request = record.request
    view = ApprovalView(
        session_id=request.session_id,
        request_id=request.request_id,
        job=session.job_name,
        workflow=session.workflow_name,
        step_ids=list(session.current_step_ids),
        prompt="",
        requested_at=request.requested_at,
        files=[],
    )
    problem = _request_problem(approvals, record)
    if problem is not None:
        return view.model_copy(update={"problem": problem})
    return view.model_copy(
        update={
            "step_ids": list(request.step_ids),
            "prompt": request.prompt,
            "files": _previews(approvals, request),
        }
    )


def _previews(approvals: ApprovalStore, request: ApprovalRequest) -> list[FilePreview]:
    """The shown files as this checkout holds them, only where they have the asked-about bytes."""
    files = []
    for shown in request.shown:
        text, note = preview(approvals.project_root, shown.path)
        now = sha256_file(approvals.project_root, shown.path)
        if now != shown.sha256:  # never show other bytes under the hash that was asked about
            text, note = None, _changed_note(approvals, now)
        files.append(
            FilePreview(
                output=shown.output, path=shown.path, sha256=shown.sha256, text=text, note=note
            )
        )
    return files


def other_projects_approvals(approvals: ApprovalStore) -> list[ApprovalView]:
    """The open, undecided requests of the other projects of a shared store (docs/team.md),
    newest first; none on a store of this project's own. Their seals are the serving
    machines' to check; the files are previewed where this checkout has the same bytes."""
    if not approvals.trusted.shared:
        return []
    own = approvals.project_id
    with approvals.store.read() as tx:
        found = [r for r in undecided_requests(tx) if r.project_id != own]
    views = []
    for row in found:
        try:
            request = ApprovalRequest.model_validate_json(row.body)
        except ValueError:
            continue  # not a request: nothing a human could decide
        views.append(
            ApprovalView(
                session_id=request.session_id,
                request_id=request.request_id,
                job=request.job_name,
                workflow=request.workflow_name,
                step_ids=list(request.step_ids),
                prompt=request.prompt,
                requested_at=request.requested_at,
                files=_previews(approvals, request),
                project_id=row.project_id,
                project=f"{row.project_root} on {row.machine}",
            )
        )
    return views


def _changed_note(approvals: ApprovalStore, now: str | None) -> str:
    where = "this checkout" if approvals.trusted.shared else "the project"
    state = f"sha256 {now[:12]}" if now else "missing"
    return (
        f"{where} holds other bytes than the ones asked about (now {state}): not shown; "
        "an approval counts only for the bytes asked about"
    )


def _request_problem(approvals: ApprovalStore, record: ApprovalRecord) -> str | None:
    """Why the request cannot be shown as the server's; None when it can (or cannot be told
    here: no key, or a shared store whose requests the serving machine sealed)."""
    if approvals.key is None or approvals.trusted.shared:
        return None
    try:
        why = approvals.why_request_unverified(record)
    except DeepWorkError as exc:
        return f"{exc.code}: {exc.message}"
    if why is None:
        return None
    return (
        f"{ErrorCode.APPROVAL_REQUEST_UNVERIFIED}: {why}. The agent must call finished_step again."
    )


def open_approvals(
    store: SessionStore, approvals: ApprovalStore | None = None
) -> list[ApprovalView]:
    """Every open approval request of the project, newest session first, then those of the
    other projects of a shared store."""
    approvals = approvals or ApprovalStore(store.project_root)
    views = (pending_approval(approvals, s) for s in all_sessions(store))
    return [view for view in views if view is not None] + other_projects_approvals(approvals)


def all_runs(store: SessionStore, limit: int = 1000) -> list[StoredRun]:
    """Every run of every project in the project's store, newest first (docs/team.md)."""
    found = existing_store(store.project_root)
    if found is None:
        return []
    with found.read() as tx:
        return list_runs(tx, limit=limit)
