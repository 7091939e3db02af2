"""Workflow sessions and the stacks, kept in the project's store (`docs/runtime-layout.md`).

The store (`deepwork_core.state.store`) holds one row per workflow run (`Session`, a JSON
document beside the columns runs are listed by) and the stacks of active sessions, bottom to top:
the main stack and each agent's own (docs/navigation.md). The stacks say which workflows run; a
new server carries on from them. A session leaves its stack when it completes or is aborted and
stays for inspection until the retention rule prunes it. `stack.json` in `.deepwork/tmp/`
mirrors the stacks for the hooks (it exists exactly while some stack is not empty), rewritten in
the transaction that changed a stack. Every read-modify-write is one store transaction; a row
that does not parse or match the model raises `session.state_corrupt`, never a silent reset.
Old files are imported on the store's first open (`deepwork_core.state.store.legacy`). The
document itself, `Session`, is `deepwork_core.state.session_model`'s (imported from here too).
"""

from __future__ import annotations

import contextlib
import json
import secrets
import string
import threading
import time
from collections.abc import Iterator
from datetime import datetime, timedelta
from pathlib import Path

from pydantic import ValidationError

from deepwork_core.base.error_codes import ErrorCode
from deepwork_core.base.errors import SessionError
from deepwork_core.base.fsutil import loads_json
from deepwork_core.base.identifiers import SessionId
from deepwork_core.base.layout import STACK_FILE, TMP_DIR, session_file_name
from deepwork_core.base.runtime_dir import ensure_tmp_dir
from deepwork_core.state.retention import delete_finished
from deepwork_core.state.session_model import NOT_AN_ATTEMPT as NOT_AN_ATTEMPT
from deepwork_core.state.session_model import SCHEMA_VERSION
from deepwork_core.state.session_model import OutputValue as OutputValue
from deepwork_core.state.session_model import Parked as Parked
from deepwork_core.state.session_model import ParkReason as ParkReason
from deepwork_core.state.session_model import PendingApproval as PendingApproval
from deepwork_core.state.session_model import QualityEvent as QualityEvent
from deepwork_core.state.session_model import Session as Session
from deepwork_core.state.session_model import SessionStatus as SessionStatus
from deepwork_core.state.session_model import StepRecord as StepRecord
from deepwork_core.state.session_model import utc_now as utc_now
from deepwork_core.state.stack_marker import write_stack_marker
from deepwork_core.state.store.errors import StoreError
from deepwork_core.state.store.port import Store, Tx
from deepwork_core.state.store.schema import ListColumns
from deepwork_core.state.store.tables.session_rows import (
    SessionRow,
    load_body,
    read_stacks,
    read_stacks_and_tops,
    save_session,
    session_times,
    write_stack,
)

#: Finished sessions older than this are pruned ...
DEFAULT_MAX_AGE = timedelta(days=14)
#: ... and of the finished ones, at most this many newest are kept.
DEFAULT_KEEP_FINISHED = 200
#: Pruning runs at most this often per store.
_PRUNE_INTERVAL_S = 300.0


#: The stacks by agent id; `None` is the main stack.
Stacks = dict[str | None, list[SessionId]]


_ID_LEADS = string.ascii_letters + string.digits


def new_session_id() -> SessionId:
    """A fresh URL-safe id (16 characters) matching `SESSION_ID_PATTERN`.

    It starts with a letter or digit: an id starting with `-` would read as an option in the
    commands users are told to run (`deepwork approve <id>`, `deepwork log <id>`).
    """
    return SessionId(secrets.choice(_ID_LEADS) + secrets.token_urlsafe(12)[:15])


def session_not_found(session_id: str) -> SessionError:
    """`session.not_found` for `session_id` (also what a root answers for a project that has
    no store yet, so no session at all)."""
    return SessionError(
        f"there is no session {session_id!r}; use a session_id returned by "
        "start_workflow or finished_step (the stack lists the active ones)",
        code=ErrorCode.SESSION_NOT_FOUND,
        session_id=session_id,
    )


class SessionStore:
    """The sessions and the stacks of one project, in its open `store`. Thread- and process-safe.

    Reads that need a consistent view and every mutation run inside `transaction()`: one write
    transaction of the project's store (`deepwork_core.state.store`), holding an in-process lock
    and the store's cross-process lock for the project. The store stays its opener's to close.
    """

    def __init__(
        self,
        store: Store,
        project_root: Path,
        *,
        max_age: timedelta = DEFAULT_MAX_AGE,
        keep_finished: int = DEFAULT_KEEP_FINISHED,
    ) -> None:
        self.store = store
        self.project_root = project_root
        self.state_dir = project_root / TMP_DIR
        self.max_age = max_age
        self.keep_finished = keep_finished
        self._thread_lock = threading.RLock()
        self._last_prune = float("-inf")

    # --- paths -------------------------------------------------------------------------------

    def session_path(self, session_id: SessionId) -> Path:
        """Where a session's file lay before the store (imported from there once)."""
        return self.state_dir / session_file_name(session_id)

    @property
    def stack_path(self) -> Path:
        """The marker the hooks probe: it exists, holding the stacks, while a stack is not empty."""
        return self.state_dir / STACK_FILE

    # --- transactions ------------------------------------------------------------------------

    @contextlib.contextmanager
    def transaction(self) -> Iterator[StateTransaction]:
        """Hold the project's state for one read-modify-write; committed when the block ends,
        also when it raises (its writes so far stay, then the error goes on).

        Raises `store.busy` when another process holds the store for too long.
        """
        failure: Exception | None = None
        with self._thread_lock:
            store = self.store
            with store.write(lock=f"deepwork.state:{store.project.project_id}") as db:
                tx = StateTransaction(self, store, db)
                try:
                    yield tx
                except StoreError:
                    raise  # the database failed: nothing to keep
                except Exception as exc:
                    # What the block saved before it raised stays saved, as each write did
                    # when state lived in files (the engine records an attempt, then raises).
                    failure = exc
                if tx.stacks_changed:
                    tx.write_marker()
        if failure is not None:
            raise failure

    # --- convenience reads (each its own transaction) ----------------------------------------

    def stack(self, agent_id: str | None = None) -> list[Session]:
        """The active sessions of one stack (default: the main one), bottom to top."""
        if not self.stack_path.exists():
            return []  # nothing is running: no need to open the store for a read
        with self.transaction() as tx:
            return tx.stack(agent_id)

    def all_stacks(self) -> dict[str | None, list[Session]]:
        """Every non-empty stack by agent id (None: the main stack, listed first)."""
        if not self.stack_path.exists():
            return {}
        with self.transaction() as tx:
            return {agent: tx.stack(agent) for agent in tx.stacks()}

    def load(self, session_id: SessionId) -> Session:
        """Any session (active or finished). Raises `session.not_found` when there is none."""
        with self.transaction() as tx:
            return tx.load(session_id)

    def session_ids(self, *, finished: bool = False) -> list[SessionId]:
        """The ids of the project's sessions (`finished`: only those on no stack), last written
        first."""
        store = self.store
        with store.read() as db:
            dated = session_times(db, store.project.project_id)
            active = {i for ids in read_stacks(db, store.project.project_id).values() for i in ids}
        return [i for _, i in dated if not (finished and i in active)]

    # --- retention ---------------------------------------------------------------------------

    def prune(self, *, now: datetime | None = None, force: bool = False) -> list[SessionId]:
        """Delete finished sessions past the retention rule; return the ids deleted.

        A finished session is one on no stack. It is deleted when it was last written more than
        `max_age` ago, or when more than `keep_finished` newer finished ones exist
        (`deepwork_core.state.retention`). At most every five minutes unless `force`.
        """
        clock = time.monotonic()
        if not force and clock - self._last_prune < _PRUNE_INTERVAL_S:
            return []
        self._last_prune = clock
        with self.transaction() as tx:
            return delete_finished(
                self.project_root,
                tx.db,
                self.store.project.project_id,
                tx.all_stack_ids(),
                now=(now or utc_now()).timestamp(),
                max_age=self.max_age,
                keep=self.keep_finished,
            )


class StateTransaction:
    """The state as seen inside one store transaction; writes land when it commits."""

    def __init__(self, owner: SessionStore, store: Store, db: Tx) -> None:
        self._owner = owner
        self._store = store
        self._project_id = store.project.project_id
        #: The open store transaction (for modules that keep more rows in step with the state).
        self.db = db
        self._stacks: Stacks | None = None
        self._sessions: dict[SessionId, Session] = {}
        self._prefetched: dict[str, str] = {}  # the stacks' top documents, read with them
        #: True once a stack changed (the marker file is rewritten before the commit).
        self.stacks_changed = False

    def stacks(self) -> Stacks:
        """Every non-empty stack's ids by agent id (None: the main stack, first)."""
        return {agent: list(ids) for agent, ids in self._read_stacks(None).items()}

    def stack_ids(self, agent_id: str | None = None) -> list[SessionId]:
        # Read first for one agent: its top comes along, and the main stack's (the marker
        # names its job), not every agent's.
        return list(self._read_stacks((agent_id, None)).get(agent_id, []))

    def _read_stacks(self, tops_of: tuple[str | None, ...] | None) -> Stacks:
        """The stacks, read once per transaction with the tops of `tops_of`'s stacks (None:
        every stack's)."""
        if self._stacks is None:
            self._stacks, self._prefetched = read_stacks_and_tops(
                self.db, self._project_id, tops_of=tops_of
            )
        return self._stacks

    def all_stack_ids(self) -> set[SessionId]:
        """The ids of the sessions on any stack."""
        return {session_id for ids in self.stacks().values() for session_id in ids}

    def stack(self, agent_id: str | None = None) -> list[Session]:
        return [self._load_listed(session_id) for session_id in self.stack_ids(agent_id)]

    def top(self, agent_id: str | None = None) -> Session | None:
        ids = self.stack_ids(agent_id)
        return self._load_listed(ids[-1]) if ids else None

    def load(self, session_id: SessionId) -> Session:
        """The session (read once per transaction; later calls return the same object)."""
        cached = self._sessions.get(session_id)
        if cached is not None:
            return cached
        body = self._prefetched.pop(session_id, None) or load_body(
            self.db, self._project_id, session_id
        )
        if body is None:
            raise session_not_found(session_id)
        where = f"session {session_id!r} in store {self._store.display}"
        session = _session_from(body, where)
        if session.session_id != session_id:
            raise SessionError(
                f"{where} holds session {session.session_id!r}",
                code=ErrorCode.SESSION_STATE_CORRUPT,
            )
        self._sessions[session_id] = session
        return session

    def save(self, session: Session) -> None:
        row = SessionRow(
            session_id=session.session_id,
            job=session.job_name,
            workflow=session.workflow_name,
            status=session.status.value,
            agent=session.agent_id,
            branch=session.branch_name,
            started_at=session.started_at.timestamp(),
            completed_at=session.completed_at.timestamp() if session.completed_at else None,
            body=session.model_dump_json(),
            listed=ListColumns(
                goal=session.goal,
                steps=json.dumps(session.current_step_ids),
                parent_session_id=session.parent_session_id,
                is_instance=session.instance_of is not None,
                awaiting_approval=session.pending_approval is not None,
                started_from=session.previous_branch,
            ),
        )
        save_session(self.db, self._project_id, self._store.project.machine, row, self._store.now())
        self._sessions[session.session_id] = session

    def set_stack(self, session_ids: list[SessionId], agent_id: str | None = None) -> None:
        """Persist one stack (and, when the transaction ends, the marker file the hooks probe:
        `stack.json` exists exactly while some stack is not empty)."""
        stacks = self.stacks()
        stacks[agent_id] = list(session_ids)
        # The main stack first, then the agents' by id.
        stacks = {
            a: ids
            for a, ids in sorted(stacks.items(), key=lambda i: (i[0] is not None, i[0] or ""))
            if ids
        }
        write_stack(self.db, self._project_id, agent_id, session_ids)
        self._stacks = stacks
        self.stacks_changed = True

    def push(self, session: Session) -> None:
        """Save a new session and put it on top of its agent's stack."""
        self.save(session)
        self.set_stack([*self.stack_ids(session.agent_id), session.session_id], session.agent_id)

    def remove_from_stack(self, session_id: SessionId) -> None:
        """Take `session_id` off whichever stack holds it, wherever it sits."""
        for agent, ids in self.stacks().items():
            if session_id in ids:
                self.set_stack([i for i in ids if i != session_id], agent)

    def write_marker(self) -> None:
        """Mirror the stacks into `stack.json` (its format of old), or remove it when empty."""
        main = self.stack_ids(None)
        top_job = self.load(main[-1]).job_name if main else None
        if main or any(self.stacks().values()):
            ensure_tmp_dir(self._owner.project_root)  # with its .gitignore, in either mode
        write_stack_marker(self._owner.stack_path, self.stacks(), top_job)

    def _load_listed(self, session_id: SessionId) -> Session:
        try:
            session = self.load(session_id)
        except SessionError as exc:
            if exc.code != ErrorCode.SESSION_NOT_FOUND:
                raise
            raise SessionError(
                f"a stack of store {self._store.display} lists session {session_id!r}, "
                "which the store does not hold",
                code=ErrorCode.SESSION_STATE_CORRUPT,
            ) from None
        if session.status is not SessionStatus.ACTIVE:
            raise SessionError(
                f"a stack of store {self._store.display} lists session {session_id!r}, which is "
                f"{session.status.value}",
                code=ErrorCode.SESSION_STATE_CORRUPT,
            )
        return session


def _session_from(body: str, where: str) -> Session:
    """A stored session, parsed straight from its JSON (three times faster than `json.loads`
    first); a body that fails that way is parsed again step by step, naming the fault."""
    with contextlib.suppress(ValidationError):
        session = Session.model_validate_json(body)
        if "schema_version" in session.model_fields_set:
            return session
    corrupt = ErrorCode.SESSION_STATE_CORRUPT
    try:
        data = loads_json(body)
    except json.JSONDecodeError as exc:
        raise SessionError(f"{where} is not valid JSON ({exc})", code=corrupt) from None
    version = data.get("schema_version") if isinstance(data, dict) else None
    if version != SCHEMA_VERSION:
        raise SessionError(
            f"{where} has schema_version {version!r}; this DeepWork reads version "
            f"{SCHEMA_VERSION} (written by another DeepWork version?)",
            code=corrupt,
        )
    try:
        return Session.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        at = ".".join(str(p) for p in first["loc"]) or "<top>"
        raise SessionError(f"{where} is invalid at {at}: {first['msg']}", code=corrupt) from None
