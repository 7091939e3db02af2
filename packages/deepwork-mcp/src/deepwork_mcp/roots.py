"""Which project a tool call works on: `--path`, else the client's first MCP root
(docs/navigation.md).

`ProjectRoot` answers with the fixed folder when the server was started with `--path`. Without
it, the first tool call asks the client for its roots (`roots/list`) and uses the first one that
is a local folder; the answer is kept until the client sends `notifications/roots/list_changed`.
A client that declares no roots capability, offers none, or fails to answer gets the fallback
folder (the server's working directory). `RootsMiddleware` does the asking and puts the answer in
a context variable for the call; `Projects` keeps one set of services per folder
(`ProjectServices`), each with the project's store, which the server opens for that folder and
closes when it stops (docs/architecture.md).
"""

from __future__ import annotations

import logging
import threading
import warnings
from collections.abc import Callable
from contextvars import ContextVar
from pathlib import Path
from typing import TYPE_CHECKING, Any, Generic, TypeVar
from urllib.parse import unquote, urlparse

import anyio
import mcp.types as mt
from deepwork_core.base.layout import STACK_PATH
from fastmcp import Context
from fastmcp.server.middleware import CallNext, Middleware, MiddlewareContext
from fastmcp.tools.base import ToolResult
from mcp.shared.exceptions import MCPDeprecationWarning

if TYPE_CHECKING:
    from deepwork_core.engine.workflow import WorkflowEngine
    from deepwork_core.jobs.discovery import JobCatalog
    from deepwork_core.state.stacks import StackItem
    from deepwork_core.state.store.port import Store

logger = logging.getLogger("deepwork.mcp")

ROOTS_CHANGED = "notifications/roots/list_changed"
#: Seconds the client has to answer `roots/list`.
LIST_ROOTS_TIMEOUT = 10.0

_T = TypeVar("_T")

#: The project folder of the tool call being served (set by `RootsMiddleware`).
current_root: ContextVar[Path | None] = ContextVar("deepwork_current_root", default=None)


def root_folder(uri: str) -> Path | None:
    """The local folder a root URI names, or None (not `file:`, not an existing folder)."""
    parsed = urlparse(uri)
    if parsed.scheme != "file" or parsed.netloc not in ("", "localhost"):
        return None
    path = Path(unquote(parsed.path))
    try:
        return path.resolve() if path.is_absolute() and path.is_dir() else None
    except OSError:
        return None


class ProjectRoot:
    """The project folder: fixed, or the client's first root with a fallback."""

    def __init__(self, *, fixed: Path | None, fallback: Path) -> None:
        self.fixed = fixed.resolve() if fixed is not None else None
        self.fallback = fallback.resolve()
        self._from_client: Path | None = None
        self._stale = True

    @property
    def follows_client(self) -> bool:
        return self.fixed is None

    def invalidate(self) -> None:
        """Forget the client's answer: the next call asks again."""
        self._stale = True

    def known(self) -> Path:
        """The folder as last resolved, without asking (the fallback before any call)."""
        return self.fixed or self._from_client or self.fallback

    async def resolve(self, ctx: Context | None) -> Path:
        if self.fixed is not None:
            return self.fixed
        if self._stale and ctx is not None:
            self._from_client = await self._ask(ctx)
            self._stale = False
        return self._from_client or self.fallback

    async def _ask(self, ctx: Context) -> Path | None:
        try:
            session = ctx.session
            caps = session.client_capabilities
            if caps is None or caps.roots is None:
                return None
            with warnings.catch_warnings(), anyio.fail_after(LIST_ROOTS_TIMEOUT):
                # Deprecated from protocol 2026-07-28 on; the clients that run us still use it.
                warnings.simplefilter("ignore", MCPDeprecationWarning)
                answer = await session.list_roots()
        except Exception as exc:  # the client failed to answer: keep working on the fallback
            logger.warning("roots/list failed (%s); using %s", exc, self.fallback)
            return None
        for root in answer.roots:
            folder = root_folder(str(root.uri))
            if folder is not None:
                logger.info("project root from the client: %s", folder)
                return folder
            logger.warning("client root %s is not a local folder; skipped", root.uri)
        return None


class RootsMiddleware(Middleware):
    """Resolves the project folder for every tool call; forgets it when the roots change."""

    def __init__(self, root: ProjectRoot) -> None:
        self._root = root

    async def on_notification(
        self,
        context: MiddlewareContext[mt.Notification[Any, Any]],
        call_next: CallNext[mt.Notification[Any, Any], Any],
    ) -> Any:
        if context.method == ROOTS_CHANGED:
            self._root.invalidate()
        return await call_next(context)

    async def on_call_tool(
        self,
        context: MiddlewareContext[mt.CallToolRequestParams],
        call_next: CallNext[mt.CallToolRequestParams, ToolResult],
    ) -> ToolResult:
        token = current_root.set(await self._root.resolve(context.fastmcp_context))
        try:
            return await call_next(context)
        finally:
            current_root.reset(token)


class Projects(Generic[_T]):
    """One value per project folder (the services of that project), made on first use."""

    def __init__(self, root: ProjectRoot, make: Callable[[Path], _T]) -> None:
        self._root = root
        self._make = make
        self._made: dict[Path, _T] = {}
        self._lock = threading.Lock()

    def get(self, folder: Path | None = None) -> _T:
        """The value for `folder`, default: the current call's folder (else the known one)."""
        chosen = folder or current_root.get() or self._root.known()
        with self._lock:
            value = self._made.get(chosen)
            if value is None:
                value = self._made[chosen] = self._make(chosen)
            return value

    def forget(self) -> list[_T]:
        """Every value made so far, forgotten: the next `get` makes a new one."""
        with self._lock:
            made, self._made = list(self._made.values()), {}
        return made


class ProjectServices:
    """The services of one project folder: its job catalog, made at once, and its store and
    workflow engine (with the session store and the quality gate), made on first use.

    Listing jobs, the first call of a conversation, needs only the catalog; so a new server
    answers it without importing the engine, the state store or the gate, and opens no store
    (cold start in packages/deepwork-mcp/BENCHMARKS.md). The store is opened once, with the
    engine, and kept until `close`.
    """

    def __init__(
        self,
        folder: Path,
        catalog: JobCatalog,
        open_store: Callable[[], Store],
        make_engine: Callable[[Store], WorkflowEngine],
    ) -> None:
        self.folder = folder
        self.catalog = catalog
        self._open_store = open_store
        self._make_engine = make_engine
        self._store: Store | None = None
        self._engine: WorkflowEngine | None = None
        self._lock = threading.Lock()

    @property
    def engine(self) -> WorkflowEngine:
        with self._lock:
            if self._engine is None:
                store = self._store = self._store or self._open_store()
                self._engine = self._make_engine(store)
            return self._engine

    def stack(self, agent_id: str | None = None) -> list[StackItem]:
        """The engine's `stack(agent_id)`; without a stack file (no workflow is running, as
        the session store tells it) the empty stack, and the engine is not made for it."""
        if self._engine is None and not (self.folder / STACK_PATH).exists():
            return []
        return self.engine.stack(agent_id)

    def close(self) -> None:
        """Close the project's store, if it was opened (the engine goes with it)."""
        with self._lock:
            store, self._store, self._engine = self._store, None, None
        if store is not None:
            store.close()
