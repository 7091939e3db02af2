"""Which session a call means, and the stack it answers with (docs/navigation.md, "Agent
stacks").

Every agent id has its own stack; no agent id means the main stack. A call without a session id
works on the top of the caller's stack; an explicit session id (a `SessionId`, parsed where the
call came in) names an active session on any stack. Answers carry the stack the session is on. A
session that leaves its stack hands the files it declared to the sessions that waited for it
(`settle_declared`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from deepwork_core.base.error_codes import ErrorCode
from deepwork_core.base.errors import SessionError
from deepwork_core.base.identifiers import SessionId, check_agent_id
from deepwork_core.evidence.scope import settled
from deepwork_core.state.sessions import Session, SessionStatus, StateTransaction


@dataclass(frozen=True, slots=True)
class StackItem:
    session_id: SessionId
    workflow: str
    step: str


@dataclass(frozen=True, slots=True)
class Target:
    """The session a call names: `session_id`, else the top of `agent_id`'s stack (None: the
    main stack)."""

    session_id: SessionId | None = None
    agent_id: str | None = None

    def __post_init__(self) -> None:
        check_agent_id(self.agent_id)


def target_session(tx: StateTransaction, target: Target) -> Session:
    """The active session a call works on (see the module docstring)."""
    session_id, agent_id = target.session_id, target.agent_id
    if session_id is None:
        top = tx.top(agent_id)
        if top is None:
            whose = "" if agent_id is None else f" for agent {agent_id!r}"
            raise SessionError(
                f"no active workflow session{whose}; call start_workflow to begin a workflow",
                code=ErrorCode.SESSION_NONE_ACTIVE,
            )
        return top
    active = tx.all_stack_ids()
    if session_id in active:
        return tx.load(session_id)
    session = tx.load(session_id)  # raises session.not_found
    raise SessionError(
        f"session {session_id!r} is {session.status.value}, not active; active sessions: "
        f"{', '.join(sorted(active)) or 'none'}",
        code=ErrorCode.SESSION_NOT_ACTIVE,
    )


def stack_item(session: Session) -> StackItem:
    return StackItem(session.session_id, session.workflow_label, session.current_step_id)


def stack_items(tx: StateTransaction, agent_id: str | None) -> list[StackItem]:
    """The stack of `agent_id` (None: the main stack), bottom first."""
    return [stack_item(session) for session in tx.stack(agent_id)]


def same_checkpoint(tx: StateTransaction, session_id: SessionId, entry_index: int) -> Session:
    """The session, still active at `entry_index`, after its checkpoint ran unlocked."""
    session = tx.load(session_id)
    if session.status is not SessionStatus.ACTIVE or session.current_entry_index != entry_index:
        raise SessionError(
            f"session {session_id!r} moved on while its review ran "
            f"(now {session.status.value}, step {session.current_step_id!r}); "
            "the review result was discarded",
            code=ErrorCode.SESSION_CHANGED,
        )
    return session


def settle_declared(tx: StateTransaction, finished: Session, project_root: Path) -> None:
    """The files `finished` declared (its accepted outputs) are no undeclared change of the
    sessions that waited while it ran: those below it on its stack (it ran nested on them) and,
    for an instance of a step fanned out in the shared tree, its running siblings
    (docs/evidence.md). Call it once `finished` has left its stack."""
    paths = sorted({item.path for item in finished.evidence})
    waiting = [*tx.stack(finished.agent_id), *_siblings(tx, finished)]
    _settle(tx, waiting, paths, project_root)


def settle_submitted(
    tx: StateTransaction, instance: Session, paths: Sequence[str], project_root: Path
) -> None:
    """The files an instance in the shared tree submits are no undeclared change of its running
    siblings, from its first submission on: none of them is told to undo another's output."""
    _settle(tx, _siblings(tx, instance), paths, project_root)


def _siblings(tx: StateTransaction, session: Session) -> list[Session]:
    """The running siblings of an instance fanned out in the shared tree; [] for any other."""
    of = session.instance_of
    if of is None or of.worktree is not None or session.parent_session_id is None:
        return []  # a worktree instance's files are judged in its worktree, merged at fan-in
    fan = tx.load(session.parent_session_id).fan_out
    active = tx.all_stack_ids() - {session.session_id}
    return [tx.load(i.session_id) for i in (fan.instances if fan else []) if i.session_id in active]


def _settle(
    tx: StateTransaction, waiting: Sequence[Session], paths: Sequence[str], project_root: Path
) -> None:
    if not paths:
        return
    for session in waiting:
        for step_id in session.current_step_ids:
            record = session.step_progress.get(step_id)
            if record is not None and record.began is not None:
                record.began = settled(record.began, project_root, paths)
        tx.save(session)
