"""A project with a step waiting for a human, and a dashboard app in front of it."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from deepwork_core.engine.workflow import WorkflowEngine
from deepwork_core.jobs.discovery import JobCatalog
from deepwork_core.state.event_kinds import ReviewUsageEvent
from deepwork_core.state.events import append_event
from deepwork_core.state.sessions import SessionStore
from deepwork_core.state.store.port import Store
from deepwork_mcp.dashboard.app import dashboard_app
from starlette.testclient import TestClient

from tests.fixtures.evidence_project import key_of, make_evidence_project

PORT = 8765
TOKEN = "t0ken-for-tests"
BASE = f"http://127.0.0.1:{PORT}"


@dataclass
class Waiting:
    root: Path
    engine: WorkflowEngine
    session_id: str
    #: The project's store, as the engine holds it.
    store: Store


def waiting_project(
    make_store: Callable[..., Store], root: Path, goal: str = "ship the plan"
) -> Waiting:
    """`approved/main` started, its `plan` step submitted and waiting for approval."""
    make_evidence_project(root, with_git=False)
    store = make_store(root)
    catalog, sessions = JobCatalog.for_project(root), SessionStore(store, root)
    engine = WorkflowEngine(root, catalog, sessions, approval_key=key_of(root))
    session_id = engine.start(goal, "approved", "main").brief.session_id
    (root / "plan.md").write_text("the plan <b>bold?</b>\n")
    engine.finish({"plan": "plan.md"})
    return Waiting(root, engine, session_id, store)


@pytest.fixture
def waiting(tmp_path: Path, make_store: Callable[..., Store]) -> Waiting:
    return waiting_project(make_store, tmp_path / "project")


@pytest.fixture
def client_for() -> Iterator[Callable[..., TestClient]]:
    """`client_for(root)`: a client of a dashboard of `root`, signed in unless
    `signed_in=False`. Each app runs until the test ends, when it stops and closes the store it
    opened (its lifespan)."""
    with ExitStack() as running:

        def make(root: Path, *, signed_in: bool = True) -> TestClient:
            app = dashboard_app(root, port=PORT, token=TOKEN)
            client = running.enter_context(TestClient(app, base_url=BASE))
            if signed_in:
                assert client.get(f"/?token={TOKEN}").status_code == 200
            return client

        yield make


@pytest.fixture
def client(waiting: Waiting, client_for: Callable[..., TestClient]) -> TestClient:
    return client_for(waiting.root)


#: When the review calls the tests log were made.
CALLED_AT = datetime(2026, 11, 23, 10, 0, tzinfo=UTC)


def log_review_call(waiting: Waiting, step_id: str, **usage: Any) -> None:
    """A passed reviewer call of `step_id`'s review in the run's log, with `usage` (tokens, cost,
    model, depth, …) as its `review_usage` event carries them."""
    append_event(
        waiting.store,
        ReviewUsageEvent(
            ts=CALLED_AT,
            session_id=waiting.session_id,
            job="approved",
            step_id=step_id,
            review=step_id,
            outcome="passed",
            **usage,
        ),
    )
