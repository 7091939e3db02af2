"""A request several must sign, approved by fewer so far, is shown as a partial approval on
the Approvals page and the run page (docs/dashboard.md)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from deepwork_core.state.approvals.signatures import TrustedApprovers
from deepwork_core.state.approvals.store import ApprovalStore
from deepwork_core.state.store.port import Store
from deepwork_mcp.dashboard.approval_views import other_projects_approvals
from starlette.testclient import TestClient

from tests.unit.core.engine.test_approval_policy_engine import decide, waiting


def test_a_partial_approval_stays_open_and_says_how_far_it_stands(
    tmp_path: Path, make_store: Callable[..., Store], client_for: Callable[..., TestClient]
) -> None:
    w = waiting(tmp_path, make_store)
    client = client_for(w.root)
    assert "So far 0 of 2 approvals" in client.get("/approvals").text

    decide(w.store, w.root, w.signers["bob"], w.session_id, w.clock.now)
    approvals = client.get("/approvals").text
    assert "So far 1 of 2 approvals (bob)" in approvals
    assert ">Approve</button>" in approvals
    run_page = client.get(f"/run/{w.session_id}").text
    assert "So far 1 of 2 approvals (bob)" in run_page
    assert '<span class="standing">1 of 2 approvals (bob)</span>' in client.get("/all").text

    decide(w.store, w.root, w.signers["carol"], w.session_id, w.clock.now)
    assert "approvals (bob, carol)" not in client.get("/approvals").text


def test_the_run_page_timeline_says_how_far_each_approval_stood(
    tmp_path: Path, make_store: Callable[..., Store], client_for: Callable[..., TestClient]
) -> None:
    w = waiting(tmp_path, make_store)
    decide(w.store, w.root, w.signers["bob"], w.session_id, w.clock.now)
    decide(w.store, w.root, w.signers["carol"], w.session_id, w.clock.now)
    page = client_for(w.root).get(f"/run/{w.session_id}").text
    assert "(1 of 2 approvals (bob))" in page
    assert "(2 of 2 approvals (bob, carol))" in page


def test_another_projects_partly_approved_request_says_how_far_it_stands(
    tmp_path: Path, make_store: Callable[..., Store]
) -> None:
    w = waiting(tmp_path, make_store)
    viewer = tmp_path / "viewer"
    (viewer / ".deepwork").mkdir(parents=True)
    database = w.root / ".deepwork" / "tmp" / "deepwork.sqlite3"
    (viewer / ".deepwork" / "config.yml").write_text(f"store:\n  url: sqlite:///{database}\n")
    approvals = ApprovalStore(
        make_store(viewer), viewer, trusted=TrustedApprovers(viewer, shared=True)
    )
    [card] = other_projects_approvals(approvals)
    assert card.standing == "0 of 2 approvals"
    decide(w.store, w.root, w.signers["bob"], w.session_id, w.clock.now)
    [card] = other_projects_approvals(approvals)
    assert (card.session_id, card.standing) == (w.session_id, "1 of 2 approvals (bob)")
