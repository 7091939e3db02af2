"""The one read model of runs: what every viewer shows of a workflow session
(the dashboard, `deepwork report --html`, `deepwork status`; docs/dashboard.md).

`list_sessions` lists every session of a project as a `SessionView`, newest first;
`session_tree` nests the sessions a step started under it, so that each top-level session shows
its whole run; one session in full is `detail`'s. A session whose background reviews are still
queued or running is `reviewing` (that answer records nothing, and is never an attempt).
Everything here only reads, through the public state APIs (`SessionStore`, `scan_events`,
`session_marks`, `sessions_with_live_jobs`), so it does not care which database keeps the data.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime
from enum import StrEnum
from pathlib import Path
from typing import Final

from pydantic import BaseModel, ConfigDict, Field

from deepwork_core.base.errors import SessionError
from deepwork_core.base.identifiers import SessionId
from deepwork_core.state.events import session_marks
from deepwork_core.state.session_model import InstanceOf
from deepwork_core.state.sessions import Session, SessionStatus, SessionStore
from deepwork_core.state.store.port import Store
from deepwork_core.state.store.tables.review_jobs import sessions_with_live_jobs
from deepwork_core.state.store.tables.session_lists import ListedSession, project_session_rows
from deepwork_core.state.store.tables.usage_rows import usage_of
from deepwork_core.state.usage.pair import RunUsage

#: How deep `session_tree` nests sessions.
MAX_NESTING: Final = 32


class ListedStatus(StrEnum):
    """Where a session is, as the viewers list it."""

    ACTIVE = "active"
    #: Active, with background reviews still queued or running (docs/quality-gate.md).
    REVIEWING = "reviewing"
    AWAITING_APPROVAL = "awaiting approval"
    #: A headless run stopped for a person (docs/headless.md).
    PARKED = "parked"
    COMPLETED = "completed"
    ABORTED = "aborted"


class _View(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class SessionView(_View):
    """One session as a list shows it, with the sessions it started nested under it
    (`session_tree`): a top-level session with its whole run."""

    session_id: SessionId
    job: str
    workflow: str
    goal: str
    #: What tells this run from the job's other runs (`start_workflow`'s `instance_id`), when
    #: given; None on a list row (its columns do not hold it).
    instance_id: str | None = None
    agent_id: str | None
    #: The steps it is at; a finished run is at none (`status` says how it ended).
    steps: list[str]
    status: ListedStatus
    started_at: datetime
    finished_at: datetime | None
    #: When the session's event log was last written (None: no log).
    last_event_at: datetime | None
    parent_session_id: SessionId | None
    branch: str | None
    #: The branch the repository was on when the run switched to `branch`.
    started_from_branch: str | None
    #: The commit HEAD pointed at when the run started, as its receipt records it
    #: (docs/verify.md); None outside git and on a list row.
    start_commit: str | None = None
    abort_reason: str | None
    #: Set on an instance of a fanned-out step: the item it runs (docs/fan-out.md).
    instance_of: InstanceOf | None = None
    #: What the reviews of the run cost, for a top-level session when asked (`list_sessions`); a
    #: nested session's reviews are counted in its run's log.
    review_usage: RunUsage | None = None
    children: list[SessionView] = Field(default_factory=list)
    #: Why the store's row of the session does not read (a list shows it as bad; its page says
    #: more).
    problem: str | None = None


def listed_status(session: Session, reviewing: bool = False) -> ListedStatus:
    """Where the session is; `reviewing`: it has background reviews queued or running."""
    if session.status is SessionStatus.ACTIVE and session.parked is not None:
        return ListedStatus.PARKED
    return _status(session.status.value, session.pending_approval is not None, reviewing)


def _status(stored: str, awaiting_approval: bool, reviewing: bool) -> ListedStatus:
    if stored != SessionStatus.ACTIVE.value:
        return ListedStatus(stored)
    if awaiting_approval:
        return ListedStatus.AWAITING_APPROVAL
    return ListedStatus.REVIEWING if reviewing else ListedStatus.ACTIVE


def reviewing_sessions(store: Store) -> set[str]:
    """The sessions whose background reviews are still queued or running."""
    return sessions_with_live_jobs(store)


def _stamp(mark: tuple[int, float] | None) -> datetime | None:
    return datetime.fromtimestamp(mark[1], UTC) if mark is not None else None


def session_view(
    project_root: Path,
    session: Session,
    *,
    last_event_at: datetime | None = None,
    reviewing: bool = False,
) -> SessionView:
    """`session` as a list shows it (`last_event_at`: when its newest event was logged)."""
    status = listed_status(session, reviewing)
    return SessionView(
        session_id=session.session_id,
        job=session.job_name,
        workflow=session.workflow_name,
        goal=session.goal,
        instance_id=session.instance_id,
        agent_id=session.agent_id,
        steps=current_steps(status, session.current_step_ids),
        status=status,
        started_at=session.started_at,
        finished_at=session.completed_at,
        last_event_at=last_event_at,
        parent_session_id=session.parent_session_id,
        branch=session.branch_name,
        started_from_branch=session.previous_branch,
        start_commit=session.start_commit,
        abort_reason=session.abort_reason,
        instance_of=session.instance_of,
    )


#: A run in these is at no step any more.
FINISHED: Final = frozenset({ListedStatus.COMPLETED, ListedStatus.ABORTED})


def current_steps(status: ListedStatus, steps: Iterable[str]) -> list[str]:
    """The steps a run in `status` is at: none once it completed or was aborted (its document
    and list columns keep the last step it was at, which is not where it is)."""
    return [] if status in FINISHED else list(steps)


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


def list_sessions(store: SessionStore, *, with_usage: bool = False) -> list[SessionView]:
    """Every session of the project (active and finished), newest start first, each top-level
    run with its review cost when `with_usage`. A session that cannot be read (pruned
    meanwhile, or corrupt) is left out; `deepwork log` reports it."""
    root, db = store.project_root, store.store
    sessions = load_sessions(store)
    if not sessions:
        return []
    marks, reviewing = session_marks(db), reviewing_sessions(db)
    runs = [
        session_view(
            root,
            s,
            last_event_at=_stamp(marks.get(s.session_id)),
            reviewing=s.session_id in reviewing,
        )
        for s in sessions
    ]
    if not with_usage:
        return runs
    usage = run_costs(db, [run.session_id for run in runs if run.parent_session_id is None])
    return [
        run
        if run.parent_session_id is not None
        else run.model_copy(update={"review_usage": usage.get(run.session_id, RunUsage())})
        for run in runs
    ]


def page_sessions(store: SessionStore, *, limit: int, offset: int = 0) -> list[SessionView]:
    """One page of the project's runs, newest start first, from the store's list columns (one
    indexed query; no session document is read), each nested run under its parent when both are
    on the page and each top-level run with its review cost. `for_each` instances are left out
    (their parent's page lists them)."""
    db = store.store
    with db.read() as tx:
        rows = project_session_rows(tx, db.project.project_id, limit=limit, offset=offset)
    if not rows:
        return []
    reviewing = reviewing_sessions(db)
    tops = [row.session_id for row in rows if row.parent_session_id is None]
    usage = run_costs(db, tops)
    runs = []
    for row in rows:
        run = _listed_session(row, reviewing=row.session_id in reviewing)
        if run.parent_session_id is None:
            cost = usage.get(run.session_id, RunUsage())
            run = run.model_copy(update={"review_usage": cost})
        runs.append(run)
    return session_tree(runs)


def _listed_session(row: ListedSession, *, reviewing: bool) -> SessionView:
    """A run from its list columns; what the list does not show (when it finished, its
    branches, why it was aborted) is not in them and stays None: `session_detail` has it."""
    status = _status(row.status, row.awaiting_approval, reviewing)
    last = row.last_event_at
    return SessionView(
        session_id=row.session_id,
        job=row.job,
        workflow=row.workflow,
        goal=row.goal,
        agent_id=row.agent,
        steps=current_steps(status, row.steps),
        status=status,
        started_at=datetime.fromtimestamp(row.started_at, UTC),
        finished_at=None,
        last_event_at=datetime.fromtimestamp(last, UTC) if last is not None else None,
        parent_session_id=row.parent_session_id,
        branch=None,
        started_from_branch=None,
        abort_reason=None,
        problem=row.problem,
    )


def run_costs(store: Store, session_ids: Sequence[str]) -> dict[str, RunUsage]:
    """The review totals of each of the runs `session_ids` that logged a review call: their
    rows of the store's sums (`state.store.tables.usage_rows`), one query for a whole page."""
    with store.read() as tx:
        return usage_of(tx, store.project.project_id, session_ids)


def session_tree(runs: list[SessionView]) -> list[SessionView]:
    """`runs` with each nested run under its parent (an orphan stays on top), order kept."""
    known = {run.session_id for run in runs}
    children: dict[str, list[SessionView]] = {}
    roots: list[SessionView] = []
    for run in runs:
        parent = run.parent_session_id
        if parent is not None and parent in known and parent != run.session_id:
            children.setdefault(parent, []).append(run)
        else:
            roots.append(run)

    def build(run: SessionView, depth: int) -> SessionView:
        kids = children.get(run.session_id, []) if depth < MAX_NESTING else []
        return run.model_copy(update={"children": [build(k, depth + 1) for k in kids]})

    return [build(run, 0) for run in roots]
