"""The quality gate's background review jobs: rows of a `review_jobs` table
(docs/quality-gate.md, "Background reviews").

One row per review task of a submission. A submission is named by its `review_key`: the session,
its checkpoint, the outputs and the content hashes of the files under review, so a repeated
`finished_step` with unchanged outputs finds its jobs again and changed outputs make new ones.

A worker claims rows with a lease (`BEGIN IMMEDIATE` on SQLite: one claimer at a time); a row whose
lease ran out, or whose owner is a process of this machine that is gone (`kill -9`), is claimed
again. A verdict is written once: `complete` changes only a row still `running` under the caller's
lease. The file is `.deepwork/tmp/review_jobs.sqlite3`, WAL, with a busy timeout.
"""

from __future__ import annotations

import json
import os
import socket
import sqlite3
import threading
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Any

from deepwork_core.base.layout import REVIEW_JOBS_FILE

#: How long a claim holds before another worker may take the job; the owner renews it.
LEASE_SECONDS = 30.0
_BUSY_TIMEOUT_MS = 10_000

_SCHEMA = """
CREATE TABLE IF NOT EXISTS review_jobs (
    job_id TEXT PRIMARY KEY,
    review_key TEXT NOT NULL,
    session_id TEXT NOT NULL,
    position INTEGER NOT NULL,
    label TEXT NOT NULL,
    payload TEXT NOT NULL,
    hashes TEXT NOT NULL,
    state TEXT NOT NULL,
    owner TEXT,
    lease_until REAL,
    tries INTEGER NOT NULL DEFAULT 0,
    verdict TEXT,
    error_code TEXT,
    error_message TEXT,
    consumed INTEGER NOT NULL DEFAULT 0,
    created_at REAL NOT NULL,
    finished_at REAL
);
CREATE INDEX IF NOT EXISTS review_jobs_key ON review_jobs (review_key);
CREATE INDEX IF NOT EXISTS review_jobs_state ON review_jobs (state);
"""


class JobState(StrEnum):
    QUEUED = "queued"
    RUNNING = "running"
    DONE = "done"
    FAILED = "failed"
    CANCELLED = "cancelled"
    #: The files changed while the job ran: its verdict was not recorded.
    STALE = "stale"

    @property
    def live(self) -> bool:
        return self in (JobState.QUEUED, JobState.RUNNING)


@dataclass(frozen=True, slots=True)
class NewReviewJob:
    job_id: str
    review_key: str
    session_id: str
    position: int
    label: str
    #: What the worker needs to run the job after a restart (JSON).
    payload: dict[str, Any]
    #: Project-relative path -> SHA-256 of the bytes the job judges.
    hashes: dict[str, str]


@dataclass(frozen=True, slots=True)
class ReviewJob:
    job_id: str
    review_key: str
    session_id: str
    position: int
    label: str
    payload: dict[str, Any]
    hashes: dict[str, str]
    state: JobState
    owner: str | None
    tries: int
    verdict: dict[str, Any] | None
    error_code: str | None
    error_message: str | None


def new_owner() -> str:
    """A worker's name: `<host>:<pid>:<random>` (the pid lets a restart see a dead owner)."""
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


def owner_gone(owner: str | None) -> bool:
    """True when `owner` was a process of this machine that no longer runs."""
    if owner is None:
        return True
    host, _, rest = owner.partition(":")
    pid_text = rest.partition(":")[0]
    if host != socket.gethostname() or not pid_text.isdigit():
        return False
    try:
        os.kill(int(pid_text), 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False
    return False


class ReviewJobStore:
    """The `review_jobs` table of one project (a SQLite file). Thread-safe."""

    def __init__(self, project_root: Path) -> None:
        self.path = project_root / REVIEW_JOBS_FILE
        self._lock = threading.RLock()
        self._conn: sqlite3.Connection | None = None

    def _db(self) -> sqlite3.Connection:
        """The one connection (shared by threads; every use holds `_lock`)."""
        if self._conn is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            db = sqlite3.connect(
                self.path,
                timeout=_BUSY_TIMEOUT_MS / 1000,
                isolation_level=None,
                check_same_thread=False,
            )
            db.execute(f"PRAGMA busy_timeout = {_BUSY_TIMEOUT_MS}")
            db.execute("PRAGMA journal_mode = WAL")
            db.executescript(_SCHEMA)
            self._conn = db
        return self._conn

    def close(self) -> None:
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None

    def enqueue(self, jobs: Sequence[NewReviewJob]) -> None:
        now = time.time()
        rows = [
            (
                job.job_id, job.review_key, job.session_id, job.position, job.label,
                json.dumps(job.payload), json.dumps(job.hashes), JobState.QUEUED, now,
            )
            for job in jobs
        ]  # fmt: skip
        with _Immediate(self) as db:
            db.executemany(
                "INSERT INTO review_jobs (job_id, review_key, session_id, position, label, "
                "payload, hashes, state, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                rows,
            )

    def jobs(self, review_key: str) -> list[ReviewJob]:
        """The jobs of one submission not yet consumed, in task order (cancelled ones left out)."""
        with self._lock:
            rows = (
                self._db()
                .execute(
                    _SELECT + " WHERE review_key = ? AND state != ? "
                    "AND consumed = 0 ORDER BY position",
                    (review_key, JobState.CANCELLED),
                )
                .fetchall()
            )
        return [_job(row) for row in rows]

    def get(self, job_id: str) -> ReviewJob | None:
        with self._lock:
            row = self._db().execute(_SELECT + " WHERE job_id = ?", (job_id,)).fetchone()
        return None if row is None else _job(row)

    def cancel_others(self, session_id: str, keep_key: str) -> list[str]:
        """Cancel the live jobs of `session_id` other than `keep_key`'s; their ids."""
        with _Immediate(self) as db:
            ids = [
                row[0]
                for row in db.execute(
                    "SELECT job_id FROM review_jobs WHERE session_id = ? AND review_key != ? "
                    "AND state IN (?, ?)",
                    (session_id, keep_key, JobState.QUEUED, JobState.RUNNING),
                )
            ]
            db.executemany(
                "UPDATE review_jobs SET state = ?, finished_at = ? WHERE job_id = ?",
                [(JobState.CANCELLED, time.time(), job_id) for job_id in ids],
            )
        return ids

    def claim(self, owner: str, limit: int, lease: float = LEASE_SECONDS) -> list[ReviewJob]:
        """Take up to `limit` jobs: queued ones, then running ones whose lease ran out or whose
        owner is gone; oldest first."""
        if limit < 1:
            return []
        now = time.time()
        with _Immediate(self) as db:
            rows = db.execute(
                _SELECT_LEASED + " WHERE state IN (?, ?) ORDER BY created_at, position",
                (JobState.QUEUED, JobState.RUNNING),
            ).fetchall()
            taken = [
                _job(row[:-1])
                for row in rows
                if row[7] == JobState.QUEUED
                or (row[8] != owner and ((row[-1] or 0) < now or owner_gone(row[8])))
            ][:limit]
            db.executemany(
                "UPDATE review_jobs SET state = ?, owner = ?, lease_until = ?, tries = tries + 1 "
                "WHERE job_id = ?",
                [(JobState.RUNNING, owner, now + lease, job.job_id) for job in taken],
            )
        return taken

    def renew(self, owner: str, job_ids: Sequence[str], lease: float = LEASE_SECONDS) -> None:
        with _Immediate(self) as db:
            db.executemany(
                "UPDATE review_jobs SET lease_until = ? WHERE job_id = ? AND owner = ? "
                "AND state = ?",
                [(time.time() + lease, job_id, owner, JobState.RUNNING) for job_id in job_ids],
            )

    def complete(
        self,
        job_id: str,
        owner: str,
        state: JobState,
        verdict: dict[str, Any] | None = None,
        error: tuple[str, str] | None = None,
    ) -> bool:
        """Record how the job ended, once: False when it is no longer ours to finish."""
        code, message = error if error is not None else (None, None)
        with _Immediate(self) as db:
            cursor = db.execute(
                "UPDATE review_jobs SET state = ?, verdict = ?, error_code = ?, error_message = ?, "
                "finished_at = ? WHERE job_id = ? AND owner = ? AND state = ?",
                (
                    state, None if verdict is None else json.dumps(verdict), code, message,
                    time.time(), job_id, owner, JobState.RUNNING,
                ),
            )  # fmt: skip
        return cursor.rowcount == 1

    def consume(self, review_key: str) -> bool:
        """Mark a finished submission as answered (its verdicts go to the session, or its error
        to the agent): True only for the first caller. A later call makes new jobs."""
        with _Immediate(self) as db:
            cursor = db.execute(
                "UPDATE review_jobs SET consumed = 1 WHERE review_key = ? AND consumed = 0",
                (review_key,),
            )
        return cursor.rowcount > 0


_COLUMNS = (
    "job_id, review_key, session_id, position, label, payload, hashes, state, owner, tries, "
    "verdict, error_code, error_message"
)
_SELECT_LEASED = f"SELECT {_COLUMNS}, lease_until FROM review_jobs"  # noqa: S608 (constant)
_SELECT = f"SELECT {_COLUMNS} FROM review_jobs"  # noqa: S608 (constant text, no input)


def _job(row: Sequence[Any]) -> ReviewJob:
    return ReviewJob(
        job_id=row[0],
        review_key=row[1],
        session_id=row[2],
        position=row[3],
        label=row[4],
        payload=json.loads(row[5]),
        hashes=json.loads(row[6]),
        state=JobState(row[7]),
        owner=row[8],
        tries=row[9],
        verdict=None if row[10] is None else json.loads(row[10]),
        error_code=row[11],
        error_message=row[12],
    )


class _Immediate:
    """`BEGIN IMMEDIATE … COMMIT` (rolled back on error) under the store's thread lock: one
    writer at a time, across threads and processes."""

    def __init__(self, store: ReviewJobStore) -> None:
        self.store = store

    def __enter__(self) -> sqlite3.Connection:
        self.store._lock.acquire()
        try:
            db = self.store._db()
            db.execute("BEGIN IMMEDIATE")
        except BaseException:
            self.store._lock.release()
            raise
        return db

    def __exit__(self, kind: object, *_: object) -> None:
        try:
            db = self.store._db()
            db.execute("COMMIT" if kind is None else "ROLLBACK")
        finally:
            self.store._lock.release()
