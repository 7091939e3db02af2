"""The one schema of both adapters, as versioned migrations.

`MIGRATIONS[n - 1]` takes a store from version `n - 1` to `n`; `SCHEMA_VERSION` is the newest this
code knows. A store records its version in `store_meta` and is refused (`store.schema_newer`,
nothing written) when a newer DeepWork migrated it further. The statements are plain SQL that
SQLite and PostgreSQL both accept; `{identity}` is the one word they spell differently (an
auto-numbered primary key). Times are seconds since the epoch (UTC) as `DOUBLE PRECISION`.

Rows carry what listing runs across projects needs: the project (its id and root), the machine,
the branch, the agent, the job and workflow, the status and the timestamps.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, Protocol

from deepwork_core.base.fsutil import loads_json

#: Identifies a DeepWork store in `store_meta` (a SQLite file without it is someone else's).
APPLICATION: Final = "deepwork"

_V1: Final = (
    "CREATE TABLE store_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
    """CREATE TABLE projects (
        project_id TEXT PRIMARY KEY,
        root TEXT NOT NULL,
        machine TEXT NOT NULL,
        created_at DOUBLE PRECISION NOT NULL,
        imported_at DOUBLE PRECISION
    )""",
    """CREATE TABLE sessions (
        project_id TEXT NOT NULL,
        session_id TEXT NOT NULL,
        job TEXT NOT NULL,
        workflow TEXT NOT NULL,
        status TEXT NOT NULL,
        agent TEXT,
        branch TEXT,
        machine TEXT NOT NULL,
        started_at DOUBLE PRECISION NOT NULL,
        updated_at DOUBLE PRECISION NOT NULL,
        completed_at DOUBLE PRECISION,
        body TEXT NOT NULL,
        PRIMARY KEY (project_id, session_id)
    )""",
    "CREATE INDEX sessions_by_update ON sessions (updated_at)",
    """CREATE TABLE stacks (
        project_id TEXT NOT NULL,
        agent TEXT NOT NULL,
        position INTEGER NOT NULL,
        session_id TEXT NOT NULL,
        PRIMARY KEY (project_id, agent, position)
    )""",
    """CREATE TABLE events (
        seq {identity},
        project_id TEXT NOT NULL,
        session_id TEXT NOT NULL,
        ts DOUBLE PRECISION NOT NULL,
        kind TEXT NOT NULL,
        body TEXT NOT NULL
    )""",
    "CREATE INDEX events_by_session ON events (project_id, session_id, seq)",
    """CREATE TABLE approvals (
        project_id TEXT NOT NULL,
        session_id TEXT NOT NULL,
        body TEXT NOT NULL,
        updated_at DOUBLE PRECISION NOT NULL,
        PRIMARY KEY (project_id, session_id)
    )""",
    """CREATE TABLE review_jobs (
        job_id TEXT PRIMARY KEY,
        project_id TEXT NOT NULL,
        session_id TEXT,
        dedupe_key TEXT,
        kind TEXT NOT NULL,
        payload TEXT NOT NULL,
        state TEXT NOT NULL,
        enqueued_at DOUBLE PRECISION NOT NULL,
        claimed_by TEXT,
        claim_token TEXT,
        lease_until DOUBLE PRECISION,
        attempts INTEGER NOT NULL DEFAULT 0,
        verdict TEXT,
        finished_at DOUBLE PRECISION,
        UNIQUE (project_id, dedupe_key)
    )""",
    "CREATE INDEX review_jobs_by_state ON review_jobs (project_id, state, enqueued_at)",
)

#: Version 2: approval requests and decisions as rows of their own (the `approvals` table of
#: version 1 was never written). A request is the server's own record of what it asked: the
#: step, the shown outputs with their hashes, the channels a human may answer through, its seal;
#: `state` is `open`, `replaced` (a newer request of the session), `closed` (the server used it)
#: or `withdrawn` (the run was aborted). A decision (one per request) keeps its seal and its
#: approver's signature; the server counts it only when those verify (approvals.py).
_V2: Final = (
    "DROP TABLE approvals",
    """CREATE TABLE approval_requests (
        project_id TEXT NOT NULL,
        session_id TEXT NOT NULL,
        request_id TEXT NOT NULL,
        job TEXT NOT NULL,
        workflow TEXT NOT NULL,
        step_ids TEXT NOT NULL,
        shown TEXT NOT NULL,
        channels TEXT NOT NULL,
        mac TEXT,
        state TEXT NOT NULL,
        requested_at DOUBLE PRECISION NOT NULL,
        closed_at DOUBLE PRECISION,
        body TEXT NOT NULL,
        PRIMARY KEY (project_id, request_id)
    )""",
    "CREATE INDEX requests_by_session ON approval_requests (project_id, session_id, state)",
    """CREATE TABLE approval_decisions (
        project_id TEXT NOT NULL,
        session_id TEXT NOT NULL,
        request_id TEXT NOT NULL,
        approved INTEGER NOT NULL,
        channel TEXT NOT NULL,
        actor TEXT NOT NULL,
        signer TEXT,
        signature TEXT,
        mac TEXT,
        decided_at DOUBLE PRECISION NOT NULL,
        body TEXT NOT NULL,
        PRIMARY KEY (project_id, request_id)
    )""",
)

#: What the list of runs shows comes from columns, not from the session documents: the goal,
#: the current steps (a JSON array), the parent run, whether the run is a `for_each` instance and
#: whether it waits for an approval. `runs_by_update` covers the list of every project's runs
#: (read from the index alone, never from the rows and their documents); `runs_by_start` pages
#: one project's runs as the dashboard lists them. The columns of existing rows are filled from
#: their documents by `fill_run_columns` below.
_V3: Final = (
    "ALTER TABLE sessions ADD COLUMN goal TEXT NOT NULL DEFAULT ''",
    "ALTER TABLE sessions ADD COLUMN steps TEXT NOT NULL DEFAULT '[]'",
    "ALTER TABLE sessions ADD COLUMN parent_session_id TEXT",
    "ALTER TABLE sessions ADD COLUMN is_instance INTEGER NOT NULL DEFAULT 0",
    "ALTER TABLE sessions ADD COLUMN awaiting_approval INTEGER NOT NULL DEFAULT 0",
    "DROP INDEX sessions_by_update",
    """CREATE INDEX runs_by_update ON sessions (updated_at DESC, session_id, project_id,
        machine, job, workflow, status, agent, branch, started_at, completed_at)""",
    "CREATE INDEX runs_by_start ON sessions (project_id, is_instance, started_at, session_id)",
)

#: Version 4: what reviews cost and judged, kept for every server of the store
#: (docs/quality-gate.md). `review_verdicts` holds each verdict under the key of what it judged
#: (the brief, the runner and model, the SHA-256 of every file the reviewer saw), so a later task
#: with the same key reuses it. `review_spend` holds one row per reviewer call: `held` while it
#: runs (`usd` is the slice of the day's budget it reserved), `spent` once its cost is known; the
#: day's spending is the sum of the day's rows, and the estimate of a task is the median of the
#: last tasks (`task_ref`) of the same rule, depth and model.
_V4: Final = (
    """CREATE TABLE review_verdicts (
        reuse_key TEXT PRIMARY KEY,
        passed INTEGER NOT NULL,
        verdict TEXT NOT NULL,
        project_id TEXT NOT NULL,
        session_id TEXT NOT NULL,
        step_id TEXT NOT NULL,
        judged_at DOUBLE PRECISION NOT NULL,
        cost_usd DOUBLE PRECISION
    )""",
    """CREATE TABLE review_spend (
        spend_id TEXT PRIMARY KEY,
        project_id TEXT NOT NULL,
        session_id TEXT NOT NULL,
        task_ref TEXT NOT NULL,
        rule TEXT NOT NULL,
        depth TEXT NOT NULL,
        model TEXT NOT NULL,
        runner TEXT NOT NULL,
        state TEXT NOT NULL,
        usd DOUBLE PRECISION NOT NULL,
        tokens INTEGER NOT NULL,
        at DOUBLE PRECISION NOT NULL
    )""",
    "CREATE INDEX review_spend_by_day ON review_spend (at)",
    "CREATE INDEX review_spend_by_rule ON review_spend (project_id, rule, depth, model, at)",
)

#: Version 5: every view reads only the rows it shows (docs/limits.md, "Views"). Runs gain where
#: their branch started (`started_from`) and when a finished run ended (`ended_at`, None while
#: active; filled for the rows written before), with indexes for the newest finished runs, a
#: branch's first run, a run's instances and the runs awaiting a human
#: (`state.store.tables.session_lists`), and one for a run's events of some kinds (a run
#: page's summary, the review cost of the runs on a page).
_V5: Final = (
    "ALTER TABLE sessions ADD COLUMN started_from TEXT",
    "ALTER TABLE sessions ADD COLUMN ended_at DOUBLE PRECISION",
    "CREATE INDEX runs_by_end ON sessions (project_id, ended_at)",
    "CREATE INDEX runs_by_branch ON sessions (project_id, branch, started_at)",
    "CREATE INDEX runs_by_parent ON sessions (project_id, parent_session_id, is_instance)",
    "CREATE INDEX runs_awaiting ON sessions (project_id, awaiting_approval, started_at)",
    "CREATE INDEX events_by_kind ON events (project_id, session_id, kind, seq)",
)

#: Version 6: the bytes of the files an approval request shows travel with it
#: (`state.store.tables.shown_bytes`): one row per shown file, in the request's order,
#: with the SHA-256 the request binds, the file's size, how much of it is kept (`kept`) and the
#: kept bytes as UTF-8 text (`content`, at most 256 KiB a file and 2 MiB a request).
_V6: Final = (
    """CREATE TABLE approval_contents (
        project_id TEXT NOT NULL,
        session_id TEXT NOT NULL,
        request_id TEXT NOT NULL,
        position INTEGER NOT NULL,
        output TEXT NOT NULL,
        path TEXT NOT NULL,
        sha256 TEXT,
        size BIGINT,
        kept TEXT NOT NULL,
        content TEXT NOT NULL,
        PRIMARY KEY (project_id, request_id, position)
    )""",
)

#: Version 7: approval policies (docs/job-format.md#approval-policy). A request keeps how many
#: distinct approvers must approve it (`required`, 1 for the requests before), and a request may
#: hold several decisions, one per `seat`: the signer where several must sign, else '' (one
#: decision a request, as before; the rows written before get '').
_V7: Final = (
    "ALTER TABLE approval_requests ADD COLUMN required INTEGER NOT NULL DEFAULT 1",
    """CREATE TABLE approval_decisions_v7 (
        project_id TEXT NOT NULL,
        session_id TEXT NOT NULL,
        request_id TEXT NOT NULL,
        seat TEXT NOT NULL DEFAULT '',
        approved INTEGER NOT NULL,
        channel TEXT NOT NULL,
        actor TEXT NOT NULL,
        signer TEXT,
        signature TEXT,
        mac TEXT,
        decided_at DOUBLE PRECISION NOT NULL,
        body TEXT NOT NULL,
        PRIMARY KEY (project_id, request_id, seat)
    )""",
    "INSERT INTO approval_decisions_v7 (project_id, session_id, request_id, seat, approved, "
    "channel, actor, signer, signature, mac, decided_at, body) SELECT project_id, session_id, "
    "request_id, '', approved, channel, actor, signer, signature, mac, decided_at, body "
    "FROM approval_decisions",
    "DROP TABLE approval_decisions",
    "ALTER TABLE approval_decisions_v7 RENAME TO approval_decisions",
)

#: Version 8: how often each reviewer is wrong (docs/quality-gate.md, "Calibration"): one row
#: per run of `deepwork calibrate`, its report as JSON (`deepwork_core.state.calibration`).
_V8: Final = (
    """CREATE TABLE calibration_runs (
        run_id TEXT PRIMARY KEY,
        project_id TEXT NOT NULL,
        runner TEXT NOT NULL,
        at DOUBLE PRECISION NOT NULL,
        report TEXT NOT NULL
    )""",
    "CREATE INDEX calibration_by_runner ON calibration_runs (project_id, runner, at)",
)

#: Version 9: how each approval request ended (`state.approvals.ending`): `end_state`
#: (approved, rejected, expired, cancelled or failed; NULL while open), `end_reason` (why, in a
#: person's words) and `closed_at` (when, as before), and `expires_at` (its policy's expiry, so
#: a listing reads an open request as expired without reading its document). The requests
#: closed before are given the end their state and decisions imply.
_V9: Final = (
    "ALTER TABLE approval_requests ADD COLUMN end_state TEXT",
    "ALTER TABLE approval_requests ADD COLUMN end_reason TEXT",
    "ALTER TABLE approval_requests ADD COLUMN expires_at DOUBLE PRECISION",
    "UPDATE approval_requests SET end_state = 'cancelled', "
    "end_reason = 'the run was aborted or moved back' WHERE state = 'withdrawn'",
    "UPDATE approval_requests SET end_state = 'failed', "
    "end_reason = 'a newer request replaced it' WHERE state = 'replaced'",
    "UPDATE approval_requests SET end_state = CASE "
    "WHEN EXISTS (SELECT 1 FROM approval_decisions d WHERE d.project_id = "
    "approval_requests.project_id AND d.request_id = approval_requests.request_id "
    "AND d.approved = 0) THEN 'rejected' "
    "WHEN (SELECT COUNT(*) FROM approval_decisions d WHERE d.project_id = "
    "approval_requests.project_id AND d.request_id = approval_requests.request_id "
    "AND d.approved = 1) >= approval_requests.required THEN 'approved' ELSE 'failed' END, "
    "end_reason = 'closed before end states were stored' WHERE state = 'closed'",
)

#: Version 10: what the reviews logged to each session cost, summed as their `review_usage`
#: events are appended (`state.store.tables.usage_rows`), so a run's totals are one row however
#: long its log; the rows of the events logged before are filled by the migration. The events
#: of one kind across a project, newest first (`deepwork stats`' newest runs), get an index.
_V10: Final = (
    """CREATE TABLE run_usage (
        project_id TEXT NOT NULL,
        session_id TEXT NOT NULL,
        calls INTEGER NOT NULL,
        input_tokens BIGINT NOT NULL,
        output_tokens BIGINT NOT NULL,
        cache_read_tokens BIGINT NOT NULL,
        cache_creation_tokens BIGINT NOT NULL,
        cost_usd DOUBLE PRECISION NOT NULL,
        unpriced_calls INTEGER NOT NULL,
        self_reviews INTEGER NOT NULL,
        reused_verdicts INTEGER NOT NULL,
        saved_usd DOUBLE PRECISION NOT NULL,
        PRIMARY KEY (project_id, session_id)
    )""",
    "CREATE INDEX events_by_project_kind ON events (project_id, kind, seq)",
)

#: Migration n (1-based) as its statements.
MIGRATIONS: Final[tuple[tuple[str, ...], ...]] = (
    _V1, _V2, _V3, _V4, _V5, _V6, _V7, _V8, _V9, _V10,
)  # fmt: skip
#: The migrations after which rows written before need columns filled from their documents.
FILLS_RUN_COLUMNS: Final = frozenset({3, 5})
#: The migration after which the review totals of the events logged before are summed.
FILLS_USAGE: Final = 10
SCHEMA_VERSION: Final = len(MIGRATIONS)


class Executes(Protocol):
    """What the fill needs of a transaction (`deepwork_core.state.store.port.Tx`)."""

    def execute(self, sql: str, params: Sequence[object] = ()) -> list[tuple[Any, ...]]: ...


@dataclass(frozen=True, slots=True)
class ListColumns:
    """What a list of runs shows beyond `SessionRow`'s own columns."""

    goal: str = ""
    #: The current step ids as a JSON array.
    steps: str = "[]"
    parent_session_id: str | None = None
    is_instance: bool = False
    awaiting_approval: bool = False
    #: The branch the repository was on when the run switched to its own.
    started_from: str | None = None

    def values(self) -> tuple[str | int | None, ...]:
        """The columns' values in table order, as SQL parameters (goal, steps,
        parent_session_id, is_instance, awaiting_approval, started_from)."""
        return (
            self.goal,
            self.steps,
            self.parent_session_id,
            int(self.is_instance),
            int(self.awaiting_approval),
            self.started_from,
        )


def list_columns(document: Mapping[str, Any]) -> ListColumns:
    """The list columns of a session document (a parsed `Session` JSON)."""
    steps = document.get("current_step_ids") or []
    parent = document.get("parent_session_id")
    previous = document.get("previous_branch")
    return ListColumns(
        goal=str(document.get("goal") or ""),
        steps=json.dumps([str(step) for step in steps]),
        parent_session_id=str(parent) if parent else None,
        is_instance=document.get("instance_of") is not None,
        awaiting_approval=document.get("pending_approval") is not None,
        started_from=str(previous) if previous else None,
    )


def fill_run_columns(tx: Executes) -> None:
    """Fill the list columns of every row from its document (rows written before they existed);
    a document that does not parse keeps the defaults (reading the run reports it)."""
    tx.execute(
        "UPDATE sessions SET ended_at = COALESCE(completed_at, started_at) WHERE status <> 'active'"
    )
    rows = tx.execute("SELECT project_id, session_id, body FROM sessions")
    for project_id, session_id, body in rows:
        try:
            document = loads_json(body)
            listed = list_columns(document if isinstance(document, dict) else {})
        except (ValueError, TypeError):
            continue
        tx.execute(
            "UPDATE sessions SET goal = ?, steps = ?, parent_session_id = ?, is_instance = ?, "
            "awaiting_approval = ?, started_from = ? WHERE project_id = ? AND session_id = ?",
            (
                *listed.values(),
                project_id,
                session_id,
            ),
        )
