"""The review job queue: the work the gate's background reviews claim, run and answer.

A job is one review to run for one project: its `kind` says which, its `payload` is a pydantic
model of the caller's (`ReviewJobs(store, Payload)`), and its `result` one of the tagged
`JobResult` union (`Judged`, `Failed`, `Stale`, `Cancelled`), each stored as JSON in the row's
`payload` and `verdict` columns. Its life:

    enqueue ──> queued ──claim──> claimed ──complete──> done      (the result, exactly once)
      │           ^                  │  └──heartbeat (extends the lease)
      │           └── lease expired ─┘  (the next claim takes it again, attempts + 1)
      └── owner: held for the worker that queued it while `hold` renews its lease
    cancel: queued or claimed ──> cancelled                       (result `Cancelled`)

Usage by a worker (any process, any machine sharing the store):

    jobs = ReviewJobs(store, ReviewPayload)
    claim = jobs.claim("worker-1", lease_s=60)
    if claim is not None:
        ...run the review, calling jobs.heartbeat(claim) well inside each lease...
        if not jobs.complete(claim, Judged(verdict=...)):
            ...the lease was lost (another worker took the job, or it was cancelled): drop it

Guarantees:
- A claim hands a job to one worker: PostgreSQL selects it `FOR UPDATE SKIP LOCKED`, SQLite in
  a `BEGIN IMMEDIATE` transaction. Each claim carries a fresh `token`; heartbeat and complete
  act only while the job is still claimed under that token.
- `complete` records a result at most once per job: a second call, a call with an old token
  (the job was re-claimed after the lease ran out) or on a cancelled job returns False and
  changes nothing.
- A worker that dies stops heartbeating; once `lease_until` passes, `claim` hands the job out
  again. Leases use the store's clock (`Store.now`), injectable in tests.
- A job enqueued with an `owner` is claimed by that worker only while its lease lives (`hold`
  renews the leases of every job the worker queued and has not claimed yet); once the lease runs
  out (the owner stopped), any worker may claim it. A queued row's `claimed_by` names its owner.
- `enqueue` with a `dedupe_key` already used in the project returns the existing job's id.
- Rows are read with the bounded JSON parser: a column that is not JSON is `store.corrupt`. A
  payload that does not fit the model (another kind's, or another version's shape) reads as
  None, and a result that fits no member of the union as `Failed` with `store.job_unreadable`:
  a listing never fails on one odd row. Results written before `Cancelled` existed (a cancelled
  row without one) read as `Cancelled`.
Jobs are scoped to the store's project; `claim` never takes another project's job.
"""

from __future__ import annotations

import secrets
from collections.abc import Sequence
from enum import StrEnum
from typing import Annotated, Any, Final, Generic, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError, field_validator

from deepwork_core.base.error_codes import ErrorCode
from deepwork_core.base.fsutil import loads_json
from deepwork_core.evidence.verdicts import ReviewVerdict
from deepwork_core.state.store.errors import StoreCode, StoreError
from deepwork_core.state.store.port import Row, Store

#: The lease of a claim unless the worker asks for another.
DEFAULT_LEASE_S: Final = 60.0

_COLUMNS: Final = (
    "job_id, project_id, session_id, dedupe_key, kind, payload, state, enqueued_at, "
    "claimed_by, claim_token, lease_until, attempts, verdict, finished_at"
)

PayloadT = TypeVar("PayloadT", bound=BaseModel)


class ReviewJobState(StrEnum):
    QUEUED = "queued"
    CLAIMED = "claimed"
    DONE = "done"
    CANCELLED = "cancelled"


class _Result(BaseModel):
    #: Keys a newer version added are ignored, so its results still read.
    model_config = ConfigDict(extra="ignore", frozen=True)


class Judged(_Result):
    """The reviewer judged the files, and they had not changed when it answered."""

    result: Literal["verdict"] = "verdict"
    verdict: ReviewVerdict


class Failed(_Result):
    """No verdict: the coded error the review ended with."""

    result: Literal["error"] = "error"
    code: ErrorCode | StoreCode
    message: str

    @field_validator("code", mode="before")
    @classmethod
    def _known(cls, value: object) -> object:
        """A code this version does not know (a newer one's) reads as `quality_gate.error`."""
        if not isinstance(value, str) or isinstance(value, ErrorCode | StoreCode):
            return value
        for family in (ErrorCode, StoreCode):
            try:
                return family(value)
            except ValueError:
                continue
        return ErrorCode.QUALITY_GATE_ERROR


class Stale(_Result):
    """The files under review changed while the reviewer read them: its verdict was dropped."""

    result: Literal["stale"] = "stale"


class Cancelled(_Result):
    """The job was cancelled before it answered (its submission was replaced or ended)."""

    result: Literal["cancelled"] = "cancelled"


#: How a job ended, told apart by its `result` tag.
JobResult = Annotated[Judged | Failed | Stale | Cancelled, Field(discriminator="result")]
_RESULT: Final[TypeAdapter[JobResult]] = TypeAdapter(JobResult)


class ReviewJob(BaseModel, Generic[PayloadT]):
    """One row of `review_jobs`, its payload and result as models."""

    model_config = ConfigDict(frozen=True)

    job_id: str
    project_id: str
    session_id: str | None
    dedupe_key: str | None
    kind: str
    #: None when the stored payload does not fit the queue's model (see the module).
    payload: PayloadT | None
    state: ReviewJobState
    enqueued_at: float
    claimed_by: str | None
    lease_until: float | None
    attempts: int
    #: How the job ended; None while it is queued or claimed.
    result: JobResult | None
    finished_at: float | None


class ReviewClaim(BaseModel, Generic[PayloadT]):
    """A job handed to one worker, with the token its heartbeats and result must show."""

    model_config = ConfigDict(frozen=True)

    job: ReviewJob[PayloadT]
    token: str
    lease_until: float


def _json(text: str, job_id: str) -> Any:
    """A JSON column, parsed with the bounded parser: a value that is not JSON, or is nested
    too deeply, is `store.corrupt`, never a crash."""
    try:
        return loads_json(text)
    except ValueError:
        raise StoreError(
            f"review job {job_id!r} holds a column that is not valid JSON",
            code=StoreCode.STORE_CORRUPT,
        ) from None


def _result(row: Row) -> JobResult | None:
    job_id, state, text = row[0], ReviewJobState(row[6]), row[12]
    if text is None:
        return Cancelled() if state is ReviewJobState.CANCELLED else None
    try:
        return _RESULT.validate_python(_json(text, job_id))
    except ValidationError:
        message = f"review job {job_id!r} holds a result this version of DeepWork cannot read"
        return Failed(code=StoreCode.STORE_JOB_UNREADABLE, message=message)


class ReviewJobs(Generic[PayloadT]):
    """The review jobs of the store's project, their payloads read as `payload` models (see the
    module docstring)."""

    def __init__(self, store: Store, payload: type[PayloadT]) -> None:
        self.store = store
        self.project_id = store.project.project_id
        self.payload_type = payload

    def _job(self, row: Row) -> ReviewJob[PayloadT]:
        raw = _json(row[5], row[0])
        try:
            payload: PayloadT | None = self.payload_type.model_validate(raw)
        except ValidationError:
            payload = None
        # Built without validating again: each column was read into its type above.
        return ReviewJob[PayloadT].model_construct(
            job_id=row[0],
            project_id=row[1],
            session_id=row[2],
            dedupe_key=row[3],
            kind=row[4],
            payload=payload,
            state=ReviewJobState(row[6]),
            enqueued_at=row[7],
            claimed_by=row[8],
            lease_until=row[10],
            attempts=row[11],
            result=_result(row),
            finished_at=row[13],
        )

    def enqueue(
        self,
        kind: str,
        payload: PayloadT,
        *,
        session_id: str | None = None,
        dedupe_key: str | None = None,
        owner: str | None = None,
        lease_s: float = DEFAULT_LEASE_S,
    ) -> str:
        """Queue a job; its id (the existing job's when `dedupe_key` was used before).
        `owner`: the worker that alone may claim it while `lease_s` (renewed by `hold`) lives."""
        job_id = "rj-" + secrets.token_hex(8)
        now = self.store.now()
        with self.store.write() as tx:
            rows = tx.execute(
                "INSERT INTO review_jobs (job_id, project_id, session_id, dedupe_key, kind, "
                "payload, state, enqueued_at, claimed_by, lease_until) "
                "VALUES (?, ?, ?, ?, ?, ?, 'queued', ?, ?, ?) "
                "ON CONFLICT (project_id, dedupe_key) DO NOTHING RETURNING job_id",
                (
                    job_id,
                    self.project_id,
                    session_id,
                    dedupe_key,
                    kind,
                    payload.model_dump_json(),
                    now,
                    owner,
                    now + lease_s if owner is not None else None,
                ),
            )
            if rows:
                return str(rows[0][0])
            existing = tx.execute(
                "SELECT job_id FROM review_jobs WHERE project_id = ? AND dedupe_key = ?",
                (self.project_id, dedupe_key),
            )
            return str(existing[0][0])

    def claim(
        self,
        worker: str,
        *,
        lease_s: float = DEFAULT_LEASE_S,
        kinds: Sequence[str] | None = None,
    ) -> ReviewClaim[PayloadT] | None:
        """Take the oldest queued job no other live worker holds (or one whose lease ran out);
        None when there is none."""
        token = secrets.token_hex(12)
        now = self.store.now()
        kind_filter = ""
        params: list[object] = [worker, token, now + lease_s, self.project_id, worker, now, now]
        if kinds:
            kind_filter = f" AND kind IN ({', '.join('?' for _ in kinds)})"
            params.extend(kinds)
        with self.store.write() as tx:
            # Only constants and `?` placeholders are formatted in: no value reaches the SQL.
            rows = tx.execute(
                "UPDATE review_jobs SET state = 'claimed', claimed_by = ?, claim_token = ?, "  # noqa: S608
                "lease_until = ?, attempts = attempts + 1 WHERE job_id = ("
                "SELECT job_id FROM review_jobs WHERE project_id = ? AND ((state = 'queued' AND "
                "(claimed_by IS NULL OR claimed_by = ? OR lease_until IS NULL OR lease_until < ?)) "
                f"OR (state = 'claimed' AND lease_until < ?)){kind_filter} "
                f"ORDER BY enqueued_at, job_id LIMIT 1{self.store.skip_locked}) "
                f"RETURNING {_COLUMNS}",
                params,
            )
        if not rows:
            return None
        job = self._job(rows[0])
        until = job.lease_until or now + lease_s
        return ReviewClaim[PayloadT](job=job, token=token, lease_until=until)

    def heartbeat(
        self, claim: ReviewClaim[PayloadT], *, lease_s: float = DEFAULT_LEASE_S
    ) -> ReviewClaim[PayloadT] | None:
        """Extend the lease; the renewed claim, or None when the worker no longer holds it."""
        until = self.store.now() + lease_s
        with self.store.write() as tx:
            rows = tx.execute(
                "UPDATE review_jobs SET lease_until = ? WHERE job_id = ? AND claim_token = ? "
                "AND state = 'claimed' RETURNING job_id",
                (until, claim.job.job_id, claim.token),
            )
        return claim.model_copy(update={"lease_until": until}) if rows else None

    def hold(self, owner: str, *, lease_s: float = DEFAULT_LEASE_S) -> int:
        """Renew the lease of every job `owner` queued and no one claimed yet; how many."""
        with self.store.write() as tx:
            rows = tx.execute(
                "UPDATE review_jobs SET lease_until = ? WHERE project_id = ? AND claimed_by = ? "
                "AND state = 'queued' RETURNING job_id",
                (self.store.now() + lease_s, self.project_id, owner),
            )
        return len(rows)

    def complete(self, claim: ReviewClaim[PayloadT], result: JobResult) -> bool:
        """Record the result; True when this call did, False when the claim was lost."""
        with self.store.write() as tx:
            rows = tx.execute(
                "UPDATE review_jobs SET state = 'done', verdict = ?, finished_at = ?, "
                "lease_until = NULL WHERE job_id = ? AND claim_token = ? AND state = 'claimed' "
                "RETURNING job_id",
                (
                    _RESULT.dump_json(result).decode(),
                    self.store.now(),
                    claim.job.job_id,
                    claim.token,
                ),
            )
        return bool(rows)

    def cancel(self, job_id: str) -> bool:
        """Cancel a queued or claimed job; False when it was already done or cancelled."""
        with self.store.write() as tx:
            rows = tx.execute(
                "UPDATE review_jobs SET state = 'cancelled', verdict = ?, finished_at = ?, "
                "lease_until = NULL WHERE job_id = ? AND project_id = ? "
                "AND state IN ('queued', 'claimed') RETURNING job_id",
                (
                    _RESULT.dump_json(Cancelled()).decode(),
                    self.store.now(),
                    job_id,
                    self.project_id,
                ),
            )
        return bool(rows)

    def get(self, job_id: str) -> ReviewJob[PayloadT]:
        """The job; raises `store.job_not_found` when the project has none with that id."""
        [job] = self.get_many([job_id])
        return job

    def get_many(self, job_ids: Sequence[str]) -> list[ReviewJob[PayloadT]]:
        """The jobs, in the order asked, read at once; raises `store.job_not_found` when the
        project has none with one of the ids."""
        marks = ", ".join("?" for _ in job_ids)
        with self.store.read() as tx:
            rows = tx.execute(
                f"SELECT {_COLUMNS} FROM review_jobs WHERE project_id = ? "  # noqa: S608
                f"AND job_id IN ({marks})",
                (self.project_id, *job_ids),
            )
        found = {row[0]: row for row in rows}
        for job_id in job_ids:
            if job_id not in found:
                raise self._not_found(job_id)
        return [self._job(found[job_id]) for job_id in job_ids]

    def state(self, job_id: str) -> ReviewJobState:
        """Where the job is, without reading its payload; `store.job_not_found` as `get`."""
        with self.store.read() as tx:
            rows = tx.execute(
                "SELECT state FROM review_jobs WHERE job_id = ? AND project_id = ?",
                (job_id, self.project_id),
            )
        if not rows:
            raise self._not_found(job_id)
        return ReviewJobState(rows[0][0])

    def _not_found(self, job_id: str) -> StoreError:
        return StoreError(
            f"there is no review job {job_id!r} in store {self.store.display}",
            code=StoreCode.STORE_JOB_NOT_FOUND,
        )

    def list(
        self, *, session_id: str | None = None, states: Sequence[ReviewJobState] | None = None
    ) -> list[ReviewJob[PayloadT]]:
        """The project's jobs (of one session, in some states), oldest first."""
        sql = f"SELECT {_COLUMNS} FROM review_jobs WHERE project_id = ?"  # noqa: S608
        params: list[object] = [self.project_id]
        if session_id is not None:
            sql += " AND session_id = ?"
            params.append(session_id)
        if states:
            sql += f" AND state IN ({', '.join('?' for _ in states)})"
            params.extend(str(s) for s in states)
        with self.store.read() as tx:
            rows = tx.execute(sql + " ORDER BY enqueued_at, job_id", params)
        return [self._job(row) for row in rows]


def sessions_with_live_jobs(store: Store) -> set[str]:
    """The sessions of the store's project with a job queued or claimed, whatever its kind."""
    with store.read() as tx:
        rows = tx.execute(
            "SELECT DISTINCT session_id FROM review_jobs WHERE project_id = ? "
            "AND state IN ('queued', 'claimed') AND session_id IS NOT NULL",
            (store.project.project_id,),
        )
    return {str(row[0]) for row in rows}
