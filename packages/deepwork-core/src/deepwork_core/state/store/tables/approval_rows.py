"""The rows of human approvals: requests the server opened and the decisions humans recorded.

A request row is the server's own record of what it asked (`approval_requests`: the session,
the steps, the shown outputs with their hashes as JSON, the channels a human may answer through,
its seal, and the whole request document as `body`). A session has at most one `open` request:
opening another marks the earlier one `replaced`; the server marks a request `closed` once it
used it and `withdrawn` when the run is aborted or moved back. Closing stores how the request
ended (`end_state`, `end_reason`, `closed_at`: `deepwork_core.state.approvals.ending`).
Nothing is deleted but with its session.

A decision row (`approval_decisions`, one per request and `seat`: the signer where the
request's policy wants several, else '') keeps the decision document (`body`,
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
    #: How many distinct approvers must approve (the request's policy).
    required: int = 1
    #: When the request expires (its policy's `expires_after`); None: never.
    expires_at: float | None = None


@dataclass(frozen=True, slots=True)
class Ending:
    """How a request ended, as `close_requests` stores it: the row's `state`, its `end_state`
    (`deepwork_core.state.approvals.ending.EndState`) and why."""

    state: str
    end_state: str
    why: str


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
    #: One decision a seat: the signer where several must sign, else ''.
    seat: str = ""


def open_request(tx: Tx, project_id: str, row: RequestRow, now: float) -> None:
    """Open `row`'s request, replacing the session's open one (which stays, as `replaced`)."""
    replaced = Ending(REPLACED, "failed", f"a newer request ({row.request_id}) replaced it")
    close_requests(tx, project_id, row.session_id, replaced, now)
    tx.execute(
        "INSERT INTO approval_requests (project_id, session_id, request_id, job, workflow, "
        "step_ids, shown, channels, mac, state, requested_at, closed_at, body, required, "
        "expires_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, NULL, ?, ?, ?)",
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
            row.required,
            row.expires_at,
        ),
    )


def open_record(tx: Tx, project_id: str, session_id: str) -> tuple[str, list[str]] | None:
    """The open request of the session and its decisions (oldest first), as their documents;
    None: none open."""
    rows = tx.execute(
        "SELECT request_id, body FROM approval_requests "
        "WHERE project_id = ? AND session_id = ? AND state = ? "
        "ORDER BY requested_at DESC LIMIT 1",
        (project_id, session_id, OPEN),
    )
    if not rows:
        return None
    request_id, request = rows[0]
    decisions = tx.execute(
        "SELECT body FROM approval_decisions WHERE project_id = ? AND request_id = ? "
        "ORDER BY decided_at, seat",
        (project_id, str(request_id)),
    )
    return str(request), [str(body) for (body,) in decisions]


@dataclass(frozen=True, slots=True)
class LastRequest:
    """The newest request of a session: its row `state` and how it ended (None: open)."""

    state: str
    end_state: str | None
    end_reason: str | None
    closed_at: float | None


def last_state(tx: Tx, project_id: str, session_id: str) -> LastRequest | None:
    """The session's newest request (`open`, `closed`, `withdrawn`, ...) and its end; None
    when it never had one."""
    rows = tx.execute(
        "SELECT state, end_state, end_reason, closed_at FROM approval_requests "
        "WHERE project_id = ? AND session_id = ? ORDER BY requested_at DESC, "
        "CASE WHEN state = ? THEN 1 ELSE 0 END, closed_at DESC LIMIT 1",
        (project_id, session_id, REPLACED),
    )
    if not rows:
        return None
    state, end, why, closed = rows[0]
    return LastRequest(
        str(state),
        None if end is None else str(end),
        None if why is None else str(why),
        None if closed is None else float(closed),
    )


def save_decision(tx: Tx, project_id: str, row: DecisionRow) -> None:
    """Record `row`, replacing an earlier decision of the same request and seat (the caller
    checked that the earlier one does not count)."""
    tx.execute(
        "INSERT INTO approval_decisions (project_id, session_id, request_id, seat, approved, "
        "channel, actor, signer, signature, mac, decided_at, body) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
        "ON CONFLICT (project_id, request_id, seat) DO UPDATE SET "
        "session_id = excluded.session_id, "
        "approved = excluded.approved, channel = excluded.channel, actor = excluded.actor, "
        "signer = excluded.signer, signature = excluded.signature, mac = excluded.mac, "
        "decided_at = excluded.decided_at, body = excluded.body",
        (
            project_id,
            row.session_id,
            row.request_id,
            row.seat,
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


def close_requests(tx: Tx, project_id: str, session_id: str, end: Ending, now: float) -> None:
    """Close the session's open request: its row `state` (`replaced`, `closed` or `withdrawn`)
    and how it ended, at `now`."""
    tx.execute(
        "UPDATE approval_requests SET state = ?, end_state = ?, end_reason = ?, closed_at = ? "
        "WHERE project_id = ? AND session_id = ? AND state = ?",
        (end.state, end.end_state, end.why, now, project_id, session_id, OPEN),
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


def _open_of(project_id: str | None) -> tuple[str, list[object]]:
    """The rest of a `WHERE r.state = ?` for the open requests of `project_id` (None: of every
    project), and its parameters."""
    if project_id is None:
        return "", [OPEN]
    return " AND r.project_id = ?", [OPEN, project_id]


def open_decisions(tx: Tx, project_id: str | None = None) -> dict[tuple[str, str], bool | None]:
    """`{(project id, session id): decision}` of every open request (of `project_id`, else of
    every project): True approved (by as many as it requires), False changes requested, None
    not decided yet (or only partly). Open requests are the few runs waiting for a person, so
    this is one small query. A listing's hint: the server verifies each decision it uses."""
    sql = (
        "SELECT r.project_id, r.session_id, r.required, "
        "SUM(CASE WHEN d.approved = 1 THEN 1 ELSE 0 END), "
        "SUM(CASE WHEN d.approved = 0 THEN 1 ELSE 0 END) FROM approval_requests r "
        "LEFT JOIN approval_decisions d "
        "ON d.project_id = r.project_id AND d.request_id = r.request_id WHERE r.state = ?"
    )
    where, params = _open_of(project_id)
    sql += where + " GROUP BY r.project_id, r.session_id, r.request_id, r.required"
    found: dict[tuple[str, str], bool | None] = {}
    for project, session, required, approvals, rejections in tx.execute(sql, params):
        settled: bool | None = None
        if rejections:
            settled = False
        elif (approvals or 0) >= int(required):
            settled = True
        found[(str(project), str(session))] = settled
    return found


def partial_approvals(
    tx: Tx, project_id: str | None = None
) -> dict[tuple[str, str], tuple[int, list[str]]]:
    """`{(project id, session id): (required, approvers so far)}` of every open request (of
    `project_id`, else of every project) that several must sign, none has rejected and fewer
    have approved than it requires: each signer once, in the order they decided. A listing's
    hint, as `open_decisions` is; the server verifies each decision it uses."""
    sql = (
        "SELECT r.project_id, r.session_id, r.required, d.signer, d.approved "
        "FROM approval_requests r JOIN approval_decisions d "
        "ON d.project_id = r.project_id AND d.request_id = r.request_id "
        "WHERE r.state = ? AND r.required > 1"
    )
    where, params = _open_of(project_id)
    rejected: set[tuple[str, str]] = set()
    found: dict[tuple[str, str], tuple[int, list[str]]] = {}
    for project, session, required, signer, approved in tx.execute(
        sql + where + " ORDER BY d.decided_at, d.seat", params
    ):
        key = (str(project), str(session))
        _, names = found.setdefault(key, (int(required), []))
        if not approved:
            rejected.add(key)
        elif signer is not None and str(signer) not in names:
            names.append(str(signer))
    return {
        key: (required, names)
        for key, (required, names) in found.items()
        if key not in rejected and len(names) < required
    }


def open_deciders(
    tx: Tx, project_id: str | None = None
) -> dict[tuple[str, str], list[tuple[bool, str | None, str]]]:
    """`{(project id, session id): [(approved, signer, actor), ...]}` of the decisions on every
    open request (of `project_id`, else of every project), oldest first: who decided what the
    agent has not picked up yet. A listing's hint, as `open_decisions` is."""
    sql = (
        "SELECT r.project_id, r.session_id, d.approved, d.signer, d.actor "
        "FROM approval_requests r JOIN approval_decisions d "
        "ON d.project_id = r.project_id AND d.request_id = r.request_id WHERE r.state = ?"
    )
    where, params = _open_of(project_id)
    found: dict[tuple[str, str], list[tuple[bool, str | None, str]]] = {}
    for project, session, approved, signer, actor in tx.execute(
        sql + where + " ORDER BY d.decided_at, d.seat", params
    ):
        who = None if signer is None else str(signer)
        found.setdefault((str(project), str(session)), []).append((bool(approved), who, str(actor)))
    return found


def open_bodies(tx: Tx, project_id: str | None = None) -> dict[tuple[str, str], str]:
    """`{(project id, session id): request document}` of every open request (of `project_id`,
    else of every project): the few runs waiting for a person."""
    sql = "SELECT r.project_id, r.session_id, r.body FROM approval_requests r WHERE r.state = ?"
    where, params = _open_of(project_id)
    return {(str(p), str(s)): str(body) for p, s, body in tx.execute(sql + where, params)}


def expired_requests(tx: Tx, now: float, project_id: str | None = None) -> set[tuple[str, str]]:
    """`{(project id, session id)}` of every open request (of `project_id`, else of every
    project) whose `expires_at` is past at `now` while no decision settles it: it reads as
    expired before the server closes it (`deepwork_core.state.approvals.ending`)."""
    sql = (
        "SELECT r.project_id, r.session_id FROM approval_requests r "
        "WHERE r.state = ? AND r.expires_at IS NOT NULL AND r.expires_at <= ? "
        "AND NOT EXISTS (SELECT 1 FROM approval_decisions d WHERE d.project_id = r.project_id "
        "AND d.request_id = r.request_id AND d.approved = 0) "
        "AND (SELECT COUNT(*) FROM approval_decisions d WHERE d.project_id = r.project_id "
        "AND d.request_id = r.request_id AND d.approved = 1) < r.required"
    )
    params: list[object] = [OPEN, now]
    if project_id is not None:
        sql += " AND r.project_id = ?"
        params.append(project_id)
    return {(str(project), str(session)) for project, session in tx.execute(sql, params)}


def undecided_requests(tx: Tx, *, limit: int = 1000) -> list[OpenRequest]:
    """The open requests no decision settles yet (none rejects them and fewer approve them
    than they require), of every project in the store, newest first."""
    rows = tx.execute(
        "SELECT r.project_id, p.root, p.machine, r.body FROM approval_requests r "
        "JOIN projects p ON p.project_id = r.project_id "
        "WHERE r.state = ? AND NOT EXISTS (SELECT 1 FROM approval_decisions d "
        "WHERE d.project_id = r.project_id AND d.request_id = r.request_id AND d.approved = 0) "
        "AND (SELECT COUNT(*) FROM approval_decisions d WHERE d.project_id = r.project_id "
        "AND d.request_id = r.request_id AND d.approved = 1) < r.required "
        "ORDER BY r.requested_at DESC LIMIT ?",
        (OPEN, limit),
    )
    return [OpenRequest(str(a), str(b), str(c), str(d)) for a, b, c, d in rows]


@dataclass(frozen=True, slots=True)
class RequestHistory:
    """One request of a session, whatever became of it, with every decision on it (for an
    audit)."""

    state: str
    request: str
    #: The decisions' documents, oldest first (several where several must sign).
    decisions: list[str]
    #: How it ended (`ending.EndState`) and why, and when it closed; None while open.
    end_state: str | None = None
    end_reason: str | None = None
    closed_at: float | None = None


def session_history(tx: Tx, project_id: str, session_id: str) -> list[RequestHistory]:
    """Every request of the session (open, replaced, closed, withdrawn) once, with its
    decisions, oldest first."""
    requests = tx.execute(
        "SELECT request_id, state, body, end_state, end_reason, closed_at FROM approval_requests "
        "WHERE project_id = ? AND session_id = ? ORDER BY requested_at, request_id",
        (project_id, session_id),
    )
    decisions: dict[str, list[str]] = {}
    for request_id, body in tx.execute(
        "SELECT request_id, body FROM approval_decisions WHERE project_id = ? AND request_id IN "
        "(SELECT request_id FROM approval_requests WHERE project_id = ? AND session_id = ?) "
        "ORDER BY decided_at, seat",
        (project_id, project_id, session_id),
    ):
        decisions.setdefault(str(request_id), []).append(str(body))
    return [
        RequestHistory(
            str(state),
            str(body),
            decisions.get(str(request_id), []),
            None if end is None else str(end),
            None if why is None else str(why),
            None if closed is None else float(closed),
        )
        for request_id, state, body, end, why, closed in requests
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


def projects_waiting(tx: Tx, session_id: str) -> list[tuple[str, str, str]]:
    """`(project id, root, machine)` of each project of the store with an open request of
    `session_id`, newest request first (a session id is one project's, so at most one)."""
    rows = tx.execute(
        "SELECT r.project_id, p.root, p.machine FROM approval_requests r "
        "JOIN projects p ON p.project_id = r.project_id "
        "WHERE r.session_id = ? AND r.state = ? ORDER BY r.requested_at DESC",
        (session_id, OPEN),
    )
    return [(str(a), str(b), str(c)) for a, b, c in rows]


def set_request_body(tx: Tx, project_id: str, request_id: str, body: str) -> None:
    """Replace the document of request `request_id` (a countersign added to it)."""
    tx.execute(
        "UPDATE approval_requests SET body = ? WHERE project_id = ? AND request_id = ?",
        (body, project_id, request_id),
    )
