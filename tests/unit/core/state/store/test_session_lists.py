"""The bounded lists of sessions (state/store/tables/session_lists.py): each reads only the rows it
shows, and a row that does not read is shown as bad instead of failing the list."""

from __future__ import annotations

import json

from deepwork_core.state.store.port import Store
from deepwork_core.state.store.schema import ListColumns
from deepwork_core.state.store.tables.session_lists import (
    awaiting_ids,
    branch_origins,
    checked_time,
    count_session_rows,
    finished_ids,
    instance_ids,
    list_session_rows,
    project_session_rows,
)
from deepwork_core.state.store.tables.session_rows import SessionRow, save_session


def _row(
    n: int,
    *,
    status: str = "active",
    completed_at: float | None = None,
    branch: str | None = None,
    started_from: str | None = None,
    parent: str | None = None,
    instance: bool = False,
    awaiting: bool = False,
) -> SessionRow:
    return SessionRow(
        session_id=f"s{n:04d}",
        job="job",
        workflow="main",
        status=status,
        agent=None,
        branch=branch,
        started_at=float(n),
        completed_at=completed_at,
        body="{}",
        listed=ListColumns(
            goal=f"goal {n}",
            steps=json.dumps(["a"]),
            parent_session_id=parent,
            is_instance=instance,
            awaiting_approval=awaiting,
            started_from=started_from,
        ),
    )


def test_the_newest_finished_runs_come_newest_end_first(any_store: Store) -> None:
    project = any_store.project.project_id
    with any_store.write() as tx:
        save_session(tx, project, "m", _row(1, status="completed", completed_at=50.0), 0.0)
        save_session(tx, project, "m", _row(2, status="aborted", completed_at=None), 0.0)
        save_session(tx, project, "m", _row(3, status="completed", completed_at=30.0), 0.0)
        save_session(tx, project, "m", _row(4), 0.0)  # active: not finished
    with any_store.read() as tx:
        assert finished_ids(tx, project, limit=10) == ["s0001", "s0003", "s0002"]
        assert finished_ids(tx, project, limit=2) == ["s0001", "s0003"]


def test_a_branch_takes_its_origin_from_its_first_run(any_store: Store) -> None:
    project = any_store.project.project_id
    with any_store.write() as tx:
        save_session(tx, project, "m", _row(5, branch="deepwork/x", started_from="later"), 0.0)
        save_session(tx, project, "m", _row(2, branch="deepwork/x", started_from="main"), 0.0)
        save_session(tx, project, "m", _row(3, branch="deepwork/y"), 0.0)
        save_session(tx, project, "m", _row(4, branch="other", started_from="dev"), 0.0)
    with any_store.read() as tx:
        origins = branch_origins(tx, project, ["deepwork/x", "deepwork/y", "deepwork/none"])
    assert origins == {"deepwork/x": "main", "deepwork/y": None}


def test_instances_and_runs_awaiting_a_human_are_read_by_their_own_rows(
    any_store: Store,
) -> None:
    project = any_store.project.project_id
    with any_store.write() as tx:
        save_session(tx, project, "m", _row(1), 0.0)
        save_session(tx, project, "m", _row(3, parent="s0001", instance=True), 0.0)
        save_session(tx, project, "m", _row(2, parent="s0001", instance=True), 0.0)
        save_session(tx, project, "m", _row(4, parent="s0001"), 0.0)  # nested, no instance
        save_session(tx, project, "m", _row(5, awaiting=True), 0.0)
        save_session(tx, project, "m", _row(6, awaiting=True, status="aborted"), 0.0)
    with any_store.read() as tx:
        assert instance_ids(tx, project, "s0001") == ["s0002", "s0003"]
        assert awaiting_ids(tx, project) == ["s0005"]


def test_every_run_comes_a_page_at_a_time_with_the_count_of_all(any_store: Store) -> None:
    project = any_store.project.project_id
    with any_store.write() as tx:
        for n in range(1, 6):
            save_session(tx, project, "m", _row(n), now=float(n))
    with any_store.read() as tx:
        first = list_session_rows(tx, limit=2)
        last = list_session_rows(tx, limit=2, offset=4)
        total = count_session_rows(tx)
    assert [run.session_id for run in first] == ["s0005", "s0004"]
    assert [run.session_id for run in last] == ["s0001"]
    assert total == 5


def test_a_row_whose_times_are_not_dates_is_listed_as_bad(any_store: Store) -> None:
    project = any_store.project.project_id
    with any_store.write() as tx:
        save_session(tx, project, "m", _row(1), now=10.0)
        save_session(tx, project, "m", _row(2), now=20.0)
        tx.execute("UPDATE sessions SET updated_at = ? WHERE session_id = 's0002'", (1e300,))
    with any_store.read() as tx:
        runs = {run.session_id: run for run in list_session_rows(tx)}
    assert runs["s0002"].updated_at is None
    assert runs["s0002"].problem == "bad row: updated_at is not a date"
    assert runs["s0001"].problem is None
    assert runs["s0001"].updated_at == 10.0


def test_a_row_whose_steps_do_not_parse_is_listed_as_bad(any_store: Store) -> None:
    project = any_store.project.project_id
    with any_store.write() as tx:
        save_session(tx, project, "m", _row(1), 0.0)
        save_session(tx, project, "m", _row(2), 0.0)
        tx.execute("UPDATE sessions SET steps = ? WHERE session_id = 's0002'", ("[" * 100_000,))
    with any_store.read() as tx:
        runs = {str(run.session_id): run for run in project_session_rows(tx, project, limit=10)}
    assert runs["s0002"].steps == []
    assert runs["s0002"].problem is not None
    assert runs["s0002"].problem.startswith("bad row: its current steps do not read")
    assert runs["s0001"].steps == ["a"]


def test_only_real_dates_pass_the_check() -> None:
    assert checked_time(12.5) == 12.5
    assert checked_time(3) == 3.0
    for bad in (float("nan"), float("inf"), 1e300, -1e300, "12", None, True):
        assert checked_time(bad) is None
