"""Lists of sessions read from their list columns, each one indexed query that reads only the
rows it shows (docs/limits.md, "Views"): a list never parses a session document.

`list_session_rows` (every project, or one, newest write first, nested sessions included;
`count_session_rows` says how many there are in all, for "N more"), `project_session_rows` (one
project's page of sessions, as the dashboard lists it, nested under their runs),
`finished_ids` (the newest finished runs), `branch_origins` (where each named branch's first run
started), `instance_ids` (a run's `for_each` instances) and `awaiting_ids` (the runs waiting
for a human). A row is checked where it is read: a time that is not a real date or a list
column that does not parse makes a run that says what is wrong with it (`problem`), never an
error that hides the other rows.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final, NamedTuple

from deepwork_core.base.fsutil import loads_json
from deepwork_core.base.identifiers import SessionId
from deepwork_core.state.approvals.policy import RequestPolicy, Standing, who_may_decide
from deepwork_core.state.store.port import Tx
from deepwork_core.state.store.tables.approval_rows import (
    expired_requests,
    open_bodies,
    open_decisions,
    partial_approvals,
)

_RUN_COLUMNS: Final = (
    "s.project_id, s.machine, s.session_id, s.job, s.workflow, s.status, s.agent, "
    "s.branch, s.started_at, s.updated_at, s.completed_at"
)
#: Branches looked up per query by `branch_origins`.
_BRANCHES_PER_QUERY: Final = 200


#: The Unix times a date can show (the years 1 to 9999, with a day to spare either side).
_EARLIEST: Final = -62_135_596_800.0 + 86_400
_LATEST: Final = 253_402_300_799.0 - 86_400


def checked_time(value: object) -> float | None:
    """`value` as a Unix time a date can show, or None (NaN, infinite, out of range, not a
    number): a row another program or another project wrote is not trusted."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    seconds = float(value)
    # NaN fails both comparisons; an infinity or a time past the years of a date, one of them.
    return seconds if _EARLIEST <= seconds <= _LATEST else None


class StoredSession(NamedTuple):
    """One session as a list shows it (any project of the store); a tuple, so that ten
    thousand of them are built in a few milliseconds. `problem` says why a row is shown as bad
    (its bad times are None)."""

    project_id: str
    project_root: str
    machine: str
    session_id: str
    job: str
    workflow: str
    status: str
    agent: str | None
    branch: str | None
    started_at: float | None
    updated_at: float | None
    completed_at: float | None
    problem: str | None = None
    #: Where an open request several must sign stands, when partly approved (`Standing.text`).
    standing: str | None = None
    #: Who may decide the open request, while it awaits approval (`policy.who_may_decide`).
    deciders: str | None = None


def _stored_session(root: str, row: Sequence[Any]) -> StoredSession:
    project, machine, session, job, workflow, status, agent, branch = row[:8]
    started, updated, completed = checked_time(row[8]), checked_time(row[9]), None
    bad = []
    if started is None:
        bad.append("started_at")
    if updated is None:
        bad.append("updated_at")
    if row[10] is not None:
        completed = checked_time(row[10])
        if completed is None:
            bad.append("completed_at")
    return StoredSession(
        project, root, machine, session, job, workflow, status, agent, branch,
        started, updated, completed,
        f"bad row: {', '.join(bad)} is not a date" if bad else None,
    )  # fmt: skip


def _where(project_id: str | None, active_only: bool) -> tuple[str, list[object]]:
    clauses: list[str] = []
    params: list[object] = []
    if project_id is not None:
        clauses.append("s.project_id = ?")
        params.append(project_id)
    if active_only:
        clauses.append("s.status = 'active'")
    return (" WHERE " + " AND ".join(clauses) if clauses else ""), params


def list_session_rows(
    tx: Tx,
    *,
    project_id: str | None = None,
    limit: int = 10_000,
    offset: int = 0,
    active_only: bool = False,
) -> list[StoredSession]:
    """Runs newest write first: of one project, or (None) of every project in the store.

    One query over the covering index `runs_by_update` (the rows and their documents are not
    read); the projects' roots come from one more query of the small `projects` table.
    """
    where, params = _where(project_id, active_only)
    sql = f"SELECT {_RUN_COLUMNS} FROM sessions s{where}"  # noqa: S608
    rows = tx.execute(
        sql + " ORDER BY s.updated_at DESC, s.session_id LIMIT ? OFFSET ?",
        [*params, limit, offset],
    )
    projects = tx.execute("SELECT project_id, root FROM projects")
    roots = {str(project): str(root) for project, root in projects}
    found = [_stored_session(roots.get(str(row[0]), ""), row) for row in rows]
    waiting = open_decisions(tx, project_id)
    if not waiting:
        return found
    partial = {
        key: Standing(required, names).text()
        for key, (required, names) in partial_approvals(tx, project_id).items()
    }
    expired = expired_requests(tx, time.time(), project_id)
    deciders = {key: _deciders(body) for key, body in open_bodies(tx, project_id).items()}
    return [_with_approval(run, waiting, partial, expired, deciders) for run in found]


def _deciders(body: str) -> str | None:
    """Who may decide the request `body` (None: not a request's document)."""
    try:
        document = loads_json(body)
        raw = document.get("policy") if isinstance(document, dict) else None
        policy = None if raw is None else RequestPolicy.model_validate(raw)
    except ValueError:
        return None
    return who_may_decide(policy)


#: What a list shows for an active run with an open approval request, by its decision.
WAITING_STATUS: Final = {
    None: "awaiting approval",
    True: "approved, waiting for the agent",
    False: "changes requested, waiting for the agent",
}
#: What a list shows for an active run whose open request's time passed before it was settled.
EXPIRED_STATUS: Final = "approval expired, waiting for the agent"


def _with_approval(
    run: StoredSession,
    waiting: dict[tuple[str, str], bool | None],
    partial: dict[tuple[str, str], str],
    expired: set[tuple[str, str]],
    deciders: dict[tuple[str, str], str | None],
) -> StoredSession:
    key = (run.project_id, run.session_id)
    if run.status != "active" or key not in waiting:
        return run
    status = EXPIRED_STATUS if key in expired else WAITING_STATUS[waiting[key]]
    who = deciders.get(key) if waiting[key] is None and key not in expired else None
    return run._replace(status=status, standing=partial.get(key), deciders=who)


def count_session_rows(tx: Tx, *, project_id: str | None = None, active_only: bool = False) -> int:
    """How many sessions `list_session_rows` would list without a limit."""
    where, params = _where(project_id, active_only)
    [(count,)] = tx.execute(f"SELECT COUNT(*) FROM sessions s{where}", params)  # noqa: S608
    return int(count)


@dataclass(frozen=True, slots=True)
class ListedSession:
    """One session of a project's list (the dashboard's): its columns, no document. `problem` says
    why a row is shown as bad (what could not be read is left empty)."""

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
    problem: str | None = None


def _listed_session_row(row: Sequence[object]) -> ListedSession:
    problems: list[str] = []
    try:
        parsed = loads_json(str(row[5]))
        steps = [str(step) for step in parsed] if isinstance(parsed, list) else []
        if not isinstance(parsed, list):
            problems.append("its current steps are not a list")
    except ValueError as exc:
        steps = []
        problems.append(f"its current steps do not read ({exc})")
    started = checked_time(row[8])
    if started is None:
        problems.append("started_at is not a date")
    last = None if row[10] is None else checked_time(row[10])
    return ListedSession(
        session_id=SessionId(str(row[0])),
        job=str(row[1]),
        workflow=str(row[2]),
        goal=str(row[3] or ""),
        agent=None if row[4] is None else str(row[4]),
        steps=steps,
        status=str(row[6]),
        awaiting_approval=bool(row[7]),
        started_at=started if started is not None else 0.0,
        parent_session_id=None if row[9] is None else SessionId(str(row[9])),
        last_event_at=last,
        problem="bad row: " + "; ".join(problems) if problems else None,
    )


def project_session_rows(
    tx: Tx, project_id: str, *, limit: int, offset: int = 0
) -> list[ListedSession]:
    """One page of a project's sessions, newest start first, without `for_each` instances (they are
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
    return [_listed_session_row(row) for row in rows]


def finished_ids(tx: Tx, project_id: str, *, limit: int) -> list[SessionId]:
    """The project's `limit` newest finished runs, newest end first (index `runs_by_end`)."""
    rows = tx.execute(
        "SELECT session_id FROM sessions WHERE project_id = ? AND ended_at IS NOT NULL "
        "ORDER BY ended_at DESC, started_at DESC, session_id LIMIT ?",
        (project_id, limit),
    )
    return [SessionId(str(session_id)) for (session_id,) in rows]


def branch_origins(tx: Tx, project_id: str, branches: Sequence[str]) -> dict[str, str | None]:
    """For each of `branches` that a run of the project made: the branch its first run started
    from (index `runs_by_branch`; a branch no run made is left out)."""
    origins: dict[str, str | None] = {}
    for start in range(0, len(branches), _BRANCHES_PER_QUERY):
        chunk = list(branches[start : start + _BRANCHES_PER_QUERY])
        marks = ", ".join("?" for _ in chunk)
        rows = tx.execute(
            "SELECT s.branch, s.started_from FROM sessions s WHERE s.project_id = ? "  # noqa: S608
            f"AND s.branch IN ({marks}) AND NOT EXISTS (SELECT 1 FROM sessions o "
            "WHERE o.project_id = s.project_id AND o.branch = s.branch "
            "AND (o.started_at < s.started_at OR (o.started_at = s.started_at "
            "AND o.session_id < s.session_id)))",
            (project_id, *chunk),
        )
        origins.update({str(b): None if f is None else str(f) for b, f in rows})
    return origins


def instance_ids(tx: Tx, project_id: str, parent: str) -> list[SessionId]:
    """The `for_each` instances `parent` started (index `runs_by_parent`)."""
    rows = tx.execute(
        "SELECT session_id FROM sessions WHERE project_id = ? AND parent_session_id = ? "
        "AND is_instance = 1 ORDER BY started_at, session_id",
        (project_id, parent),
    )
    return [SessionId(str(session_id)) for (session_id,) in rows]


def awaiting_ids(tx: Tx, project_id: str) -> list[SessionId]:
    """The project's active runs waiting for a human, newest start first (`runs_awaiting`)."""
    rows = tx.execute(
        "SELECT session_id FROM sessions WHERE project_id = ? AND awaiting_approval = 1 "
        "AND status = 'active' ORDER BY started_at DESC, session_id",
        (project_id,),
    )
    return [SessionId(str(session_id)) for (session_id,) in rows]


def run_session_ids(tx: Tx, project_id: str, run_id: str, *, limit: int = 10_000) -> list[str]:
    """`run_id` and every session nested in it, the run first, then each level by start
    (index `runs_by_parent`); at most `limit`."""
    found, level = [run_id], [run_id]
    while level and len(found) < limit:
        marks = ", ".join("?" for _ in level)
        rows = tx.execute(
            "SELECT session_id FROM sessions WHERE project_id = ? "  # noqa: S608
            f"AND parent_session_id IN ({marks}) ORDER BY started_at, session_id",
            (project_id, *level),
        )
        level = [str(session_id) for (session_id,) in rows if str(session_id) not in found]
        found += level
    return found[:limit]
