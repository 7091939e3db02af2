"""The approval cards the dashboard shows (docs/dashboard.md): each open request of the project
and, on a shared store, of the other projects, with previews of its files (from the bytes the
store keeps, or this checkout's file for a request from before it kept them), why a card cannot be
decided (a seal that does not verify, a file changed since) and where a request several must sign
stands. Every function here only reads. Text in these views is raw; the templates escape it.
"""

from __future__ import annotations

import contextlib
from datetime import UTC, datetime
from pathlib import Path
from typing import Final

from deepwork_core import DeepWorkError
from deepwork_core.base.error_codes import ErrorCode
from deepwork_core.base.errors import FileReadError, SessionError
from deepwork_core.base.fsutil import read_bytes_file
from deepwork_core.base.identifiers import SessionId
from deepwork_core.evidence.hashes import sha256_file
from deepwork_core.state.approvals.ending import expired_end
from deepwork_core.state.approvals.models import ApprovalRecord, ApprovalRequest
from deepwork_core.state.approvals.policy import RequestPolicy, Standing
from deepwork_core.state.approvals.store import ApprovalStore
from deepwork_core.state.sessions import Session, SessionStatus, SessionStore
from deepwork_core.state.store.tables.approval_rows import partial_approvals, undecided_requests
from deepwork_core.state.store.tables.session_lists import (
    awaiting_ids,
)
from deepwork_core.state.store.tables.shown_bytes import Kept
from deepwork_core.state.store.tables.shown_bytes import load as load_shown
from pydantic import BaseModel, ConfigDict

from deepwork_mcp.dashboard.shown_files import FilePreview, stored_preview

#: A shown file larger than this is not previewed.
MAX_PREVIEW_BYTES: Final = 1024 * 1024
#: Characters of a text file the approval page shows.
PREVIEW_CHARS: Final = 4000


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
    #: `expired` when the request's time passed before it was settled (read from its
    #: `expires_at`): the card says so (`stale`) and cannot be decided.
    ended: str | None = None


def _expired(view: ApprovalView, policy: RequestPolicy | None, so_far: Standing) -> ApprovalView:
    """`view`, marked expired (its buttons disabled) when its request's time has passed."""
    end = expired_end(policy, so_far, datetime.now(UTC))
    if end is None:
        return view
    why = (
        f"This request {end.text()}. It can no longer be decided: the agent calls go_to_step "
        "to redo the step and ask anew, or abort_workflow"
    )
    return view.model_copy(update={"ended": end.state.value, "stale": why})


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
        elsewhere = _elsewhere(view, request, files, served, approvals.project_id)
        return _expired(elsewhere, request.policy, record.standing())
    problem = _request_problem(approvals, record)
    if problem is not None:
        return view.model_copy(update={"problem": problem})
    files = _previews(approvals, request)
    shown = view.model_copy(
        update={
            "step_ids": list(request.step_ids),
            "prompt": request.prompt,
            "files": files,
            "stale": _stale(approvals, files),
        }
    )
    return _expired(shown, request.policy, record.standing())


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
        shown = _elsewhere(view, request, files, served, row.project_id)
        found_so_far = partial.get((row.project_id, request.session_id))
        required = 1 if request.policy is None else request.policy.required
        so_far = Standing(required, found_so_far[1] if found_so_far else [])
        views.append(_expired(shown, request.policy, so_far))
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
    for session in readable_sessions(store, waiting):  # one pruned or changed meanwhile is left out
        view = pending_approval(approvals, session)
        if view is not None:
            views.append(view)
    return views + other_projects_approvals(approvals)


def readable_sessions(store: SessionStore, session_ids: list[SessionId]) -> list[Session]:
    """The sessions of `session_ids` that can be read, in that order, in one transaction."""
    sessions: list[Session] = []
    if not session_ids:
        return sessions
    with store.transaction() as tx:
        for session_id in session_ids:
            with contextlib.suppress(SessionError):
                sessions.append(tx.load(session_id))
    return sessions
