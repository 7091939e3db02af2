"""What the dashboard pages show (docs/dashboard.md).

The runs and a run's detail are core's read model (`deepwork_core.state.read_model.runs`), the
same one `deepwork report` and `deepwork status` render; this module adds only what the browser
shows besides: the workflow graph, placed (`graph_svg`), and the open approval requests with
previews of their files.
Every function here only reads. Text in these views is raw; the templates escape it.
"""

from __future__ import annotations

import contextlib
import os
from datetime import datetime
from pathlib import Path
from typing import Final

from deepwork_core import DeepWorkError, JobCatalog
from deepwork_core.base.error_codes import ErrorCode
from deepwork_core.base.errors import FileReadError, SessionError
from deepwork_core.base.fsutil import read_bytes_file
from deepwork_core.base.identifiers import SessionId
from deepwork_core.engine.fanout.instances import instance_state
from deepwork_core.evidence.hashes import sha256_file
from deepwork_core.evidence.verdicts import VerdictKind
from deepwork_core.jobs.discovery import parse_folder_list
from deepwork_core.jobs.graph import build_graph
from deepwork_core.state.approvals.models import ApprovalRecord, ApprovalRequest
from deepwork_core.state.approvals.policy import Standing
from deepwork_core.state.approvals.store import ApprovalStore
from deepwork_core.state.read_model.detail import SessionDetail, session_detail
from deepwork_core.state.read_model.runs import SessionView, page_sessions
from deepwork_core.state.sessions import Session, SessionStatus, SessionStore
from deepwork_core.state.store.tables.approval_rows import partial_approvals, undecided_requests
from deepwork_core.state.store.tables.session_lists import (
    StoredSession,
    awaiting_ids,
    instance_ids,
    list_session_rows,
)
from deepwork_core.state.store.tables.shown_bytes import Kept
from deepwork_core.state.store.tables.shown_bytes import load as load_shown
from markupsafe import Markup
from pydantic import BaseModel, ConfigDict, Field

from deepwork_mcp.dashboard.graph_svg import GraphDrawing, StepState, drawing, svg
from deepwork_mcp.dashboard.shown_files import FilePreview, stored_preview

#: The environment variable naming more job folders (as for `deepwork serve`).
ADDITIONAL_FOLDERS_ENV: Final = "DEEPWORK_ADDITIONAL_JOBS_FOLDERS"
#: A shown file larger than this is not previewed.
MAX_PREVIEW_BYTES: Final = 1024 * 1024
#: Characters of a text file the approval page shows.
PREVIEW_CHARS: Final = 4000
#: Runs on one page of the list (newest first; `?page=2` shows the next ones).
RUNS_PER_PAGE: Final = 100


class _View(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ApprovalView(_View):
    """An open approval request: what the human approves."""

    session_id: str
    request_id: str
    job: str
    workflow: str
    step_ids: list[str]
    prompt: str
    requested_at: datetime
    files: list[FilePreview]
    #: Set when the request is not the one the server opened (its seal does not verify): then
    #: nothing of it is shown and it cannot be decided.
    problem: str | None = None
    #: Another project of a shared store (docs/team.md): its id, and `root on machine`.
    project_id: str | None = None
    project: str | None = None
    #: Set when a shown file changed since the request: why it can no longer be decided on the
    #: bytes asked about and what happens next; the card's buttons are disabled.
    stale: str | None = None
    #: Where a request several must sign stands (`1 of 2 approvals (alice)`); None otherwise.
    standing: str | None = None


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
    for other in _loaded(store, ids):
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


def preview(project_root: Path, relative: str) -> tuple[str | None, str | None]:
    """(the start of the file as text, None) or (None, why there is no preview)."""
    path = project_root / relative
    try:
        path.resolve().relative_to(project_root.resolve())
    except (ValueError, OSError):
        return None, "outside the project: not shown"
    try:
        data = read_bytes_file(path, limit=MAX_PREVIEW_BYTES, follow_symlinks=False)
    except FileReadError as exc:
        return None, f"no preview ({exc.code})"
    if b"\0" in data[:8192]:
        return None, "binary file: no preview"
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return None, "not UTF-8 text: no preview"
    if len(text) > PREVIEW_CHARS:
        return text[:PREVIEW_CHARS], f"first {PREVIEW_CHARS} characters of {len(text)}"
    return text, None


def pending_approval(
    approvals: ApprovalStore, session: Session, served: str | None = None
) -> ApprovalView | None:
    """The open, undecided approval request of `session`, with previews of its files;
    `served`: where the run is served, when it is another project's (only stored bytes shown).

    With the project's key (`approvals.key`) the request is shown only when its seal verifies:
    what the human sees is what the server asked, never an agent's edit of the file.
    """
    if session.pending_approval is None or session.status is not SessionStatus.ACTIVE:
        return None
    try:
        record = approvals.load(session.session_id)
    except DeepWorkError:
        return None
    if record is None or record.standing().concluding is not None:
        return None  # a partial approval (1 of 2) still waits, and is shown as such
    request = record.request
    several = request.policy is not None and request.policy.required > 1
    view = ApprovalView(
        session_id=request.session_id,
        request_id=request.request_id,
        job=session.job_name,
        workflow=session.workflow_name,
        step_ids=list(session.current_step_ids),
        prompt="",
        requested_at=request.requested_at,
        files=[],
        standing=record.standing().text() if several else None,
    )
    if served is not None:
        files = _previews(approvals, request, (approvals.project_id, served))
        return _elsewhere(view, request, files, served, approvals.project_id)
    problem = _request_problem(approvals, record)
    if problem is not None:
        return view.model_copy(update={"problem": problem})
    files = _previews(approvals, request)
    return view.model_copy(
        update={
            "step_ids": list(request.step_ids),
            "prompt": request.prompt,
            "files": files,
            "stale": _stale(approvals, files),
        }
    )


def _stale(approvals: ApprovalStore, files: list[FilePreview]) -> str | None:
    """Why the request can no longer be decided, when a shown file changed since it was opened
    (a decision would be refused with `approval.outputs_changed`); None otherwise. On a shared
    store the serving machine compares the hashes, so this checkout's bytes decide nothing."""
    changed = [f.path for f in files if f.changed]
    if not changed or approvals.trusted.shared:
        return None
    return (
        f"{', '.join(changed)} changed since this request was made, so it can no longer be "
        "decided on the bytes asked about: Approve and Reject are disabled. The agent must call "
        "finished_step again, which makes a new request with the new hashes; it shows here then."
    )


def _previews(
    approvals: ApprovalStore,
    request: ApprovalRequest,
    elsewhere: tuple[str, str] | None = None,
) -> list[FilePreview]:
    """The shown files with the bytes the store keeps of them (docs/team.md).

    `elsewhere`: the request is of another project (its id, and where it is served): only the
    stored bytes are shown, never a file of that name in this checkout. On the serving checkout
    a file that changed since shows its current content under its current hash (an approval
    would be refused); one the store keeps nothing of (a request from before it kept bytes) is
    previewed from the checkout, where it has the asked-about bytes.
    """
    project_id = approvals.project_id if elsewhere is None else elsewhere[0]
    with approvals.store.read() as tx:
        kept = load_shown(tx, project_id, request.request_id, request.shown)
    if elsewhere is not None:
        return [stored_preview(f, elsewhere[1]) for f in kept]
    files = []
    for stored in kept:
        now = sha256_file(approvals.project_root, stored.path)
        changed = now != stored.sha256
        if not changed and stored.kept is not Kept.NOT_STORED:
            files.append(stored_preview(stored, None))
            continue
        text, note = preview(approvals.project_root, stored.path)
        if changed:  # the current content is shown under its current hash
            note = _changed_note(approvals, now) + (f"; {note}" if note else "")
        files.append(
            FilePreview(
                output=stored.output,
                path=stored.path,
                sha256=stored.sha256,
                text=text,
                note=note,
                now_sha256=now if changed else None,
                changed=changed,
            )
        )
    return files


def other_projects_approvals(approvals: ApprovalStore) -> list[ApprovalView]:
    """The open, undecided requests of the other projects of a shared store (docs/team.md),
    newest first; none on a store of this project's own. Their seals are the serving
    machines' to check; the files are shown with the bytes the store keeps of them."""
    if not approvals.trusted.shared:
        return []
    own = approvals.project_id
    with approvals.store.read() as tx:
        found = [r for r in undecided_requests(tx) if r.project_id != own]
        partial = partial_approvals(tx)
    views = []
    for row in found:
        try:
            request = ApprovalRequest.model_validate_json(row.body)
        except ValueError:
            continue  # not a request: nothing a human could decide
        served = f"{row.project_root} on {row.machine}"
        files = _previews(approvals, request, (row.project_id, served))
        view = ApprovalView(
            session_id=request.session_id,
            request_id=request.request_id,
            job=request.job_name,
            workflow=request.workflow_name,
            step_ids=list(request.step_ids),
            prompt="",
            requested_at=request.requested_at,
            files=[],
            standing=_so_far(request, partial.get((row.project_id, request.session_id))),
        )
        views.append(_elsewhere(view, request, files, served, row.project_id))
    return views


def _so_far(request: ApprovalRequest, partial: tuple[int, list[str]] | None) -> str | None:
    """Where a request several must sign stands (`partial`: its approvers so far)."""
    policy = request.policy
    if policy is None or policy.required <= 1:
        return None
    return Standing(policy.required, partial[1] if partial else []).text()


def _elsewhere(
    view: ApprovalView,
    request: ApprovalRequest,
    files: list[FilePreview],
    served: str,
    project_id: str,
) -> ApprovalView:
    """`view` of another project's request, with its stored files; stale (not decidable here)
    when a file is not kept whole, saying where it can be decided."""
    unseen = [f.path for f in files if f.changed or f.incomplete]
    return view.model_copy(
        update={
            "step_ids": list(request.step_ids),
            "prompt": request.prompt,
            "files": files,
            "stale": (
                f"{', '.join(unseen)} cannot be shown here with every byte asked about, so "
                f"this request cannot be decided from this checkout: decide it at {served}"
                if unseen
                else None
            ),
            "project_id": project_id,
            "project": served,
        }
    )


def _changed_note(approvals: ApprovalStore, now: str | None) -> str:
    where = "this checkout" if approvals.trusted.shared else "the project"
    if now is None:
        return (
            f"{where} no longer holds this file; an approval counts only for the bytes asked about"
        )
    return (
        f"{where} holds other bytes than the ones asked about: shown above is the current "
        "content, under its current hash; an approval counts only for the bytes asked about"
    )


def _request_problem(approvals: ApprovalStore, record: ApprovalRecord) -> str | None:
    """Why the request cannot be shown as the server's; None when it can (or cannot be told
    here: no key, or a shared store whose requests the serving machine sealed)."""
    if approvals.key is None or approvals.trusted.shared:
        return None
    try:
        why = approvals.why_request_unverified(record)
    except DeepWorkError as exc:
        return f"{exc.code}: {exc.message}"
    if why is None:
        return None
    return (
        f"{ErrorCode.APPROVAL_REQUEST_UNVERIFIED}: {why}. The agent must call finished_step again."
    )


def open_approvals(
    store: SessionStore, approvals: ApprovalStore | None = None
) -> list[ApprovalView]:
    """Every open approval request of the project, newest session first, then those of the
    other projects of a shared store."""
    approvals = approvals or ApprovalStore(store.store, store.project_root)
    db = store.store
    with db.read() as tx:
        waiting = awaiting_ids(tx, db.project.project_id)
    views: list[ApprovalView] = []
    for session in _loaded(store, waiting):  # one pruned or changed meanwhile is left out
        view = pending_approval(approvals, session)
        if view is not None:
            views.append(view)
    return views + other_projects_approvals(approvals)


def _loaded(store: SessionStore, session_ids: list[SessionId]) -> list[Session]:
    """The sessions of `session_ids` that can be read, in that order, in one transaction."""
    sessions: list[Session] = []
    if not session_ids:
        return sessions
    with store.transaction() as tx:
        for session_id in session_ids:
            with contextlib.suppress(SessionError):
                sessions.append(tx.load(session_id))
    return sessions


def all_runs(store: SessionStore, limit: int = 1000) -> list[StoredSession]:
    """Every run of every project in the project's store, newest first (docs/team.md)."""
    with store.store.read() as tx:
        return list_session_rows(tx, limit=limit)
