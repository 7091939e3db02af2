"""The rows of runs: sessions and the per-agent stacks, as SQL over one `Tx`.

A session row keeps the whole `Session` document as JSON (`body`) beside the columns that
listing runs across projects needs (job, workflow, status, agent, branch, machine, times); the
document is what `SessionStore` reads back, the columns are what `list_runs` filters and sorts
on. A stack is its ids by position under `(project_id, agent)`; the main stack's agent is `''`.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Final

from deepwork_core.state.store.port import Row, Tx

#: The `agent` column of the main stack.
MAIN_AGENT: Final = ""
_RUN_COLUMNS: Final = (
    "s.project_id, p.root, s.machine, s.session_id, s.job, s.workflow, s.status, s.agent, "
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


@dataclass(frozen=True, slots=True)
class StoredRun:
    """One run as a list of runs shows it (any project of the store)."""

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
    tx.execute(
        "INSERT INTO sessions (project_id, session_id, job, workflow, status, agent, branch, "
        "machine, started_at, updated_at, completed_at, body) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
        "ON CONFLICT (project_id, session_id) DO UPDATE SET job = excluded.job, "
        "workflow = excluded.workflow, status = excluded.status, agent = excluded.agent, "
        "branch = excluded.branch, machine = excluded.machine, "
        "started_at = excluded.started_at, updated_at = excluded.updated_at, "
        "completed_at = excluded.completed_at, body = excluded.body",
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
        ),
    )


def read_stacks(tx: Tx, project_id: str) -> dict[str | None, list[str]]:
    """Every non-empty stack by agent (None: the main one, first; then by agent id)."""
    rows = tx.execute(
        "SELECT agent, session_id FROM stacks WHERE project_id = ? ORDER BY agent, position",
        (project_id,),
    )
    stacks: dict[str | None, list[str]] = {}
    for agent, session_id in rows:
        stacks.setdefault(agent or None, []).append(str(session_id))
    return stacks


def write_stack(tx: Tx, project_id: str, agent: str | None, session_ids: Sequence[str]) -> None:
    key = agent or MAIN_AGENT
    tx.execute("DELETE FROM stacks WHERE project_id = ? AND agent = ?", (project_id, key))
    for position, session_id in enumerate(session_ids):
        tx.execute(
            "INSERT INTO stacks (project_id, agent, position, session_id) VALUES (?, ?, ?, ?)",
            (project_id, key, position, session_id),
        )


def session_times(tx: Tx, project_id: str) -> list[tuple[float, str]]:
    """(last written, id) of every session of the project, newest first."""
    rows = tx.execute(
        "SELECT updated_at, session_id FROM sessions WHERE project_id = ? "
        "ORDER BY updated_at DESC, session_id",
        (project_id,),
    )
    return [(float(at), str(session_id)) for at, session_id in rows]


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
    """Runs newest first: of one project, or (None) of every project in the store."""
    sql = f"SELECT {_RUN_COLUMNS} FROM sessions s JOIN projects p USING (project_id)"  # noqa: S608
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
    return [_run(row) for row in rows]


def _run(row: Row) -> StoredRun:
    return StoredRun(
        project_id=row[0],
        project_root=row[1],
        machine=row[2],
        session_id=row[3],
        job=row[4],
        workflow=row[5],
        status=row[6],
        agent=row[7],
        branch=row[8],
        started_at=row[9],
        updated_at=row[10],
        completed_at=row[11],
    )
