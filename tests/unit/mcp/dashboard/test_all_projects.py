"""The All projects page (docs/dashboard.md, docs/team.md): every run of every project in the
store, with where it runs; and a decision sent to another project of a store that is not shared
is refused."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from pathlib import Path

from deepwork_core.state.approvals.signatures import TrustedApprovers
from deepwork_core.state.approvals.store import ApprovalStore
from deepwork_core.state.store.opening import project_ref
from deepwork_core.state.store.port import Store
from deepwork_mcp.dashboard.approval_views import other_projects_approvals
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
    """A request of another project names `plan.md` with its hash, and the store keeps none of
    its bytes (it was made before the store kept them); the viewer's checkout holds a `plan.md`
    of its own, with other bytes. The card shows neither those bytes nor their hash, says where
    the run is served, and cannot be decided here."""
    here = waiting_project(make_store, tmp_path / "here")
    with here.store.write() as tx:
        tx.execute("DELETE FROM approval_contents")
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


def viewer_of(here: Waiting, tmp_path: Path, make_store: Callable[..., Store]) -> ApprovalStore:
    """A second checkout on `here`'s store, holding a `plan.md` of its own."""
    viewer = tmp_path / "viewer"
    (viewer / ".deepwork").mkdir(parents=True)
    database = here.root / ".deepwork" / "tmp" / "deepwork.sqlite3"
    (viewer / ".deepwork" / "config.yml").write_text(f"store:\n  url: sqlite:///{database}\n")
    (viewer / "plan.md").write_text("the viewer's own secret\n")
    return ApprovalStore(make_store(viewer), viewer, trusted=TrustedApprovers(viewer, shared=True))


def test_another_projects_card_shows_the_bytes_the_store_keeps(
    tmp_path: Path, make_store: Callable[..., Store]
) -> None:
    here = waiting_project(make_store, tmp_path / "here")
    [card] = other_projects_approvals(viewer_of(here, tmp_path, make_store))
    [shown] = card.files
    assert shown.text == "the plan <b>bold?</b>\n"  # the served checkout's bytes, as asked
    assert shown.sha256 == hashlib.sha256(shown.text.encode()).hexdigest()
    assert (shown.changed, shown.incomplete, shown.size) == (False, False, 22)
    assert card.stale is None  # every byte is kept: it can be decided here


def test_another_projects_card_says_what_the_store_could_not_keep_and_where_to_decide(
    tmp_path: Path, make_store: Callable[..., Store]
) -> None:
    here = waiting_project(make_store, tmp_path / "here")
    with here.store.write() as tx:  # as a file over 256 KiB is kept
        tx.execute("UPDATE approval_contents SET kept = 'first_part', size = 300000")
    [card] = other_projects_approvals(viewer_of(here, tmp_path, make_store))
    [shown] = card.files
    assert shown.text == "the plan <b>bold?</b>\n"
    assert shown.incomplete
    assert "300000 bytes: only the first 256 KiB are kept" in (shown.note or "")
    assert "every byte" in (card.stale or "")
    assert str(here.root) in (card.stale or "")


def viewer_client(
    here: Waiting, tmp_path: Path, client_for: Callable[..., TestClient]
) -> TestClient:
    """A dashboard of a second checkout on `here`'s store."""
    viewer = tmp_path / "viewer"
    (viewer / ".deepwork").mkdir(parents=True)
    database = here.root / ".deepwork" / "tmp" / "deepwork.sqlite3"
    (viewer / ".deepwork" / "config.yml").write_text(f"store:\n  url: sqlite:///{database}\n")
    (viewer / "plan.md").write_text("the viewer's own secret\n")
    return client_for(viewer)


def test_another_projects_run_opens_from_its_all_projects_row_read_from_the_store(
    tmp_path: Path, make_store: Callable[..., Store], client_for: Callable[..., TestClient]
) -> None:
    here = waiting_project(make_store, tmp_path / "here")
    client = viewer_client(here, tmp_path, client_for)
    link = f"/run/{here.session_id}?project={here.store.project.project_id}"
    assert f'href="{link}"' in client.get("/all").text
    page = client.get(link)
    assert page.status_code == 200
    assert "Waiting for approval" in page.text
    assert "the plan &lt;b&gt;bold?&lt;/b&gt;" in page.text  # the stored bytes, escaped
    assert "the viewer&#x27;s own secret" not in page.text
    assert f'name="project" value="{here.store.project.project_id}"' in page.text
    assert str(here.root) in page.text  # where it is served
    assert "ship the plan" in page.text  # the run's goal, from the store
    assert "is drawn by the dashboard of" in page.text
    # The same session id without the project is not a run of the viewer's project.
    assert client.get(f"/run/{here.session_id}").status_code == 404


def test_a_run_that_cannot_be_opened_says_so_in_a_persons_words_on_a_styled_page(
    waiting: Waiting, client: TestClient
) -> None:
    cases = {
        "/run/sess_nothere1": (404, "There is no run sess_nothere1 in this store"),
        "/run/not..a..run": (400, "is not the name of a run"),
        f"/run/{waiting.session_id}?project=0123456789abcdef": (404, "no project"),
    }
    for path, (status, words) in cases.items():
        page = client.get(path)
        assert page.status_code == status, path
        assert words in page.text
        assert 'href="/static/dashboard.css"' in page.text  # styled, with the navigation
        assert 'href="/all"' in page.text
        assert "start_workflow" not in page.text
        assert "session.not_found" not in page.text
