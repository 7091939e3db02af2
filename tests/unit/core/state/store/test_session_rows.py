"""Listing runs from the store's columns: every project's runs, one project's pages, the columns
filled for rows written before they existed, and writes that travel with the next read."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from deepwork_core.state.store.errors import StoreCode, StoreError
from deepwork_core.state.store.opening import open_store, project_ref
from deepwork_core.state.store.port import Store
from deepwork_core.state.store.schema import MIGRATIONS, SCHEMA_VERSION, ListColumns
from deepwork_core.state.store.tables.session_lists import (
    branch_origins,
    finished_ids,
    list_session_rows,
    project_session_rows,
)
from deepwork_core.state.store.tables.session_rows import SessionRow, save_session
from deepwork_core.state.store.url import parse_store_url

from tests.unit.core.state.store.conftest import ManualClock


def _row(n: int, *, parent: str | None = None, instance: bool = False) -> SessionRow:
    return SessionRow(
        session_id=f"s{n:04d}",
        job="job",
        workflow="main",
        status="active" if n % 2 else "completed",
        agent=None,
        branch="b",
        started_at=float(n),
        completed_at=None,
        body="{}",
        listed=ListColumns(
            goal=f"goal {n}",
            steps=json.dumps([f"step{n}"]),
            parent_session_id=parent,
            is_instance=instance,
            awaiting_approval=n == 3,
        ),
    )


def test_a_projects_runs_come_a_page_at_a_time_newest_start_first(any_store: Store) -> None:
    project = any_store.project.project_id
    with any_store.write() as tx:
        for n in range(1, 8):
            save_session(tx, project, "m", _row(n), now=100.0 - n)
        save_session(tx, project, "m", _row(8, parent="s0007"), now=0.0)
        save_session(tx, project, "m", _row(9, parent="s0007", instance=True), now=0.0)
        tx.execute(
            "INSERT INTO events (project_id, session_id, ts, kind, body) VALUES (?, ?, ?, ?, ?)",
            (project, "s0008", 42.5, "started", "{}"),
        )
    with any_store.read() as tx:
        first = project_session_rows(tx, project, limit=3)
        second = project_session_rows(tx, project, limit=3, offset=3)
        rest = project_session_rows(tx, project, limit=10, offset=6)
    assert [run.session_id for run in first] == ["s0008", "s0007", "s0006"]
    assert [run.session_id for run in second] == ["s0005", "s0004", "s0003"]
    assert [run.session_id for run in rest] == ["s0002", "s0001"]  # the instance is not listed
    child = first[0]
    assert (child.goal, child.steps, child.parent_session_id) == ("goal 8", ["step8"], "s0007")
    assert child.last_event_at == 42.5
    assert first[1].last_event_at is None
    assert [run.awaiting_approval for run in second] == [False, False, True]


def test_every_projects_runs_are_listed_by_last_write(any_store: Store) -> None:
    with any_store.write() as tx:
        tx.execute(
            "INSERT INTO projects (project_id, root, machine, created_at) VALUES (?, ?, ?, 0)",
            ("other", "/srv/other", "m2"),
        )
        save_session(tx, any_store.project.project_id, "m", _row(1), now=10.0)
        save_session(tx, "other", "m2", _row(2), now=20.0)
        save_session(tx, any_store.project.project_id, "m", _row(3), now=30.0)
    with any_store.read() as tx:
        runs = list_session_rows(tx)
        mine = list_session_rows(tx, project_id=any_store.project.project_id, limit=1)
        active = list_session_rows(tx, active_only=True)
    assert [(run.session_id, run.project_root) for run in runs] == [
        ("s0003", any_store.project.root),
        ("s0002", "/srv/other"),
        ("s0001", any_store.project.root),
    ]
    assert runs[1]._asdict()["machine"] == "m2"
    assert [run.session_id for run in mine] == ["s0003"]
    assert [run.session_id for run in active] == ["s0003", "s0001"]


def _open_unmigrated(url: str | None, root: Path) -> Store:
    location = parse_store_url(url, root)
    project, clock = project_ref(root), ManualClock()
    if location.kind == "postgresql":
        from deepwork_core.state.store.postgres import PostgresStore

        return PostgresStore(location, project, clock)
    from deepwork_core.state.store.sqlite import SqliteStore

    location.path.parent.mkdir(parents=True, exist_ok=True)  # type: ignore[union-attr]
    return SqliteStore(location, project, clock)


def test_migrating_a_version_1_store_fills_the_list_columns(
    store_url: str | None, tmp_path: Path
) -> None:
    document = {
        "session_id": "s0001",
        "goal": "ship it",
        "current_step_ids": ["draft", "edit"],
        "parent_session_id": "s0000",
        "pending_approval": {"step": "draft"},
    }
    old = _open_unmigrated(store_url, tmp_path)
    with old.write() as tx:
        for statement in MIGRATIONS[0]:
            tx.execute(statement.replace("{identity}", old._identity()))
        tx.execute("INSERT INTO store_meta (key, value) VALUES ('application', 'deepwork')")
        tx.execute("INSERT INTO store_meta (key, value) VALUES ('schema_version', '1')")
        tx.execute(
            "INSERT INTO sessions (project_id, session_id, job, workflow, status, machine, "
            "started_at, updated_at, body) VALUES (?, 's0001', 'j', 'w', 'active', 'm', 1, 1, ?)",
            (old.project.project_id, json.dumps(document)),
        )
    old.close()
    store = open_store(store_url, tmp_path)
    try:
        with store.read() as tx:
            version = tx.execute("SELECT value FROM store_meta WHERE key = 'schema_version'")
            (run,) = project_session_rows(tx, store.project.project_id, limit=10)
    finally:
        store.close()
    assert version == [(str(SCHEMA_VERSION),)]
    assert (run.goal, run.steps, run.parent_session_id) == ("ship it", ["draft", "edit"], "s0000")
    assert run.awaiting_approval


def test_migrating_a_version_3_store_fills_where_runs_started_and_ended(
    store_url: str | None, tmp_path: Path
) -> None:
    old = _open_unmigrated(store_url, tmp_path)
    with old.write() as tx:
        for migration in MIGRATIONS[:3]:
            for statement in migration:
                tx.execute(statement.replace("{identity}", old._identity()))
        tx.execute("INSERT INTO store_meta (key, value) VALUES ('application', 'deepwork')")
        tx.execute("INSERT INTO store_meta (key, value) VALUES ('schema_version', '3')")
        for sid, status, completed, previous in (
            ("s0001", "completed", 9.0, "main"),
            ("s0002", "aborted", None, None),
            ("s0003", "active", None, "dev"),
        ):
            tx.execute(
                "INSERT INTO sessions (project_id, session_id, job, workflow, status, machine, "
                "started_at, updated_at, completed_at, body, branch) "
                "VALUES (?, ?, 'j', 'w', ?, 'm', 5, 5, ?, ?, 'deepwork/x')",
                (
                    old.project.project_id, sid, status, completed,
                    json.dumps({"session_id": sid, "previous_branch": previous}),
                ),
            )  # fmt: skip
    old.close()
    store = open_store(store_url, tmp_path)
    try:
        project = store.project.project_id
        with store.read() as tx:
            ended = finished_ids(tx, project, limit=10)
            origins = branch_origins(tx, project, ["deepwork/x"])
            rows = dict(tx.execute("SELECT session_id, started_from FROM sessions"))
    finally:
        store.close()
    assert ended == ["s0001", "s0002"]  # by when they ended (an abort: when it started)
    assert rows == {"s0001": "main", "s0002": None, "s0003": "dev"}
    assert origins == {"deepwork/x": "main"}  # its first run (a tie: the smaller id)


def test_a_failing_write_rolls_back_the_whole_transaction(any_store: Store) -> None:
    project = any_store.project.project_id
    with any_store.write() as tx:
        save_session(tx, project, "m", _row(1), now=1.0)

    def write_twice() -> None:
        with any_store.write() as tx:
            save_session(tx, project, "m", _row(2), now=2.0)
            tx.execute(  # the same key again, without ON CONFLICT: refused
                "INSERT INTO sessions (project_id, session_id, job, workflow, status, machine, "
                "started_at, updated_at, body) "
                "VALUES (?, 's0001', 'j', 'w', 'active', 'm', 1, 1, '{}')",
                (project,),
            )

    with pytest.raises(StoreError) as caught:
        write_twice()
    assert caught.value.code == StoreCode.STORE_ERROR
    with any_store.read() as tx:  # the store is usable, and the first write did not land
        assert [run.session_id for run in project_session_rows(tx, project, limit=10)] == ["s0001"]
