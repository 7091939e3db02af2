"""What the dashboard pages show (docs/dashboard.md).

The runs and a run's detail are core's read model (`deepwork_core.state.read_model.runs`), the
same one `deepwork report` and `deepwork status` render; this module adds only what the browser
shows besides: the workflow graph, placed (`graph_svg`), the instances of fanned-out steps, and
the run's open approval card (built in `approval_views`).
Every function here only reads. Text in these views is raw; the templates escape it.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Final

from deepwork_core import DeepWorkError, JobCatalog
from deepwork_core.base.identifiers import SessionId
from deepwork_core.engine.fanout.instances import instance_state
from deepwork_core.evidence.verdicts import VerdictKind
from deepwork_core.jobs.discovery import parse_folder_list
from deepwork_core.jobs.graph import build_graph
from deepwork_core.state.approvals.store import ApprovalStore
from deepwork_core.state.read_model.detail import SessionDetail, session_detail
from deepwork_core.state.read_model.runs import SessionView, page_sessions
from deepwork_core.state.sessions import Session, SessionStatus, SessionStore
from deepwork_core.state.store.tables.session_lists import (
    StoredSession,
    instance_ids,
    list_session_rows,
)
from markupsafe import Markup
from pydantic import BaseModel, ConfigDict, Field

from deepwork_mcp.dashboard.approval_views import (
    ApprovalView,
    pending_approval,
    readable_sessions,
)
from deepwork_mcp.dashboard.graph_svg import GraphDrawing, StepState, drawing, svg

#: The environment variable naming more job folders (as for `deepwork serve`).
ADDITIONAL_FOLDERS_ENV: Final = "DEEPWORK_ADDITIONAL_JOBS_FOLDERS"
#: Runs on one page of the list (newest first; `?page=2` shows the next ones).
RUNS_PER_PAGE: Final = 100


class _View(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class InstanceRow(_View):
    """One instance of a fanned-out step of the run (docs/fan-out.md)."""

    step_id: str
    index: int
    item: str
    session_id: str
    state: str
    abort_reason: str | None = None


class SessionPage(_View):
    """The run page: core's read model of the run, its workflow graph and its open approval."""

    detail: SessionDetail
    #: The workflow graph, placed, or None (`graph_problem` says why).
    graph: GraphDrawing | None
    graph_problem: str | None = None
    approval: ApprovalView | None
    #: The instances of the run's fanned-out steps, by step then item order.
    instances: list[InstanceRow] = Field(default_factory=list)

    @property
    def graph_svg(self) -> Markup | None:
        """The workflow graph as an `<svg>` element, or None."""
        return None if self.graph is None else svg(self.graph)


def runs(store: SessionStore, *, limit: int = RUNS_PER_PAGE, offset: int = 0) -> list[SessionView]:
    """One page of runs, newest start first, each nested run under its parent when both are on
    the page: the read model's `page_sessions`, one indexed query of the store's list columns and no
    session document read. Instances of a fanned-out step are listed on their parent's page."""
    return page_sessions(store, limit=limit, offset=offset)


def step_states(session: Session) -> dict[str, StepState]:
    states: dict[str, StepState] = {}
    for step_id, record in session.step_progress.items():
        states[step_id] = StepState.DONE if record.completed_at else StepState.STARTED
    if session.status is SessionStatus.ACTIVE:
        for step_id in session.current_step_ids:
            states[step_id] = StepState.CURRENT
    return states


def instance_rows(store: SessionStore, session: Session) -> list[InstanceRow]:
    """The instances `session`'s fanned-out steps started, by step then item order: their ids
    from one indexed query, then only their documents (one that cannot be read is left out)."""
    db = store.store
    with db.read() as tx:
        ids = instance_ids(tx, db.project.project_id, session.session_id)
    rows = []
    for other in readable_sessions(store, ids):
        of = other.instance_of
        if of is None or other.parent_session_id != session.session_id:
            continue
        rows.append(
            InstanceRow(
                step_id=other.started_for_step or other.current_step_id,
                index=of.index,
                item=of.item,
                session_id=other.session_id,
                state=instance_state(other),
                abort_reason=other.abort_reason,
            )
        )
    return sorted(rows, key=lambda row: (row.step_id, row.index))


def fan_counts(rows: list[InstanceRow]) -> dict[str, dict[str, int]]:
    """Each fanned-out step's instances by state."""
    counts: dict[str, dict[str, int]] = {}
    for row in rows:
        by_state = counts.setdefault(row.step_id, {})
        by_state[row.state] = by_state.get(row.state, 0) + 1
    return counts


def _graph(
    project_root: Path,
    session: Session,
    passed: frozenset[str],
    counts: dict[str, dict[str, int]] | None = None,
) -> tuple[GraphDrawing | None, str | None]:
    additional = parse_folder_list(os.environ.get(ADDITIONAL_FOLDERS_ENV))
    try:
        catalog = JobCatalog.for_project(
            project_root, [p.expanduser().resolve() for p in additional]
        )
        graph = build_graph(catalog.get(session.job_name).definition, session.workflow_name)
    except DeepWorkError as exc:
        return None, f"{exc.code}: {exc.message}"
    return drawing(graph, step_states(session), passed, counts), None


def session_page_view(
    store: SessionStore,
    session_id: SessionId,
    approvals: ApprovalStore | None = None,
    served: str | None = None,
) -> SessionPage:
    """Everything the run page shows. Raises `session.not_found` for an unknown session.

    `served`: the run is another project's of the store (`root on machine`), read from the
    store alone: its approval card shows the stored bytes only and its workflow picture is
    drawn where it is served (its job files are not here).
    """
    detail = session_detail(store, session_id)
    session = store.load(session_id)
    passed = frozenset(
        step
        for verdict in detail.summary.verdicts
        if verdict.kind is VerdictKind.REVIEWER
        for step in verdict.step_ids
    )
    if detail.summary.verdicts_omitted:
        # Older checkpoints are not listed: the accepted outputs still say which a review passed.
        passed |= {e.step_id for e in session.evidence if e.verdict is VerdictKind.REVIEWER}
    instances = instance_rows(store, session)
    if served is None:
        graph, graph_problem = _graph(store.project_root, session, passed, fan_counts(instances))
    else:
        graph, graph_problem = (
            None,
            (f"the workflow picture is drawn by the dashboard of {served}, which holds the job"),
        )
    return SessionPage(
        detail=detail,
        graph=graph,
        graph_problem=graph_problem,
        approval=pending_approval(
            approvals or ApprovalStore(store.store, store.project_root), session, served
        ),
        instances=instances,
    )


def all_runs(store: SessionStore, limit: int = 1000) -> list[StoredSession]:
    """Every run of every project in the project's store, newest first (docs/team.md)."""
    with store.store.read() as tx:
        return list_session_rows(tx, limit=limit)
