"""The All projects page (docs/dashboard.md, docs/team.md): every run of every project in the
store, with where it runs; and a decision sent to another project of a store that is not shared
is refused."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from deepwork_core.state.approvals.signatures import TrustedApprovers
from deepwork_core.state.approvals.store import ApprovalStore
from deepwork_core.state.store.opening import project_ref
from deepwork_core.state.store.port import Store
from deepwork_mcp.dashboard.views import other_projects_approvals
from starlette.testclient import TestClient

from tests.fixtures.state_rows import approval_json

from .conftest import TOKEN, Waiting, waiting_project


def test_the_page_lists_every_run_of_the_store_with_its_project_and_machine(
    waiting: Waiting, client: TestClient
) -> None:
    page = client.get("/all").text
    assert "<th>Project</th><th>Machine</th><th>Branch</th><th>Agent</th>" in page
    assert waiting.session_id in page
    assert str(waiting.root) in page
    assert project_ref(waiting.root).machine in page
    assert 'href="/all"' in client.get("/").text


def test_the_list_follows_new_runs_without_a_reload(
    waiting: Waiting, client: TestClient, client_for: Callable[..., TestClient]
) -> None:
    page = client.get("/all").text
    assert 'data-refresh="/fragment/all"' in page
    later = waiting.engine.start("a second run", "approved", "main").brief.session_id
    assert later not in page
    fragment = client.get("/fragment/all")
    assert fragment.status_code == 200
    assert later in fragment.text
    assert waiting.session_id in fragment.text
    assert "<h1>" not in fragment.text  # the table only, not a whole page
    signed_out = client_for(waiting.root, signed_in=False)
    assert later not in signed_out.get("/fragment/all").text


def test_an_empty_project_lists_nothing(
    tmp_path: Path, client_for: Callable[..., TestClient]
) -> None:
    root = tmp_path / "empty"
    (root / ".deepwork").mkdir(parents=True)
    client = client_for(root)
    assert "The store holds no run yet." in client.get("/all").text


def test_a_decision_for_another_project_needs_a_shared_store(
    tmp_path: Path, make_store: Callable[..., Store], client_for: Callable[..., TestClient]
) -> None:
    here = waiting_project(make_store, tmp_path / "here")
    request_id = approval_json(here.store, here.session_id)["request"]["request_id"]
    client = client_for(here.root)
    answer = client.post(
        f"/approvals/{here.session_id}",
        data={
            "token": TOKEN,
            "request_id": request_id,
            "decision": "approve",
            "project": "0123456789abcdef",
        },
    )
    assert answer.status_code == 409
    assert "approval.none_pending" in answer.text
    assert approval_json(here.store, here.session_id)["decision"] is None


def test_a_bad_row_of_another_project_is_shown_as_bad_and_the_rest_still_shows(
    waiting: Waiting, client: TestClient
) -> None:
    later = waiting.engine.start("a second run", "approved", "main").brief.session_id
    with waiting.store.write() as tx:  # another program wrote a time that is not a date
        tx.execute(
            "INSERT INTO sessions (project_id, session_id, job, workflow, status, machine, "
            "started_at, updated_at, body) SELECT 'ffffffffffffffff', 'sess_badrow01', job, "
            "workflow, status, machine, started_at, ?, body FROM sessions WHERE session_id = ?",
            (1e300, later),
        )
        tx.execute("UPDATE sessions SET steps = ? WHERE session_id = ?", ("[" * 100_000, later))
    for path in ("/all", "/fragment/all"):
        page = client.get(path)
        assert page.status_code == 200
        assert "sess_badrow01" in page.text
        assert "bad row: updated_at is not a date" in page.text
        assert waiting.session_id in page.text
    for path in ("/", "/fragment/runs"):
        page = client.get(path)
        assert page.status_code == 200
        assert "bad row: its current steps do not read" in page.text
        assert waiting.session_id in page.text


def test_another_projects_request_never_previews_this_checkouts_file_of_that_name(
    tmp_path: Path, make_store: Callable[..., Store]
) -> None:
    """A request of another project names `plan.md` with its hash; the viewer's checkout holds a
    `plan.md` of its own, with other bytes. The card shows neither those bytes nor their hash,
    says where the run is served, and cannot be decided here."""
    here = waiting_project(make_store, tmp_path / "here")
    viewer = tmp_path / "viewer"
    (viewer / ".deepwork").mkdir(parents=True)
    database = here.root / ".deepwork" / "tmp" / "deepwork.sqlite3"
    (viewer / ".deepwork" / "config.yml").write_text(f"store:\n  url: sqlite:///{database}\n")
    (viewer / "plan.md").write_text("the viewer's own secret\n")
    approvals = ApprovalStore(
        make_store(viewer), viewer, trusted=TrustedApprovers(viewer, shared=True)
    )
    [card] = other_projects_approvals(approvals)
    assert card.session_id == here.session_id
    [shown] = card.files
    assert shown.path == "plan.md"
    assert shown.changed
    assert shown.text is None
    assert shown.now_sha256 is None
    assert "not shown" in (shown.note or "")
    assert str(here.root) in (card.stale or "")
    assert (card.project or "").startswith(str(here.root))
