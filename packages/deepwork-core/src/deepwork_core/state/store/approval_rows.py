"""The rows of human approvals: requests the server opened and the decisions humans recorded.

A request row is the server's own record of what it asked (`approval_requests`: the session,
the steps, the shown outputs with their hashes as JSON, the channels a human may answer through,
its seal, and the whole request document as `body`). A session has at most one `open` request:
opening another marks the earlier one `replaced`; the server marks a request `closed` once it
used it and `withdrawn` when the run is aborted. Nothing is deleted but with its session.

A decision row (`approval_decisions`, one per request) keeps the decision document (`body`,
with its seal and its approver's signature) beside the columns a listing reads. Whether a
decision counts is not this module's business: `deepwork_core.state.approvals` verifies the
document against the project's key or its trusted approvers every time it is read, so a row
written here by hand (plain SQL) counts no more than a hand-edited file did.

Everything runs on one `Tx`, so a decision and its `approval` event commit together.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from deepwork_core.state.store.port import Tx

OPEN: Final = "open"
REPLACED: Final = "replaced"
CLOSED: Final = "closed"
WITHDRAWN: Final = "withdrawn"


@dataclass(frozen=True, slots=True)
class RequestRow:
    """What `open_request` writes."""

    session_id: str
    request_id: str
    job: str
    workflow: str
    step_ids: str
    shown: str
    channels: str
    mac: str | None
    requested_at: float
    body: str


@dataclass(frozen=True, slots=True)
class DecisionRow:
    """What `save_decision` writes."""

    session_id: str
    request_id: str
    approved: bool
    channel: str
    actor: str
    signer: str | None
    signature: str | None
    mac: str | None
    decided_at: float
    body: str


def open_request(tx: Tx, project_id: str, row: RequestRow, now: float) -> None:
    """Open `row`'s request, replacing the session's open one (which stays, as `replaced`)."""
    close_requests(tx, project_id, row.session_id, REPLACED, now)
    tx.execute(
        "INSERT INTO approval_requests (project_id, session_id, request_id, job, workflow, "
        "step_ids, shown, channels, mac, state, requested_at, closed_at, body) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, NULL, ?)",
        (
            project_id,
            row.session_id,
            row.request_id,
            row.job,
            row.workflow,
            row.step_ids,
            row.shown,
            row.channels,
            row.mac,
            OPEN,
            row.requested_at,
            row.body,
        ),
    )


def open_record(tx: Tx, project_id: str, session_id: str) -> tuple[str, str | None] | None:
    """The open request of the session and its decision, as their documents; None: none open."""
    rows = tx.execute(
        "SELECT r.body, d.body FROM approval_requests r LEFT JOIN approval_decisions d "
        "ON d.project_id = r.project_id AND d.request_id = r.request_id "
        "WHERE r.project_id = ? AND r.session_id = ? AND r.state = ? "
        "ORDER BY r.requested_at DESC LIMIT 1",
        (project_id, session_id, OPEN),
    )
    if not rows:
        return None
    request, decision = rows[0]
    return str(request), (None if decision is None else str(decision))


def save_decision(tx: Tx, project_id: str, row: DecisionRow) -> None:
    """Record `row`, replacing an earlier decision of the same request (the caller checked
    that the earlier one does not count)."""
    tx.execute(
        "INSERT INTO approval_decisions (project_id, session_id, request_id, approved, channel, "
        "actor, signer, signature, mac, decided_at, body) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
        "ON CONFLICT (project_id, request_id) DO UPDATE SET session_id = excluded.session_id, "
        "approved = excluded.approved, channel = excluded.channel, actor = excluded.actor, "
        "signer = excluded.signer, signature = excluded.signature, mac = excluded.mac, "
        "decided_at = excluded.decided_at, body = excluded.body",
        (
            project_id,
            row.session_id,
            row.request_id,
            int(row.approved),
            row.channel,
            row.actor,
            row.signer,
            row.signature,
            row.mac,
            row.decided_at,
            row.body,
        ),
    )


def close_requests(tx: Tx, project_id: str, session_id: str, state: str, now: float) -> None:
    """Mark the session's open request `state` (`replaced`, `closed` or `withdrawn`)."""
    tx.execute(
        "UPDATE approval_requests SET state = ?, closed_at = ? "
        "WHERE project_id = ? AND session_id = ? AND state = ?",
        (state, now, project_id, session_id, OPEN),
    )


def approval_event_lines(tx: Tx, project_id: str, session_id: str) -> list[str]:
    """The session's logged `approval` events, as their JSON lines, oldest first."""
    rows = tx.execute(
        "SELECT body FROM events WHERE project_id = ? AND session_id = ? AND kind = ? ORDER BY seq",
        (project_id, session_id, "approval"),
    )
    return [str(body) for (body,) in rows]


def project_of(tx: Tx, project_id: str) -> tuple[str, str] | None:
    """The root and machine of a project of the store; None when the store has no such project."""
    rows = tx.execute("SELECT root, machine FROM projects WHERE project_id = ?", (project_id,))
    return (str(rows[0][0]), str(rows[0][1])) if rows else None


@dataclass(frozen=True, slots=True)
class OpenRequest:
    """An open, undecided request of any project of the store, as a list of approvals shows it."""

    project_id: str
    project_root: str
    machine: str
    body: str


def open_decisions(tx: Tx, project_id: str | None = None) -> dict[tuple[str, str], bool | None]:
    """`{(project id, session id): decision}` of every open request (of `project_id`, else of
    every project): True approved, False changes requested, None not decided yet. Open requests
    are the few runs waiting for a person, so this is one small query."""
    sql = (
        "SELECT r.project_id, r.session_id, d.approved FROM approval_requests r "
        "LEFT JOIN approval_decisions d "
        "ON d.project_id = r.project_id AND d.request_id = r.request_id WHERE r.state = ?"
    )
    params: list[object] = [OPEN]
    if project_id is not None:
        sql += " AND r.project_id = ?"
        params.append(project_id)
    return {
        (str(project), str(session)): None if approved is None else bool(approved)
        for project, session, approved in tx.execute(sql, params)
    }


def undecided_requests(tx: Tx, *, limit: int = 1000) -> list[OpenRequest]:
    """The open requests no decision answers yet, of every project in the store, newest first."""
    rows = tx.execute(
        "SELECT r.project_id, p.root, p.machine, r.body FROM approval_requests r "
        "JOIN projects p ON p.project_id = r.project_id "
        "LEFT JOIN approval_decisions d "
        "ON d.project_id = r.project_id AND d.request_id = r.request_id "
        "WHERE r.state = ? AND d.request_id IS NULL "
        "ORDER BY r.requested_at DESC LIMIT ?",
        (OPEN, limit),
    )
    return [OpenRequest(str(a), str(b), str(c), str(d)) for a, b, c, d in rows]


@dataclass(frozen=True, slots=True)
class RequestHistory:
    """One request of a session, whatever became of it, with its decision (for an audit)."""

    state: str
    request: str
    decision: str | None


def session_history(tx: Tx, project_id: str, session_id: str) -> list[RequestHistory]:
    """Every request of the session (open, replaced, closed, withdrawn) with its decision,
    oldest first."""
    rows = tx.execute(
        "SELECT r.state, r.body, d.body FROM approval_requests r LEFT JOIN approval_decisions d "
        "ON d.project_id = r.project_id AND d.request_id = r.request_id "
        "WHERE r.project_id = ? AND r.session_id = ? ORDER BY r.requested_at, r.request_id",
        (project_id, session_id),
    )
    return [
        RequestHistory(str(state), str(request), None if decision is None else str(decision))
        for state, request, decision in rows
    ]


def event_kinds_after(
    tx: Tx, project_id: str, session_id: str, kinds: tuple[str, ...]
) -> list[tuple[str, str]]:
    """(kind, JSON line) of the session's events of `kinds`, oldest first."""
    marks = ", ".join("?" for _ in kinds)
    rows = tx.execute(
        "SELECT kind, body FROM events WHERE project_id = ? AND session_id = ? "  # noqa: S608
        f"AND kind IN ({marks}) ORDER BY seq",
        (project_id, session_id, *kinds),
    )
    return [(str(kind), str(body)) for kind, body in rows]


def set_request_body(tx: Tx, project_id: str, request_id: str, body: str) -> None:
    """Replace the document of request `request_id` (a countersign added to it)."""
    tx.execute(
        "UPDATE approval_requests SET body = ? WHERE project_id = ? AND request_id = ?",
        (body, project_id, request_id),
    )
