"""What is running in a project and what ran lately, read from the state files
(`deepwork status`, docs/navigation.md).

`project_overview` reads the workflow stacks, the sessions on them and the newest finished
sessions; it writes nothing and holds the state lock only while reading the stacks.
"""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, ConfigDict

from deepwork_core.base.errors import SessionError
from deepwork_core.evidence.verdicts import VerdictKind
from deepwork_core.state.review_usage import ReviewUsage, run_id_of, run_usage
from deepwork_core.state.sessions import (
    Session,
    SessionStatus,
    SessionStore,
)

#: How many finished sessions `project_overview` lists by default.
DEFAULT_FINISHED = 5


class _View(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ActiveEntry(_View):
    """One session on a workflow stack."""

    session_id: str
    agent_id: str | None
    job: str
    workflow: str
    #: The current step ids (several for a concurrent group).
    steps: list[str]
    started_at: datetime
    #: Quality-gate submissions of the current step(s) so far.
    attempts: int
    #: The outcome of the session's last gate submission: passed, needs_work, self_review,
    #: override, unreviewed (no review applied) or error; None before the first.
    last_verdict: str | None
    branch: str | None
    goal: str
    #: True while the current step waits for a human (`deepwork approve`, docs/evidence.md).
    awaiting_approval: bool = False
    #: Decisions humans gave in this session so far (approved or not).
    approvals: int = 0


class StackView(_View):
    """One stack, bottom first: the main stack (`agent_id` None) or an agent's."""

    agent_id: str | None
    entries: list[ActiveEntry]
    #: What the reviews of the stack's run (its bottom workflow's) cost so far.
    review_usage: ReviewUsage = ReviewUsage()


class FinishedEntry(_View):
    session_id: str
    job: str
    workflow: str
    status: str
    started_at: datetime
    finished_at: datetime | None
    abort_reason: str | None


class ProjectOverview(_View):
    stacks: list[StackView]
    finished: list[FinishedEntry]


def last_verdict(session: Session) -> str | None:
    """The outcome of the newest quality-gate entry of `session` (see `ActiveEntry`)."""
    if not session.quality_log:
        return None
    event = session.quality_log[-1]
    if event.kind is VerdictKind.REVIEWER:
        return "passed" if event.passed else "needs_work"
    return event.kind.value


def gate_attempts(session: Session) -> int:
    """How many gate submissions the current step(s) had."""
    current = set(session.current_step_ids)
    return sum(1 for event in session.quality_log if current.intersection(event.step_ids))


def active_entry(session: Session, agent_id: str | None) -> ActiveEntry:
    return ActiveEntry(
        session_id=session.session_id,
        agent_id=agent_id,
        job=session.job_name,
        workflow=session.workflow_name,
        steps=list(session.current_step_ids),
        started_at=session.started_at,
        attempts=gate_attempts(session),
        last_verdict=last_verdict(session),
        branch=session.branch_name,
        goal=session.goal,
        awaiting_approval=session.pending_approval is not None,
        approvals=len(session.approvals),
    )


def project_overview(
    store: SessionStore, *, finished_limit: int = DEFAULT_FINISHED
) -> ProjectOverview:
    """The stacks of `store`'s project and its `finished_limit` newest finished sessions."""
    stacks = [
        StackView(
            agent_id=agent,
            entries=[active_entry(s, agent) for s in sessions],
            review_usage=run_usage(store.project_root, run_id_of(sessions[0], store.load)),
        )
        for agent, sessions in store.all_stacks().items()
        if sessions
    ]
    active = {entry.session_id for stack in stacks for entry in stack.entries}
    return ProjectOverview(stacks=stacks, finished=_finished(store, active, finished_limit))


def _finished(store: SessionStore, active: set[str], limit: int) -> list[FinishedEntry]:
    """The newest `limit` finished sessions, newest first (by when they were last written)."""
    finished: list[FinishedEntry] = []
    for session_id in store.session_ids(finished=True):
        if session_id in active:
            continue
        if len(finished) >= limit:
            break
        try:
            session = store.load(session_id)
        except SessionError:
            continue  # pruned meanwhile, or unreadable: `deepwork log` reports it
        if session.status is SessionStatus.ACTIVE:
            continue  # started by another process after the stacks were read
        finished.append(
            FinishedEntry(
                session_id=session.session_id,
                job=session.job_name,
                workflow=session.workflow_name,
                status=session.status.value,
                started_at=session.started_at,
                finished_at=session.completed_at,
                abort_reason=session.abort_reason,
            )
        )
    return finished
