"""Resuming a run in another checkout: `deepwork run --resume` takes over a run another checkout
of the project served through the same store (docs/headless.md, "Resuming in another checkout").

A store knows a project by its machine and folder, so a run parked by a CI runner belongs to the
runner's project. When `resume_anywhere` does not find the session in this checkout's project,
it looks for it in the store's other projects and, in one transaction with `resume`, moves the
run (its nested runs, events, approval requests and decisions, review jobs and costs) into this
project: the `resumed` event says it was taken over and from where. Before anything moves this
checkout must be on the run's branch (`run.wrong_branch`), and `resume` then checks the completed
steps' outputs here (`run.output_changed`); either refusal leaves the run where it was.

The open approval request keeps the seal of the server that opened it, which this checkout's
key cannot verify. When a trusted approver's signature, which covers that seal, the steps and
the shown files' hashes, already decided it for the step the run stands at, this checkout
countersigns the request (`ApprovalRequest.adopted_mac`), so that its server uses the decision;
the shown files' bytes are compared here when it does. Any other request is left as it is:
this server does not take it as its own and asks anew.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Final

from deepwork_core.base.error_codes import ErrorCode
from deepwork_core.base.errors import GitError, SessionError
from deepwork_core.base.git import run_git
from deepwork_core.base.identifiers import SessionId
from deepwork_core.engine.headless.parking import resume
from deepwork_core.state.approvals.seal import ADOPTED_LABEL, adopted_fields
from deepwork_core.state.approvals.store import ApprovalStore
from deepwork_core.state.sessions import Session, SessionStore
from deepwork_core.state.store.port import ProjectRef, Tx
from deepwork_core.state.store.tables import approval_rows
from deepwork_core.state.store.tables.session_rows import read_stacks, write_stack

#: The tables whose rows of a run move with it (each has `project_id` and `session_id`).
_MOVED: Final = (
    "events",
    "approval_requests",
    "approval_decisions",
    "approval_contents",
    "review_jobs",
    "review_verdicts",
    "review_spend",
)


def resume_anywhere(
    sessions: SessionStore,
    approvals: ApprovalStore,
    session_id: SessionId,
    clock: Callable[[], datetime],
) -> Session:
    """`resume` the run, first taking it over from the project of the store that holds it
    when that is not this checkout's. Raises what `resume` raises, `run.wrong_branch`, and
    `session.not_found` when no project of the store holds it; a refusal moves nothing."""
    store = sessions.store
    here = store.project
    with store.read() as tx:
        source = (
            None if _holds(tx, here.project_id, session_id) else project_holding(tx, session_id)
        )
    if source is None:
        return resume(sessions, session_id, clock)
    # Under the lock of the project that holds the run: its server cannot write it meanwhile.
    with store.write(lock=f"deepwork.state:{source.project_id}") as tx:
        if not _holds(tx, source.project_id, session_id):
            return resume(sessions, session_id, clock)  # taken over meanwhile: not found
        _require_branch(sessions, tx, source, session_id)
        _move(tx, source, here, session_id)
        session = resume(sessions, session_id, clock, adopted_from=source)
        _countersign(approvals, tx, session)
    return session


def _holds(tx: Tx, project_id: str, session_id: str) -> bool:
    rows = tx.execute(
        "SELECT 1 FROM sessions WHERE project_id = ? AND session_id = ?", (project_id, session_id)
    )
    return bool(rows)


def project_holding(tx: Tx, session_id: str) -> ProjectRef | None:
    """The project of the store holding `session_id`; None when none does (`resume` then says
    `session.not_found`). Raises `run.not_resumable` when several do."""
    rows = tx.execute(
        "SELECT p.project_id, p.root, p.machine FROM sessions s JOIN projects p "
        "ON p.project_id = s.project_id WHERE s.session_id = ? ORDER BY s.updated_at DESC",
        (session_id,),
    )
    if not rows:
        return None
    if len(rows) > 1:
        where = "; ".join(f"{root} on {machine}" for _, root, machine in rows)
        raise SessionError(
            f"session {session_id!r} is held by several projects of this store ({where}); "
            "resume it in the checkout that served it",
            code=ErrorCode.RUN_NOT_RESUMABLE,
        )
    project_id, root, machine = rows[0]
    return ProjectRef(project_id=str(project_id), root=str(root), machine=str(machine))


def _require_branch(
    sessions: SessionStore, tx: Tx, source: ProjectRef, session_id: SessionId
) -> None:
    """Raise `run.wrong_branch` unless this checkout is on the branch the run worked on."""
    rows = tx.execute(
        "SELECT branch FROM sessions WHERE project_id = ? AND session_id = ?",
        (source.project_id, session_id),
    )
    branch = rows[0][0] if rows else None
    if not branch:
        return
    try:
        found = run_git(
            ["symbolic-ref", "--quiet", "--short", "HEAD"], cwd=sessions.project_root, check=False
        )
        current = found.stdout.strip() if found.returncode == 0 else None
    except GitError:
        current = None
    if current != branch:
        raise SessionError(
            f"session {session_id!r} worked on branch {branch!r} in {source.root} on "
            f"{source.machine}; this checkout is on {current or 'no branch'}. Check out the "
            "run's branch as it was pushed and resume again; nothing was moved or run.",
            code=ErrorCode.RUN_WRONG_BRANCH,
        )


def _move(tx: Tx, source: ProjectRef, here: ProjectRef, session_id: str) -> None:
    """Move the run and its nested runs from `source`'s project into `here`'s."""
    ids = _with_nested(tx, source.project_id, session_id)
    _move_stacks(tx, source, here, set(ids))
    for moved in ids:
        keys = (source.project_id, moved)
        tx.execute(
            "UPDATE sessions SET project_id = ?, machine = ? WHERE project_id = ? "
            "AND session_id = ?",
            (here.project_id, here.machine, *keys),
        )
        for table in _MOVED:
            tx.execute(
                f"UPDATE {table} SET project_id = ? WHERE project_id = ? "  # noqa: S608
                "AND session_id = ?",
                (here.project_id, *keys),
            )


def _move_stacks(tx: Tx, source: ProjectRef, here: ProjectRef, ids: set[str]) -> None:
    """Take the run's sessions off `source`'s stacks and put them, in their order, on top of
    the same agents' stacks of `here` (a call names the run by its session id)."""
    theirs = read_stacks(tx, source.project_id)
    ours = read_stacks(tx, here.project_id)
    for agent, stack in theirs.items():
        moved = [item for item in stack if item in ids]
        if moved:
            write_stack(tx, source.project_id, agent, [i for i in stack if i not in ids])
            write_stack(tx, here.project_id, agent, [*ours.get(agent, []), *moved])


def _with_nested(tx: Tx, project_id: str, session_id: str) -> list[str]:
    """`session_id` and every run nested in it (sub-workflows, `for_each` instances)."""
    found = [session_id]
    for parent in found:  # grows as nested runs are found
        rows = tx.execute(
            "SELECT session_id FROM sessions WHERE project_id = ? AND parent_session_id = ?",
            (project_id, parent),
        )
        found.extend(str(row[0]) for row in rows if str(row[0]) not in found)
    return found


def _countersign(approvals: ApprovalStore, tx: Tx, session: Session) -> None:
    """Countersign the run's open request when a trusted approver's signature decided it for
    the step the run stands at (see the module docstring); leave any other as it is."""
    record = approvals.load(session.session_id)
    if record is None or record.decision is None or approvals.key is None:
        return
    request = record.request
    if not approvals.trusted.required() or request.mac is None:
        return
    if request.step_ids != list(session.current_step_ids):
        return
    if approvals.refusal(session.session_id, record) is not None:
        return
    signed = request.model_copy(
        update={"adopted_mac": approvals.key.mac(adopted_fields(request), ADOPTED_LABEL)}
    )
    approval_rows.set_request_body(
        tx, approvals.project_id, request.request_id, signed.model_dump_json()
    )
