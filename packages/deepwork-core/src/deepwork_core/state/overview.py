"""What is running in a project and what ran lately, read from its store
(`deepwork status`, docs/navigation.md).

`project_overview` reads the workflow stacks, the sessions on them and the newest finished
sessions; it writes nothing. What it reads does not grow with the project's history: the
finished runs and the branches' first runs come from indexed queries of the list columns
(`state.store.tables.session_lists`), and only the documents of the runs shown are parsed.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import datetime
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from deepwork_core.base.errors import GitError, SessionError
from deepwork_core.base.git import run_git
from deepwork_core.evidence.verdicts import VerdictKind
from deepwork_core.state.approvals.policy import Standing
from deepwork_core.state.event_kinds import decided_by
from deepwork_core.state.sessions import (
    Session,
    SessionStore,
)
from deepwork_core.state.store.tables.approval_rows import (
    expired_requests,
    open_deciders,
    open_decisions,
    partial_approvals,
)
from deepwork_core.state.store.tables.session_lists import branch_origins, finished_ids
from deepwork_core.state.usage.pair import RunUsage
from deepwork_core.state.usage.totals import run_id_of, run_usage

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
    #: While it waits: the human's decision the agent has not picked up yet (True approved,
    #: False changes requested); None: not decided yet.
    decided: bool | None = None
    #: With `decided`: who decided so, in a person's words (`approver bob (on laptop as bob)`,
    #: several joined with "and").
    decided_by: str | None = None
    #: Decisions humans gave in this session so far (approved or not).
    approvals: int = 0
    #: While it waits on a request several must sign, partly approved: where it stands
    #: (`1 of 2 approvals (alice)`); None otherwise.
    standing: str | None = None
    #: True when the open request's time passed before it was settled (read from its
    #: `expires_at`): it reads as expired, and no decision can count any more.
    expired: bool = False


class StackView(_View):
    """One stack, bottom first: the main stack (`agent_id` None) or an agent's."""

    agent_id: str | None
    entries: list[ActiveEntry]
    #: What the reviews of the stack's run (its bottom workflow's) cost so far.
    review_usage: RunUsage = RunUsage()


class FinishedEntry(_View):
    session_id: str
    job: str
    workflow: str
    status: str
    started_at: datetime
    finished_at: datetime | None
    abort_reason: str | None


class WorkflowBranch(_View):
    """A `deepwork/…` branch of the repository, the branch its run started from, and whether
    its work is merged there (into HEAD when no run records where it started)."""

    name: str
    started_from: str | None
    merged: bool
    #: False when nothing was ever committed on the branch (its reflog holds only its
    #: creation): "merged" would then say nothing, the run's outputs are uncommitted.
    committed: bool = True


class ProjectOverview(_View):
    stacks: list[StackView]
    finished: list[FinishedEntry]
    #: DeepWork's branches in the repository (empty outside git).
    branches: list[WorkflowBranch] = []


def last_verdict(session: Session) -> str | None:
    """The outcome of the newest quality-gate entry of `session` (see `ActiveEntry`)."""
    if not session.quality_log:
        return None
    event = session.quality_log[-1]
    if event.kind is VerdictKind.REVIEWER:
        return "passed" if event.passed else "needs_work"
    return event.kind.value


def gate_attempts(session: Session) -> int:
    """How many gate submissions the current step(s) had; a gate error that is not an attempt
    (a spent budget, a stalled reviewer: `NOT_AN_ATTEMPT`) is not counted."""
    current = set(session.current_step_ids)
    return sum(
        1
        for event in session.quality_log
        if event.is_attempt and current.intersection(event.step_ids)
    )


def active_entry(
    session: Session, agent_id: str | None, decided: bool | None = None
) -> ActiveEntry:
    waiting = session.pending_approval is not None
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
        awaiting_approval=waiting,
        decided=decided if waiting else None,
        approvals=len(session.approvals),
    )


def _with_standing(
    entry: ActiveEntry, partial: tuple[int, list[str]] | None, expired: bool = False
) -> ActiveEntry:
    if not entry.awaiting_approval:
        return entry
    if expired:
        entry = entry.model_copy(update={"expired": True})
    if partial is None:
        return entry
    return entry.model_copy(update={"standing": Standing(*partial).text()})


def _with_deciders(
    entry: ActiveEntry, decisions: list[tuple[bool, str | None, str]] | None
) -> ActiveEntry:
    if entry.decided is None or not decisions:
        return entry
    who = [decided_by(signer, actor) for approved, signer, actor in decisions
           if approved is entry.decided]  # fmt: skip
    return entry.model_copy(update={"decided_by": " and ".join(who) or None})


def project_overview(
    store: SessionStore, *, finished_limit: int = DEFAULT_FINISHED
) -> ProjectOverview:
    """The stacks of `store`'s project and its `finished_limit` newest finished sessions."""
    project_id = store.store.project.project_id
    with store.store.read() as tx:
        waiting = open_decisions(tx, project_id)
        partial = partial_approvals(tx, project_id)
        expired = expired_requests(tx, time.time(), project_id)
        deciders = open_deciders(tx, project_id)
    stacks = [
        StackView(
            agent_id=agent,
            entries=[
                _with_deciders(
                    _with_standing(
                        active_entry(s, agent, waiting.get((project_id, s.session_id))),
                        partial.get((project_id, s.session_id)),
                        (project_id, s.session_id) in expired,
                    ),
                    deciders.get((project_id, s.session_id)),
                )
                for s in sessions
            ],
            review_usage=run_usage(store.store, run_id_of(sessions[0], store.load)),
        )
        for agent, sessions in store.all_stacks().items()
        if sessions
    ]
    active = {entry.session_id for stack in stacks for entry in stack.entries}
    db = store.store

    def origins(names: list[str]) -> dict[str, str | None]:
        with db.read() as tx:
            return branch_origins(tx, db.project.project_id, names)

    return ProjectOverview(
        stacks=stacks,
        finished=_finished(store, active, finished_limit),
        branches=workflow_branches(store.project_root, origins),
    )


def empty_overview(project_root: Path) -> ProjectOverview:
    """The overview of a project that has no store yet: nothing ran, only its branches show."""
    return ProjectOverview(
        stacks=[], finished=[], branches=workflow_branches(project_root, lambda names: {})
    )


def workflow_branches(
    project_root: Path, origins: Callable[[list[str]], dict[str, str | None]]
) -> list[WorkflowBranch]:
    """Every local `deepwork/…` branch, with where its run started (`origins` answers that for
    the branches listed: where each one's first run started) and whether it is merged there;
    [] outside git or when git fails."""
    listed = _git(project_root, "for-each-ref", "--format=%(refname:short)", "refs/heads/deepwork/")
    if listed is None:
        return []
    names = sorted(filter(None, listed.splitlines()))
    origin = origins(names) if names else {}
    branches = []
    for name in names:
        base = origin.get(name)
        merged = _git(project_root, "merge-base", "--is-ancestor", name, base or "HEAD") is not None
        log = _git(project_root, "reflog", "show", "--format=%H", f"refs/heads/{name}")
        committed = log is None or len(log.split()) != 1  # no reflog: not known, say nothing
        branches.append(
            WorkflowBranch(name=name, started_from=base, merged=merged, committed=committed)
        )
    return branches


def _git(project_root: Path, *args: str) -> str | None:
    """git's output, or None when it failed (not a repository, no such branch, not merged)."""
    try:
        done = run_git(list(args), cwd=project_root, check=False)
    except GitError:
        return None
    return done.stdout if done.returncode == 0 else None


def _finished(store: SessionStore, active: set[str], limit: int) -> list[FinishedEntry]:
    """The newest `limit` finished runs, newest end first: their ids from one indexed query,
    then only their documents (one that cannot be read is left out; `deepwork log` reports
    it)."""
    if limit <= 0:
        return []
    db = store.store
    with db.read() as tx:
        ids = finished_ids(tx, db.project.project_id, limit=limit + len(active))
    entries: list[FinishedEntry] = []
    with store.transaction() as tx:
        for session_id in ids:
            if session_id in active or len(entries) == limit:
                continue
            try:
                session = tx.load(session_id)
            except SessionError:
                continue
            entries.append(
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
    return entries
