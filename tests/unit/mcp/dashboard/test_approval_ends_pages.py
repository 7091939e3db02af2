"""The dashboard shows how approval requests ended (docs/team.md, "How a request ends"): an
expired card cannot be decided, and the run page lists each request's end."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

from deepwork_core.state.store.port import Store
from starlette.testclient import TestClient

from tests.unit.core.engine.test_approval_policy_engine import decide, waiting


def test_an_expired_card_says_so_and_cannot_be_decided(
    tmp_path: Path, make_store: Callable[..., Store], client_for: Callable[..., TestClient]
) -> None:
    # started two hours ago: its hour passed by the wall clock
    w = waiting(tmp_path, make_store, start=datetime.now(UTC) - timedelta(hours=2))
    client = client_for(w.root)
    page = client.get("/approvals").text
    assert 'data-end="expired"' in page
    assert "It can no longer be decided" in page
    assert '<button class="approve" type="submit" disabled>Approve</button>' in page
    listed = client.get("/all").text
    assert "approval expired, waiting for the agent" in listed


def test_all_projects_says_who_may_decide_a_run_awaiting_approval(
    tmp_path: Path, make_store: Callable[..., Store], client_for: Callable[..., TestClient]
) -> None:
    w = waiting(tmp_path, make_store)  # alice started it; the step is not_by_author
    listed = client_for(w.root).get("/all").text
    assert '<span class="deciders">who may decide: bob or carol</span>' in listed


def test_the_run_page_lists_how_each_request_ended(
    tmp_path: Path, make_store: Callable[..., Store], client_for: Callable[..., TestClient]
) -> None:
    w = waiting(tmp_path, make_store)
    decide(w.store, w.root, w.signers["bob"], w.session_id, w.clock.now)
    decide(w.store, w.root, w.signers["carol"], w.session_id, w.clock.now)
    w.run.finish({"sig": "sig.md"})
    page = client_for(w.root).get(f"/run/{w.session_id}").text
    assert '<tr data-end="approved">' in page
    assert "approved: 2 of 2 approvals (bob, carol)" in page
    assert "Approval request for" in page  # the timeline's approval_ended line
