"""The rows of runs: sessions and the per-agent stacks, as SQL over one `Tx`.

A session row keeps the whole `Session` document as JSON (`body`) beside the columns that
listing runs needs (job, workflow, status, agent, branch, machine, times; goal, current steps,
parent, instance and approval flags); the document is what `SessionStore` reads back, the
columns are all that `list_runs` (every project, from one covering index) and `project_runs`
(one project's page, as the dashboard lists it) read: a list never parses a document.
A stack is its ids by position under `(project_id, agent)`; the main stack's agent is `''`.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Final, NamedTuple

from deepwork_core.base.identifiers import SessionId
from deepwork_core.state.store.approval_rows import open_decisions
from deepwork_core.state.store.port import Tx
from deepwork_core.state.store.schema import ListColumns

#: The `agent` column of the main stack.
MAIN_AGENT: Final = ""
_RUN_COLUMNS: Final = (
    "s.project_id, s.machine, s.session_id, s.job, s.workflow, s.status, s.agent, "
    "s.branch, s.started_at, s.updated_at, s.completed_at"
)


@dataclass(frozen=True, slots=True)
class SessionRow:
    """What `save_session` writes: the document and its listed columns."""

    session_id: str
    job: str
    workflow: str
    status: str
    agent: str | None
    branch: str | None
    started_at: float
    completed_at: float | None
    body: str
    #: The list columns the dashboard shows (`list_columns` makes them from a document).
    listed: ListColumns = field(default_factory=lambda: ListColumns())


@dataclass(frozen=True, slots=True)
class ProjectRun:
    """One run of a project's list (the dashboard's): its columns, no document."""

    session_id: SessionId
    job: str
    workflow: str
    goal: str
    agent: str | None
    steps: list[str]
    status: str
    awaiting_approval: bool
    started_at: float
    parent_session_id: SessionId | None
    #: When its last event was written (None: it has none).
    last_event_at: float | None


class StoredRun(NamedTuple):
    """One run as a list of runs shows it (any project of the store); a tuple, so that ten
    thousand of them are built in a few milliseconds."""

    project_id: str
    project_root: str
    machine: str
    session_id: str
    job: str
    workflow: str
    status: str
    agent: str | None
    branch: str | None
    started_at: float
    updated_at: float
    completed_at: float | None


def load_body(tx: Tx, project_id: str, session_id: str) -> str | None:
    rows = tx.execute(
        "SELECT body FROM sessions WHERE project_id = ? AND session_id = ?",
        (project_id, session_id),
    )
    return str(rows[0][0]) if rows else None


def save_session(tx: Tx, project_id: str, machine: str, row: SessionRow, now: float) -> None:
    listed = row.listed
    tx.execute(
        "INSERT INTO sessions (project_id, session_id, job, workflow, status, agent, branch, "
        "machine, started_at, updated_at, completed_at, body, goal, steps, parent_session_id, "
        "is_instance, awaiting_approval) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
        "ON CONFLICT (project_id, session_id) DO UPDATE SET job = excluded.job, "
        "workflow = excluded.workflow, status = excluded.status, agent = excluded.agent, "
        "branch = excluded.branch, machine = excluded.machine, "
        "started_at = excluded.started_at, updated_at = excluded.updated_at, "
        "completed_at = excluded.completed_at, body = excluded.body, goal = excluded.goal, "
        "steps = excluded.steps, parent_session_id = excluded.parent_session_id, "
        "is_instance = excluded.is_instance, awaiting_approval = excluded.awaiting_approval",
        (
            project_id,
            row.session_id,
            row.job,
            row.workflow,
            row.status,
            row.agent,
            row.branch,
            machine,
            row.started_at,
            now,
            row.completed_at,
            row.body,
            listed.goal,
            listed.steps,
            listed.parent_session_id,
            int(listed.is_instance),
            int(listed.awaiting_approval),
        ),
    )


def read_stacks(tx: Tx, project_id: str) -> dict[str | None, list[SessionId]]:
    """Every non-empty stack by agent (None: the main one, first; then by agent id)."""
    return read_stacks_and_tops(tx, project_id)[0]


def read_stacks_and_tops(
    tx: Tx, project_id: str
) -> tuple[dict[str | None, list[SessionId]], dict[str, str]]:
    """Every non-empty stack by agent, and the document of each stack's top session (what
    nearly every call reads next), in one query: one round trip less to PostgreSQL."""
    rows = tx.execute(
        "SELECT st.agent, st.session_id, CASE WHEN st.position = (SELECT max(t.position) "
        "FROM stacks t WHERE t.project_id = st.project_id AND t.agent = st.agent) "
        "THEN s.body END FROM stacks st LEFT JOIN sessions s "
        "ON s.project_id = st.project_id AND s.session_id = st.session_id "
        "WHERE st.project_id = ? ORDER BY st.agent, st.position",
        (project_id,),
    )
    stacks: dict[str | None, list[SessionId]] = {}
    tops: dict[str, str] = {}
    for agent, session_id, body in rows:  # ids the store was given as `SessionId`s
        stacks.setdefault(agent or None, []).append(SessionId(str(session_id)))
        if body is not None:
            tops[str(session_id)] = str(body)
    return stacks, tops


def write_stack(tx: Tx, project_id: str, agent: str | None, session_ids: Sequence[str]) -> None:
    key = agent or MAIN_AGENT
    tx.execute("DELETE FROM stacks WHERE project_id = ? AND agent = ?", (project_id, key))
    for position, session_id in enumerate(session_ids):
        tx.execute(
            "INSERT INTO stacks (project_id, agent, position, session_id) VALUES (?, ?, ?, ?)",
            (project_id, key, position, session_id),
        )


def session_times(tx: Tx, project_id: str) -> list[tuple[float, SessionId]]:
    """(last written, id) of every session of the project, newest first."""
    rows = tx.execute(
        "SELECT updated_at, session_id FROM sessions WHERE project_id = ? "
        "ORDER BY updated_at DESC, session_id",
        (project_id,),
    )
    return [(float(at), SessionId(str(session_id))) for at, session_id in rows]


def delete_sessions(tx: Tx, project_id: str, session_ids: Iterable[str]) -> None:
    """Delete sessions with their events and approvals."""
    for session_id in session_ids:
        for table in ("sessions", "events", "approval_requests", "approval_decisions"):
            tx.execute(
                f"DELETE FROM {table} WHERE project_id = ? AND session_id = ?",  # noqa: S608
                (project_id, session_id),
            )


def list_runs(
    tx: Tx, *, project_id: str | None = None, limit: int = 10_000, active_only: bool = False
) -> list[StoredRun]:
    """Runs newest first: of one project, or (None) of every project in the store.

    One query over the covering index `runs_by_update` (the rows and their documents are not
    read); the projects' roots come from one more query of the small `projects` table.
    """
    sql = f"SELECT {_RUN_COLUMNS} FROM sessions s"  # noqa: S608
    clauses: list[str] = []
    params: list[object] = []
    if project_id is not None:
        clauses.append("s.project_id = ?")
        params.append(project_id)
    if active_only:
        clauses.append("s.status = 'active'")
    if clauses:
        sql += " WHERE " + " AND ".join(clauses)
    params.append(limit)
    rows = tx.execute(sql + " ORDER BY s.updated_at DESC, s.session_id LIMIT ?", params)
    roots: dict[str, str] = dict(tx.execute("SELECT project_id, root FROM projects"))
    found = [StoredRun(row[0], roots.get(row[0], ""), *row[1:]) for row in rows]
    waiting = open_decisions(tx, project_id)
    if not waiting:
        return found
    return [_with_approval(run, waiting) for run in found]


#: What a list shows for an active run with an open approval request, by its decision.
WAITING_STATUS: Final = {
    None: "awaiting approval",
    True: "approved, waiting for the agent",
    False: "changes requested, waiting for the agent",
}


def _with_approval(run: StoredRun, waiting: dict[tuple[str, str], bool | None]) -> StoredRun:
    key = (run.project_id, run.session_id)
    if run.status != "active" or key not in waiting:
        return run
    return run._replace(status=WAITING_STATUS[waiting[key]])


def project_runs(tx: Tx, project_id: str, *, limit: int, offset: int = 0) -> list[ProjectRun]:
    """One page of a project's runs, newest start first, without `for_each` instances (they are
    listed on their parent's page): one query over the index `runs_by_start`."""
    rows = tx.execute(
        "SELECT s.session_id, s.job, s.workflow, s.goal, s.agent, s.steps, s.status, "
        "s.awaiting_approval, s.started_at, s.parent_session_id, "
        "(SELECT e.ts FROM events e WHERE e.project_id = s.project_id "
        "AND e.session_id = s.session_id ORDER BY e.seq DESC LIMIT 1) "
        "FROM sessions s WHERE s.project_id = ? AND s.is_instance = 0 "
        "ORDER BY s.started_at DESC, s.session_id LIMIT ? OFFSET ?",
        (project_id, limit, offset),
    )
    return [
        ProjectRun(
            session_id=row[0],
            job=row[1],
            workflow=row[2],
            goal=row[3],
            agent=row[4],
            steps=[str(step) for step in json.loads(row[5])],
            status=row[6],
            awaiting_approval=bool(row[7]),
            started_at=row[8],
            parent_session_id=row[9],
            last_event_at=row[10],
        )
        for row in rows
    ]
