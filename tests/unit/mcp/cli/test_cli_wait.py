"""`deepwork wait SESSION`: exit 3 while a parked run still waits for a person, 0 once the
decision is made; on PostgreSQL a waiter blocked on the store wakes on the decision's
notification (docs/headless.md)."""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner
from deepwork_core.base.identifiers import SessionId
from deepwork_core.engine.headless import parking
from deepwork_core.engine.headless.parking import wait_for_person
from deepwork_core.engine.results import FinishStatus
from deepwork_core.engine.workflow import WorkflowEngine
from deepwork_core.jobs.discovery import JobCatalog
from deepwork_core.state.sessions import SessionStore
from deepwork_core.state.store.opening import open_store
from deepwork_core.state.store.port import Store
from deepwork_mcp.cli import cli

from tests.fixtures.evidence_project import decide_outside, key_of
from tests.fixtures.signed_jobs import make_signed_project


def _parked_run(store: Store, root: Path) -> SessionId:
    catalog, sessions = JobCatalog.for_project(root), SessionStore(store, root)
    engine = WorkflowEngine(root, catalog, sessions, approval_key=key_of(root), headless=True)
    engine.start("g", "signed", "main")
    session_id = engine.stack()[0].session_id
    (root / "prep.md").write_text("prep\n")
    engine.finish({"prep": "prep.md"})
    (root / "sig.md").write_text("signed\n")
    assert engine.finish({"sig": "sig.md"}).status is FinishStatus.AWAITING_APPROVAL
    return session_id


def _wait(root: Path, session_id: str) -> tuple[int, str]:
    result = CliRunner().invoke(cli, ["wait", session_id, "--timeout", "0", "--path", str(root)])
    return result.exit_code, result.output


def test_wait_exits_3_while_the_run_waits_and_0_once_it_is_decided(
    tmp_path: Path, make_store: Callable[..., Store]
) -> None:
    root = make_signed_project(tmp_path / "project")
    store = make_store(root)
    session_id = _parked_run(store, root)
    code, output = _wait(root, session_id)
    assert code == 3
    assert "still waits for a person" in output
    decide_outside(store, root, session_id)
    assert _wait(root, session_id)[0] == 0


def test_wait_names_an_unknown_session(tmp_path: Path, make_store: Callable[..., Store]) -> None:
    root = make_signed_project(tmp_path / "project")
    make_store(root)
    code, output = _wait(root, "sess_nothere1")
    assert code == 1
    assert "session.not_found" in output


def test_a_waiter_on_postgresql_wakes_on_the_decision(
    tmp_path: Path, pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Without the notification it would read the run again only after ten minutes.
    monkeypatch.setattr(parking, "_RELISTEN_S", 600.0)
    root = make_signed_project(tmp_path / "project")
    with open_store(pg_url, root) as store, open_store(pg_url, root) as waiter_store:
        session_id = _parked_run(store, root)
        listening = threading.Event()
        woke: list[bool] = []

        def clock() -> float:  # the waiter's first reading of the time: it listens by now
            listening.set()
            return 0.0  # a clock that stands still: only a notification ends the wait

        waiter = threading.Thread(
            target=lambda: woke.append(
                wait_for_person(SessionStore(waiter_store, root), session_id, 600, clock)
            )
        )
        waiter.start()
        assert listening.wait(60)
        decide_outside(store, root, session_id)
        waiter.join(120)
        assert woke == [True]


@pytest.mark.parametrize("timeout", ["-1", "86401"])
def test_wait_refuses_a_timeout_out_of_range(tmp_path: Path, timeout: str) -> None:
    result = CliRunner().invoke(cli, ["wait", "sess_x", "--timeout", timeout, "--path", "."])
    assert result.exit_code == 2
