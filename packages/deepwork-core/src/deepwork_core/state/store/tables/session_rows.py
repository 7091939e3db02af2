"""The rows of sessions and the per-agent stacks, as SQL over one `Tx`.

A session row keeps the whole `Session` document as JSON (`body`) beside the columns that
listing runs needs (job, workflow, status, agent, branch, machine, times; goal, current steps,
parent, instance and approval flags); the document is what `SessionStore` reads back, the
columns are what lists of sessions read (`state.store.tables.session_lists`): a list never
parses a document.
A stack is its ids by position under `(project_id, agent)`; the main stack's agent is `''`.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Final

from deepwork_core.base.identifiers import SessionId
from deepwork_core.state.store.port import Tx
from deepwork_core.state.store.schema import ListColumns

#: The `agent` column of the main stack.
MAIN_AGENT: Final = ""


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


def load_body(tx: Tx, project_id: str, session_id: str) -> str | None:
    rows = tx.execute(
        "SELECT body FROM sessions WHERE project_id = ? AND session_id = ?",
        (project_id, session_id),
    )
    return str(rows[0][0]) if rows else None


def save_session(tx: Tx, project_id: str, machine: str, row: SessionRow, now: float) -> None:
    listed = row.listed
    ended = None
    if row.status != "active":
        ended = row.completed_at if row.completed_at is not None else row.started_at
    tx.execute(
        "INSERT INTO sessions (project_id, session_id, job, workflow, status, agent, branch, "
        "machine, started_at, updated_at, completed_at, body, goal, steps, parent_session_id, "
        "is_instance, awaiting_approval, started_from, ended_at) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
        "ON CONFLICT (project_id, session_id) DO UPDATE SET job = excluded.job, "
        "workflow = excluded.workflow, status = excluded.status, agent = excluded.agent, "
        "branch = excluded.branch, machine = excluded.machine, "
        "started_at = excluded.started_at, updated_at = excluded.updated_at, "
        "completed_at = excluded.completed_at, body = excluded.body, goal = excluded.goal, "
        "steps = excluded.steps, parent_session_id = excluded.parent_session_id, "
        "is_instance = excluded.is_instance, awaiting_approval = excluded.awaiting_approval, "
        "started_from = excluded.started_from, ended_at = excluded.ended_at",
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
            *listed.values(),
            ended,
        ),
    )


def read_stacks(tx: Tx, project_id: str) -> dict[str | None, list[SessionId]]:
    """Every non-empty stack by agent (None: the main one, first; then by agent id)."""
    return read_stacks_and_tops(tx, project_id, tops_of=())[0]


def read_stacks_and_tops(
    tx: Tx, project_id: str, *, tops_of: Sequence[str | None] | None = None
) -> tuple[dict[str | None, list[SessionId]], dict[str, str]]:
    """Every non-empty stack by agent, and the document of each stack's top session (what
    nearly every call reads next), in one query: one round trip less to PostgreSQL.
    `tops_of`: only the tops of these agents' stacks (None in it: the main one), so that with
    many agents a call reads its own top, not every agent's; None: of every stack."""
    if tops_of is not None and not tops_of:
        rows = tx.execute(
            "SELECT agent, session_id, NULL FROM stacks WHERE project_id = ? "
            "ORDER BY agent, position",
            (project_id,),
        )
    else:
        keys = sorted({agent or MAIN_AGENT for agent in tops_of or ()})
        only = f"st.agent IN ({', '.join('?' * len(keys))}) AND " if keys else ""
        rows = tx.execute(
            f"SELECT st.agent, st.session_id, CASE WHEN {only}st.position = (SELECT "  # noqa: S608
            "max(t.position) FROM stacks t WHERE t.project_id = st.project_id AND t.agent = "
            "st.agent) THEN s.body END FROM stacks st LEFT JOIN sessions s "
            "ON s.project_id = st.project_id AND s.session_id = st.session_id "
            "WHERE st.project_id = ? ORDER BY st.agent, st.position",
            (*keys, project_id),
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
    """Delete sessions with their events and approvals (with the shown bytes they keep)."""
    tables = ("sessions", "events", "approval_requests", "approval_decisions", "approval_contents")
    for session_id in session_ids:
        for table in tables:
            tx.execute(
                f"DELETE FROM {table} WHERE project_id = ? AND session_id = ?",  # noqa: S608
                (project_id, session_id),
            )
