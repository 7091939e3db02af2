"""The dashboard's routes (docs/dashboard.md).

GET `/` (runs), `/fragment/runs` (the table the page refreshes), `/run/{session_id}`,
`/all` and `/fragment/all` (every run of every project in the store, live), `/reviews` and
`/fragment/reviews[?session=…]` (the background reviews, live), `/approvals`, `/stats`,
`/static/dashboard.css|js`; POST `/approvals/{session_id}` records the
human's decision through the same core function `deepwork approve` calls
(`deepwork_core.state.approvals.decide.record_decision`), on the `dashboard` channel, pinned
to the request the page showed: a file changed since, or a request replaced since, is refused
and the page says why. The decision is sealed with the project's approval key and signed with
the local approver's key when there is one, found as `deepwork approve` finds them
(docs/security.md, docs/team.md).
On a shared store the approvals page lists the open requests of every project in it, and a
form's `project` field sends a decision to another project's run (signed: nothing else counts
there).
Every route sits behind `DashboardGuard`.
"""

from __future__ import annotations

import contextlib
import getpass
import logging
import os
import socket
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Final
from urllib.parse import parse_qs

from deepwork_core import DeepWorkError
from deepwork_core.base.error_codes import ErrorCode
from deepwork_core.base.git import user_email
from deepwork_core.base.identifiers import SessionId, parse_session_id
from deepwork_core.state.approvals.decide import record_decision
from deepwork_core.state.approvals.models import ApprovalChannel, ApprovalError
from deepwork_core.state.approvals.store import ApprovalStore, nothing_to_decide
from deepwork_core.state.read_model.runs import SessionView
from deepwork_core.state.sessions import SessionStore
from deepwork_core.state.stats import collect_stats
from deepwork_core.state.store.opening import StoreWhenItExists, choose_store_url
from deepwork_core.state.store.port import Store
from deepwork_core.state.store.tables.approval_rows import project_of
from deepwork_core.state.store.tables.session_lists import StoredSession
from deepwork_core.state.store.url import STORE_URL_ENV
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import HTMLResponse, Response
from starlette.routing import Route

from deepwork_mcp.approvals.keys import (
    approval_key,
    local_signer,
    state_dir,
    trusted_approvers,
)
from deepwork_mcp.dashboard import approval_views, pages, reviews, views
from deepwork_mcp.dashboard.assets import SCRIPT, STYLESHEET
from deepwork_mcp.dashboard.guard import TOKEN_FIELD, DashboardGuard, same_token
from deepwork_mcp.dashboard.other_project import other_project
from deepwork_mcp.dashboard.rendering import text
from deepwork_mcp.dashboard.run_page import run_page

logger = logging.getLogger("deepwork.dashboard")

#: A decision form larger than this is refused (a reason is a sentence or two).
MAX_FORM_BYTES: Final = 64 * 1024


def os_actor() -> str:
    """`user@host` of the person running the dashboard, as `deepwork approve` records it."""
    try:
        user = getpass.getuser()
    except (KeyError, OSError):
        user = str(os.getuid())
    return f"{user}@{socket.gethostname()}"


class DashboardRoutes:
    """The handlers of one dashboard, bound to one project and one token.

    The dashboard is a composition root: it opens the project's store (chosen as every command
    chooses it) the first time the project has one, so a dashboard started before any run
    shows the runs a server starts later, and closes it when the app stops (`lifespan`).
    The handlers that read or write state files are plain functions: Starlette runs them in its
    thread pool, so a state lock held by a server never stalls the event loop.
    """

    def __init__(self, project_root: Path, token: str) -> None:
        self.root = project_root
        self.token = token
        self.state = state_dir(os.environ)
        self.approval_key = approval_key(self.state, project_root)
        self.trusted = trusted_approvers(project_root, os.environ)
        url = choose_store_url(project_root, os.environ.get(STORE_URL_ENV))
        self.stores = StoreWhenItExists(url, project_root)
        self._sessions: SessionStore | None = None

    def store(self) -> Store | None:
        """The project's store, once it has one (None until then); the warnings of its opening
        (an old file set aside) go to the log."""
        store = self.stores.get()
        if store is not None:
            for notice in store.notices:
                logger.warning("%s", notice)
            store.notices.clear()
        return store

    def sessions(self) -> SessionStore | None:
        """The project's sessions, once it has a store (None until then)."""
        if self._sessions is None:
            store = self.store()
            if store is not None:
                self._sessions = SessionStore(store, self.root)
        return self._sessions

    @contextlib.asynccontextmanager
    async def lifespan(self, app: Starlette) -> AsyncIterator[None]:
        try:
            yield
        finally:
            await run_in_threadpool(self.stores.close)

    def approval_store(
        self, sessions: SessionStore, signing: bool = False, project: str | None = None
    ) -> ApprovalStore:
        """The project's approvals under its key; `signing`: with the local approver's key;
        `project`: the approvals of another project of the shared store (docs/team.md)."""
        signer = local_signer(self.state, os.environ, None, self.trusted) if signing else None
        return ApprovalStore(
            sessions.store,
            self.root,
            self.approval_key,
            trusted=self.trusted,
            signer=signer,
            project_id=project,
        )

    def all_runs(self, request: Request) -> Response:
        return HTMLResponse(pages.all_runs_page(self._all_runs()))

    def all_runs_fragment(self, request: Request) -> Response:
        return HTMLResponse(pages.all_runs_fragment(self._all_runs()))

    def _all_runs(self) -> list[StoredSession]:
        sessions = self.sessions()
        return [] if sessions is None else views.all_runs(sessions)

    def runs(self, request: Request) -> Response:
        page = _page(request)
        return HTMLResponse(pages.runs_page(self._runs(page), page, views.RUNS_PER_PAGE))

    def runs_fragment(self, request: Request) -> Response:
        page = _page(request)
        return HTMLResponse(pages.runs_fragment(self._runs(page), page, views.RUNS_PER_PAGE))

    def _runs(self, page: int) -> list[SessionView]:
        sessions = self.sessions()
        offset = (page - 1) * views.RUNS_PER_PAGE
        return [] if sessions is None else views.runs(sessions, offset=offset)

    def run(self, request: Request) -> Response:
        """A run of this project, or with `?project=<id>` of any project of the store."""
        session_id = str(request.path_params["session_id"])
        project = request.query_params.get("project") or None
        try:
            parsed = parse_session_id(session_id)
        except DeepWorkError:
            return _error("Not a run", f"“{session_id}” is not the name of a run.", 400)
        own = self.sessions()
        if own is None:  # no store, so no run at all
            return _error("No such run", _no_run(session_id), 404)
        sessions, served = own, None
        if project is not None and project != own.store.project.project_id:
            store = other_project(own.store, project)
            if store is None:
                message = f"This store has no project {project!r}, so no run of it either."
                return _error("No such project", message, 404)
            sessions = SessionStore(store, Path(store.project.root))
            served = f"{store.project.root} on {store.project.machine}"
        try:
            approvals = self.approval_store(sessions, project=sessions.store.project.project_id)
            page = views.session_page_view(sessions, parsed, approvals, served)
        except DeepWorkError as exc:
            if exc.code == ErrorCode.SESSION_NOT_FOUND:
                return _error("No such run", _no_run(session_id), 404)
            return _error("This run cannot be shown", f"{exc.code}: {exc.message}", 500)
        rows = reviews.review_rows(sessions.store, parsed)
        table = reviews.ReviewTable(rows=rows, session_id=session_id)
        return HTMLResponse(run_page(page, token=self.token, reviews=table))

    def reviews(self, request: Request) -> Response:
        return HTMLResponse(reviews.reviews_page(reviews.review_rows(self.store())))

    def reviews_fragment(self, request: Request) -> Response:
        session_id = request.query_params.get("session")
        if session_id is not None:
            try:
                parse_session_id(session_id)
            except DeepWorkError as exc:
                return HTMLResponse(text_of(exc), status_code=404)
        rows = reviews.review_rows(self.store(), session_id)
        return HTMLResponse(
            reviews.reviews_fragment(reviews.ReviewTable(rows=rows, session_id=session_id))
        )

    def approvals(self, request: Request) -> Response:
        return HTMLResponse(pages.approvals_page(self._open_approvals(), self.token))

    def _open_approvals(self) -> list[approval_views.ApprovalView]:
        sessions = self.sessions()
        if sessions is None:
            return []
        return approval_views.open_approvals(sessions, self.approval_store(sessions))

    async def decide(self, request: Request) -> Response:
        session_id = str(request.path_params["session_id"])
        body = await request.body()
        if len(body) > MAX_FORM_BYTES:
            return HTMLResponse(pages.message_page("Too large", "form too large"), 413)
        form = {k: v[0] for k, v in parse_qs(body.decode("utf-8", "replace")).items()}
        if not same_token(form.get(TOKEN_FIELD), self.token):
            page = pages.message_page("Forbidden", "The form did not carry the dashboard token.")
            return HTMLResponse(page, status_code=403)
        approved = form.get("decision") == "approve"
        comment = (form.get("comment") or "").strip() or None
        if not approved and comment is None:
            return self._approvals(
                "Rejecting needs a reason: say what the agent should change.", 400
            )
        request_id = form.get("request_id")
        if not request_id:
            return self._approvals("The form did not say which request it answers.", 400)
        project = form.get("project") or None
        return await run_in_threadpool(
            self._record, session_id, approved, comment, request_id, project
        )

    def _record(
        self,
        session_id: str,
        approved: bool,
        comment: str | None,
        request_id: str,
        project: str | None = None,
    ) -> Response:
        try:
            approvals, parsed = self._deciding(session_id, project)
            record = record_decision(
                approvals,
                parsed,
                approved=approved,
                comment=comment,
                channel=ApprovalChannel.DASHBOARD,
                actor=os_actor(),
                terminal=None,
                now=datetime.now(UTC),
                request_id=request_id,
                email=user_email(self.root),
            )
        except DeepWorkError as exc:
            return self._approvals(f"Refused: {exc.code}: {exc.message}", 409)
        verdict = "Approved" if approved else "Changes requested"
        steps = ", ".join(record.request.step_ids)
        return self._approvals(
            f"{verdict} for step {steps} of session {session_id}. "
            "The agent's next finished_step call picks it up.",
            200,
        )

    def _deciding(self, session_id: str, project: str | None) -> tuple[ApprovalStore, SessionId]:
        """The approvals a decision on `session_id` goes to, signed: this project's, or (a
        shared store only) another project's of the same store; with the id, parsed."""
        parsed = parse_session_id(session_id)
        sessions = self.sessions()
        if sessions is None:  # no store, so nothing waits
            raise nothing_to_decide(parsed)
        approvals = self.approval_store(sessions, signing=True)
        if project is None or project == approvals.project_id:
            return approvals, parsed
        if not self.trusted.shared:
            raise ApprovalError(
                "a decision on another project's run needs a shared store (docs/team.md)",
                code=ErrorCode.APPROVAL_NONE_PENDING,
            )
        with approvals.store.read() as tx:
            if project_of(tx, project) is None:
                raise ApprovalError(
                    f"the store has no project {project!r}", code=ErrorCode.APPROVAL_NONE_PENDING
                )
        return self.approval_store(sessions, signing=True, project=project), parsed

    def _approvals(self, notice: str, status: int) -> Response:
        page = pages.approvals_page(self._open_approvals(), self.token, notice, ok=status == 200)
        return HTMLResponse(page, status_code=status)

    def stats(self, request: Request) -> Response:
        return HTMLResponse(pages.stats_page(collect_stats(self.store())))

    def stylesheet(self, request: Request) -> Response:
        return Response(STYLESHEET, media_type="text/css")

    def script(self, request: Request) -> Response:
        return Response(SCRIPT, media_type="text/javascript")


def _error(title: str, message: str, status: int) -> Response:
    return HTMLResponse(pages.error_page(title, message), status_code=status)


def _no_run(session_id: str) -> str:
    return (
        f"There is no run {session_id} in this store: it may have been removed, or the link "
        "is from another store. All projects lists every run this store holds."
    )


def _page(request: Request) -> int:
    """The `page` query parameter (1: the newest runs); anything else than a number is 1."""
    raw = request.query_params.get("page", "1")
    return max(1, min(int(raw), 1_000_000)) if raw.isdigit() else 1


def text_of(exc: DeepWorkError) -> str:
    return text(f"{exc.code}: {exc.message}")


def dashboard_app(
    project_root: Path,
    *,
    port: int,
    token: str,
    bound: str | None = None,
    public_url: str | None = None,
) -> DashboardGuard:
    """The ASGI application of a dashboard listening on 127.0.0.1:`port` (or `bound`:`port`,
    reached as `public_url` through a proxy)."""
    routes = DashboardRoutes(project_root, token)
    app = Starlette(
        routes=[
            Route("/", routes.runs),
            Route("/all", routes.all_runs),
            Route("/fragment/runs", routes.runs_fragment),
            Route("/fragment/all", routes.all_runs_fragment),
            Route("/run/{session_id}", routes.run),
            Route("/reviews", routes.reviews),
            Route("/fragment/reviews", routes.reviews_fragment),
            Route("/approvals", routes.approvals),
            Route("/approvals/{session_id}", routes.decide, methods=["POST"]),
            Route("/stats", routes.stats),
            Route("/static/dashboard.css", routes.stylesheet),
            Route("/static/dashboard.js", routes.script),
        ],
        lifespan=routes.lifespan,
    )
    return DashboardGuard(app, port=port, token=token, bound=bound, public_url=public_url)
