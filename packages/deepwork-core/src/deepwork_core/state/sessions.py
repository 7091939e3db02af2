"""Workflow sessions and the stack, persisted under `.deepwork/tmp/` (`docs/runtime-layout.md`).

Files (all JSON, all carrying `schema_version`):
- `session_<id>.json`: one workflow run (`Session`). Completed and aborted runs stay on disk for
  inspection until the retention rule prunes them.
- `stack.json`: the ids of the active sessions, bottom to top: the main stack under
  `session_ids`, each agent's own stack under `agents` (agent id -> ids; docs/navigation.md). It
  is the one source of truth for "which workflows are running": a new server process reads it and
  carries on where a killed one stopped. Every session on a stack is `active`; a session leaves
  its stack when it completes or is aborted. The file exists only while some stack is not empty
  (a cheap test for hooks).
- `state.lock`: the cross-process lock held around every read-modify-write.

Every write is atomic (`atomic_write_text`), and the folder is synced once per transaction,
after its last rename and before the lock is released. A file that is not valid JSON, does not
match the model, or carries an unknown `schema_version` raises `session.state_corrupt` naming the
file; it is never silently reset.
"""

from __future__ import annotations

import contextlib
import json
import secrets
import string
import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any, Final, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, ValidationError

from deepwork_core.base.error_codes import ErrorCode
from deepwork_core.base.errors import FileReadError, SessionError
from deepwork_core.base.fsutil import (
    LockTimeout,
    atomic_write_text,
    file_lock,
    fsync_folder,
    read_text_file,
)
from deepwork_core.base.identifiers import AGENT_ID_PATTERN, SESSION_ID_PATTERN, check_session_id
from deepwork_core.base.layout import (
    LOCK_FILE,
    MAX_STATE_BYTES,
    STACK_FILE,
    TMP_DIR,
    session_file_name,
)
from deepwork_core.base.runtime_dir import ensure_tmp_dir
from deepwork_core.evidence.hashes import OutputEvidence, OutputHash
from deepwork_core.evidence.scope import RepoSnapshot
from deepwork_core.evidence.verdicts import LoggedVerdictKind, ReviewVerdict, VerdictKind
from deepwork_core.state.approvals import ApprovalRecord
from deepwork_core.state.fan_out import FanOut, InstanceOf
from deepwork_core.state.retention import delete_finished

SCHEMA_VERSION: Literal[1] = 1

#: Finished sessions older than this are pruned ...
DEFAULT_MAX_AGE = timedelta(days=14)
#: ... and of the finished ones, at most this many newest are kept.
DEFAULT_KEEP_FINISHED = 200
#: Pruning runs at most this often per store (it lists the folder).
_PRUNE_INTERVAL_S = 300.0

OutputValue = str | list[str]

_M = TypeVar("_M", bound=BaseModel)


def utc_now() -> datetime:
    return datetime.now(UTC)


class SessionStatus(StrEnum):
    ACTIVE = "active"
    COMPLETED = "completed"
    ABORTED = "aborted"


class _State(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_assignment=False)


class StepRecord(_State):
    """What happened to one step of a session."""

    step_id: str
    started_at: datetime
    completed_at: datetime | None = None
    outputs: dict[str, OutputValue] = Field(default_factory=dict)
    notes: str | None = None
    #: Quality-gate evaluations of the checkpoint this step belongs to (external reviewer).
    quality_attempts: int = 0
    #: The repository when the step began (the scope guard's baseline); None outside git.
    began: RepoSnapshot | None = None


class QualityEvent(_State):
    """One entry of a session's quality-gate audit trail."""

    at: datetime
    kind: LoggedVerdictKind
    step_ids: list[str]
    attempt: int | None = None
    passed: bool | None = None
    feedback: str | None = None
    override_reason: str | None = None
    error_code: str | None = None
    review_file: str | None = None
    reviews: list[ReviewVerdict] = Field(default_factory=list)


class PendingApproval(_State):
    """A checkpoint that passed its reviews and waits for a human (docs/evidence.md)."""

    request_id: str
    entry_index: int
    step_ids: list[str]
    #: The verdict the evidence is bound to once the human approves.
    verdict: VerdictKind
    override_reason: str | None = None
    #: The checkpoint's files as reviewed; a change voids the request.
    hashes: list[OutputHash] = Field(default_factory=list)
    #: Steps whose stale outputs were reviewed again with this checkpoint.
    rereviewed: list[str] = Field(default_factory=list)


class Session(_State):
    """One run of a workflow."""

    schema_version: Literal[1] = SCHEMA_VERSION
    session_id: str
    job_name: str
    workflow_name: str
    instance_id: str | None = None
    goal: str
    status: SessionStatus = SessionStatus.ACTIVE
    #: Index into the workflow's entries (a concurrent group counts once).
    current_entry_index: int = 0
    #: The step ids of the current entry (several for a concurrent group).
    current_step_ids: list[str] = Field(min_length=1)
    step_progress: dict[str, StepRecord] = Field(default_factory=dict)
    parent_session_id: str | None = None
    #: The agent whose stack the session is on (None: the main stack).
    agent_id: str | None = None
    #: Set on a workflow a `sub_workflow` step started: that step of the parent session.
    started_for_step: str | None = None
    #: Values given at `start_workflow` (argument name -> text or project-relative path(s)).
    inputs: dict[str, OutputValue] = Field(default_factory=dict)
    branch_name: str | None = None
    #: The branch the repository was on before the workflow's branch was checked out.
    previous_branch: str | None = None
    started_at: datetime
    completed_at: datetime | None = None
    abort_reason: str | None = None
    quality_log: list[QualityEvent] = Field(default_factory=list)
    #: The hash of every accepted output file with the verdict that covers it.
    evidence: list[OutputEvidence] = Field(default_factory=list)
    #: Stale files already reported at the last checkpoint (the next call reviews them again).
    stale_reported: list[str] = Field(default_factory=list)
    pending_approval: PendingApproval | None = None
    approvals: list[ApprovalRecord] = Field(default_factory=list)
    #: True once the answer said the scope guard is off (it says so once per session).
    scope_guard_noted: bool = False
    #: The fan-out of the current step, when it has `for_each` (docs/fan-out.md).
    fan_out: FanOut | None = None
    #: Set on an instance of a fanned-out step: its item.
    instance_of: InstanceOf | None = None

    @property
    def workflow_label(self) -> str:
        """`job_name/workflow_name`, as stack entries and abort responses name a workflow."""
        return f"{self.job_name}/{self.workflow_name}"

    @property
    def current_step_id(self) -> str:
        return self.current_step_ids[0]

    def all_outputs(self) -> dict[str, OutputValue]:
        """Outputs of every completed step, merged in completion order (later steps win)."""
        merged: dict[str, OutputValue] = {}
        records = sorted(
            (r for r in self.step_progress.values() if r.completed_at is not None),
            key=lambda r: r.completed_at or r.started_at,
        )
        for record in records:
            merged.update(record.outputs)
        return merged


_SessionId = Annotated[str, StringConstraints(pattern=SESSION_ID_PATTERN)]
_AgentId = Annotated[str, StringConstraints(pattern=AGENT_ID_PATTERN)]

#: The stacks by agent id; `None` is the main stack.
Stacks = dict[str | None, list[str]]


class _StackFile(_State):
    schema_version: Literal[1] = SCHEMA_VERSION
    # An id that is no session id is corruption, never a path to build.
    session_ids: list[_SessionId] = Field(default_factory=list)
    agents: dict[_AgentId, list[_SessionId]] = Field(default_factory=dict)


_ID_LEADS = string.ascii_letters + string.digits


def new_session_id() -> str:
    """A fresh URL-safe id (16 characters) matching `SESSION_ID_PATTERN`.

    It starts with a letter or digit: an id starting with `-` would read as an option in the
    commands users are told to run (`deepwork approve <id>`, `deepwork log <id>`).
    """
    return secrets.choice(_ID_LEADS) + secrets.token_urlsafe(12)[:15]


class SessionStore:
    """Reads and writes the sessions and the stack of one project. Thread- and process-safe.

    Reads that need a consistent view and every mutation run inside `transaction()`, which holds
    an in-process lock and the cross-process file lock.
    """

    def __init__(
        self,
        project_root: Path,
        *,
        max_age: timedelta = DEFAULT_MAX_AGE,
        keep_finished: int = DEFAULT_KEEP_FINISHED,
    ) -> None:
        self.project_root = project_root
        self.state_dir = project_root / TMP_DIR
        self.max_age = max_age
        self.keep_finished = keep_finished
        self._thread_lock = threading.RLock()
        self._last_prune = float("-inf")

    # --- paths -------------------------------------------------------------------------------

    def session_path(self, session_id: str) -> Path:
        """The file of `session_id`; the id is checked before any path is built."""
        return self.state_dir / session_file_name(check_session_id(session_id))

    @property
    def stack_path(self) -> Path:
        return self.state_dir / STACK_FILE

    # --- transactions ------------------------------------------------------------------------

    @contextlib.contextmanager
    def transaction(self) -> Iterator[StateTransaction]:
        """Hold the locks for one read-modify-write of the state.

        Raises `session.lock_timeout` when another process holds the state for too long.
        """
        with self._thread_lock, contextlib.ExitStack() as held:
            ensure_tmp_dir(self.project_root)
            try:
                held.enter_context(file_lock(self.state_dir / LOCK_FILE))
            except LockTimeout as exc:
                raise SessionError(str(exc), code=ErrorCode.SESSION_LOCK_TIMEOUT) from None
            tx = StateTransaction(self)
            try:
                yield tx
            finally:
                # The transaction's writes were renamed into place without syncing the folder;
                # one fsync of it makes them all durable before the lock is released.
                if tx.renamed:
                    fsync_folder(self.state_dir)

    # --- convenience reads (each its own transaction) ----------------------------------------

    def stack(self, agent_id: str | None = None) -> list[Session]:
        """The active sessions of one stack (default: the main one), bottom to top."""
        if not self.stack_path.exists():
            return []  # nothing ever started: no need to create the folder for a read
        with self.transaction() as tx:
            return tx.stack(agent_id)

    def all_stacks(self) -> dict[str | None, list[Session]]:
        """Every non-empty stack by agent id (None: the main stack, listed first)."""
        if not self.stack_path.exists():
            return {}
        with self.transaction() as tx:
            return {agent: tx.stack(agent) for agent in tx.stacks()}

    def load(self, session_id: str) -> Session:
        """Any session (active or finished). Raises `session.not_found` when there is none."""
        with self.transaction() as tx:
            return tx.load(session_id)

    # --- retention ---------------------------------------------------------------------------

    def prune(self, *, now: datetime | None = None, force: bool = False) -> list[str]:
        """Delete finished sessions past the retention rule; return the ids deleted.

        A finished session is one not on the stack. It is deleted when its file was last written
        more than `max_age` ago, or when more than `keep_finished` newer finished ones exist
        (`deepwork_core.state.retention`). At most every five minutes unless `force`.
        """
        clock = time.monotonic()
        if not force and clock - self._last_prune < _PRUNE_INTERVAL_S:
            return []
        self._last_prune = clock
        with self.transaction() as tx:
            return delete_finished(
                self.project_root,
                tx.all_stack_ids(),
                now=(now or utc_now()).timestamp(),
                max_age=self.max_age,
                keep=self.keep_finished,
            )


class StateTransaction:
    """The state as seen while holding the locks; writes are atomic and immediate."""

    def __init__(self, store: SessionStore) -> None:
        self._store = store
        self._stacks: Stacks | None = None
        self._sessions: dict[str, Session] = {}
        #: True once a file was renamed into the state folder (synced when the transaction ends).
        self.renamed = False

    def stacks(self) -> Stacks:
        """Every non-empty stack's ids by agent id (None: the main stack, first)."""
        if self._stacks is None:
            data = _read_json(self._store.stack_path)
            self._stacks = {}
            if data is not _MISSING:
                stack = _validate(_StackFile, data, self._store.stack_path)
                if stack.session_ids:
                    self._stacks[None] = list(stack.session_ids)
                self._stacks.update({k: list(v) for k, v in stack.agents.items() if v})
        return {agent: list(ids) for agent, ids in self._stacks.items()}

    def stack_ids(self, agent_id: str | None = None) -> list[str]:
        return self.stacks().get(agent_id, [])

    def all_stack_ids(self) -> set[str]:
        """The ids of the sessions on any stack."""
        return {session_id for ids in self.stacks().values() for session_id in ids}

    def stack(self, agent_id: str | None = None) -> list[Session]:
        return [self._load_listed(session_id) for session_id in self.stack_ids(agent_id)]

    def top(self, agent_id: str | None = None) -> Session | None:
        ids = self.stack_ids(agent_id)
        return self._load_listed(ids[-1]) if ids else None

    def load(self, session_id: str) -> Session:
        """The session (read once per transaction; later calls return the same object)."""
        cached = self._sessions.get(session_id)
        if cached is not None:
            return cached
        path = self._store.session_path(session_id)
        data = _read_json(path)
        if data is _MISSING:
            raise SessionError(
                f"there is no session {session_id!r}; use a session_id returned by "
                "start_workflow or finished_step (the stack lists the active ones)",
                code=ErrorCode.SESSION_NOT_FOUND,
            )
        session = _validate(Session, data, path)
        if session.session_id != session_id:
            raise SessionError(
                f"{path} holds session {session.session_id!r}, not {session_id!r}",
                code=ErrorCode.SESSION_STATE_CORRUPT,
            )
        self._sessions[session_id] = session
        return session

    def save(self, session: Session) -> None:
        path = self._store.session_path(session.session_id)
        atomic_write_text(path, session.model_dump_json(indent=2) + "\n", sync_folder=False)
        self.renamed = True
        self._sessions[session.session_id] = session

    def set_stack(self, session_ids: list[str], agent_id: str | None = None) -> None:
        """Persist one stack. When every stack is empty the file is removed: `stack.json` exists
        exactly while a workflow is active, which the plugins' hook commands test before
        starting Python. A file with only the main stack has no `agents` key."""
        stacks = self.stacks()
        stacks[agent_id] = list(session_ids)
        # The main stack first, then the agents' in the order they appeared.
        stacks = {
            a: ids for a, ids in sorted(stacks.items(), key=lambda i: i[0] is not None) if ids
        }
        if stacks:
            stack = _StackFile(
                session_ids=stacks.get(None, []),
                agents={agent: ids for agent, ids in stacks.items() if agent is not None},
            )
            text = stack.model_dump_json(indent=2, exclude={"agents"} if not stack.agents else None)
            atomic_write_text(self._store.stack_path, text + "\n", sync_folder=False)
            self.renamed = True
        else:
            self._store.stack_path.unlink(missing_ok=True)
        self._stacks = stacks

    def push(self, session: Session) -> None:
        """Save a new session and put it on top of its agent's stack."""
        self.save(session)
        self.set_stack([*self.stack_ids(session.agent_id), session.session_id], session.agent_id)

    def remove_from_stack(self, session_id: str) -> None:
        """Take `session_id` off whichever stack holds it, wherever it sits."""
        for agent, ids in self.stacks().items():
            if session_id in ids:
                self.set_stack([i for i in ids if i != session_id], agent)

    def _load_listed(self, session_id: str) -> Session:
        try:
            session = self.load(session_id)
        except SessionError as exc:
            if exc.code != ErrorCode.SESSION_NOT_FOUND:
                raise
            raise SessionError(
                f"{self._store.stack_path} lists session {session_id!r} but its file "
                f"{self._store.session_path(session_id)} is missing",
                code=ErrorCode.SESSION_STATE_CORRUPT,
            ) from None
        if session.status is not SessionStatus.ACTIVE:
            raise SessionError(
                f"{self._store.stack_path} lists session {session_id!r}, which is "
                f"{session.status.value}",
                code=ErrorCode.SESSION_STATE_CORRUPT,
            )
        return session


#: What `_read_json` returns for a file that does not exist (a file holding `null` is corrupt,
#: not missing: it must never read as an empty state).
_MISSING: Final = object()


def _read_json(path: Path) -> Any:
    try:
        text = read_text_file(path, limit=MAX_STATE_BYTES)
    except FileReadError as exc:
        if exc.code == ErrorCode.FILE_NOT_FOUND:
            return _MISSING
        raise SessionError(
            f"cannot read state file {path}: {exc}", code=ErrorCode.SESSION_STATE_CORRUPT
        ) from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise SessionError(
            f"state file {path} is not valid JSON ({exc}); fix or delete it",
            code=ErrorCode.SESSION_STATE_CORRUPT,
        ) from None


def _validate(model: type[_M], data: Any, path: Path) -> _M:
    version = data.get("schema_version") if isinstance(data, dict) else None
    if version != SCHEMA_VERSION:
        raise SessionError(
            f"state file {path} has schema_version {version!r}; this DeepWork reads version "
            f"{SCHEMA_VERSION} (written by another DeepWork version? fix or delete it)",
            code=ErrorCode.SESSION_STATE_CORRUPT,
        )
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "<top>"
        raise SessionError(
            f"state file {path} is invalid at {where}: {first['msg']}; fix or delete it",
            code=ErrorCode.SESSION_STATE_CORRUPT,
        ) from None
