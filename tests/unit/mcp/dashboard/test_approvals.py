"""Approving from the dashboard: recorded as `deepwork approve` records it, on its own channel,
bound to the files the page showed (docs/dashboard.md, docs/evidence.md)."""

from __future__ import annotations

import hashlib
import os
import re
from pathlib import Path

from deepwork_core.state.approvals.signatures import ApproverSigner
from deepwork_core.state.approvals.store import ApprovalStore
from starlette.testclient import TestClient

from tests.fixtures.trust import trust_on_base
from tests.unit.mcp.dashboard.conftest import TOKEN, Waiting


def request_id_on(page: str) -> str:
    found = re.search(r'name="request_id" value="([^"]+)"', page)
    assert found is not None
    return found.group(1)


def decide(client: TestClient, waiting: Waiting, **form: str) -> tuple[int, str]:
    page = client.get("/approvals").text
    data = {"token": TOKEN, "request_id": request_id_on(page), **form}
    response = client.post(f"/approvals/{waiting.session_id}", data=data)
    return response.status_code, response.text


def test_the_page_shows_the_files_hashes_and_escaped_previews(
    client: TestClient, waiting: Waiting
) -> None:
    page = client.get("/approvals").text
    record = ApprovalStore(waiting.store, waiting.root).load(waiting.session_id)
    assert record is not None
    [shown] = record.request.shown
    assert shown.sha256 is not None
    assert shown.sha256 in page
    assert "the plan &lt;b&gt;bold?&lt;/b&gt;" in page
    assert "<b>bold?</b>" not in page
    assert ">Approve</button>" in page
    assert ">Reject</button>" in page


def test_an_approval_is_recorded_on_the_dashboard_channel_and_unblocks_the_step(
    client: TestClient, waiting: Waiting
) -> None:
    status, page = decide(client, waiting, decision="approve")
    assert status == 200
    assert "Approved for step plan" in page
    record = ApprovalStore(waiting.store, waiting.root).load(waiting.session_id)
    assert record is not None
    assert record.decision is not None
    assert (record.decision.approved, record.decision.channel) == (True, "dashboard")
    assert "@" in record.decision.actor
    assert record.decision.terminal is None
    moved = waiting.engine.finish({"plan": "plan.md"})
    assert moved.status == "next_step"


def test_a_file_changed_after_the_page_showed_it_refuses_the_approval(
    client: TestClient, waiting: Waiting
) -> None:
    page = client.get("/approvals").text
    (waiting.root / "plan.md").write_text("changed behind the human's back\n")
    response = client.post(
        f"/approvals/{waiting.session_id}",
        data={"token": TOKEN, "request_id": request_id_on(page), "decision": "approve"},
    )
    assert response.status_code == 409
    assert "approval.outputs_changed" in response.text
    assert "plan.md" in response.text
    record = ApprovalStore(waiting.store, waiting.root).load(waiting.session_id)
    assert record is not None
    assert record.decision is None


def test_a_replaced_request_refuses_the_old_page(client: TestClient, waiting: Waiting) -> None:
    response = client.post(
        f"/approvals/{waiting.session_id}",
        data={"token": TOKEN, "request_id": "an-older-request", "decision": "approve"},
    )
    assert response.status_code == 409
    assert "approval.request_changed" in response.text


def test_a_rejection_needs_a_reason_and_records_it(client: TestClient, waiting: Waiting) -> None:
    status, page = decide(client, waiting, decision="reject")
    assert status == 400
    assert "needs a reason" in page
    status, page = decide(client, waiting, decision="reject", comment="say why")
    assert status == 200
    record = ApprovalStore(waiting.store, waiting.root).load(waiting.session_id)
    assert record is not None
    assert record.decision is not None
    assert (record.decision.approved, record.decision.comment) == (False, "say why")


def test_a_post_without_the_token_in_its_form_is_refused(
    client: TestClient, waiting: Waiting
) -> None:
    page = client.get("/approvals").text
    response = client.post(
        f"/approvals/{waiting.session_id}",
        data={"request_id": request_id_on(page), "decision": "approve"},
    )
    assert response.status_code == 403
    record = ApprovalStore(waiting.store, waiting.root).load(waiting.session_id)
    assert record is not None
    assert record.decision is None


def test_decisions_are_posts_only(client: TestClient, waiting: Waiting) -> None:
    assert client.get(f"/approvals/{waiting.session_id}?decision=approve").status_code == 405


def test_where_the_project_trusts_approvers_the_dashboard_signs_with_the_local_key(
    client: TestClient, waiting: Waiting
) -> None:
    state = Path(os.environ["DEEPWORK_STATE_DIR"])
    alice = ApproverSigner("alice", state / "approvers" / "alice.key")
    alice.create()
    trust_on_base(waiting.root, alice)

    status, page = decide(client, waiting, decision="approve")
    assert status == 200, page
    record = ApprovalStore(waiting.store, waiting.root).load(waiting.session_id)
    assert record is not None
    assert record.decision is not None
    assert record.decision.signer == "alice"
    assert waiting.engine.finish({"plan": "plan.md"}).status == "next_step"


def test_where_the_project_trusts_approvers_an_unsigned_click_is_refused(
    client: TestClient, waiting: Waiting
) -> None:
    somebody = ApproverSigner("bob", waiting.root.parent / "bob.key")
    somebody.create()
    trust_on_base(waiting.root, somebody)

    status, page = decide(client, waiting, decision="approve")  # no approver key here
    assert status == 409
    assert "approval.unverified" in page
    record = ApprovalStore(waiting.store, waiting.root).load(waiting.session_id)
    assert record is not None
    assert record.decision is None


def test_a_file_changed_since_the_request_shows_its_current_content_under_its_current_hash(
    client: TestClient, waiting: Waiting
) -> None:
    (waiting.root / "plan.md").write_text("a different plan\n")
    page = client.get("/approvals").text
    record = ApprovalStore(waiting.store, waiting.root).load(waiting.session_id)
    assert record is not None
    [shown] = record.request.shown
    now = hashlib.sha256(b"a different plan\n").hexdigest()
    changed = re.search(r'<div class="file changed">.*?</div>', page, re.S)
    assert changed is not None
    assert f'<code class="hash asked">{shown.sha256}</code>' in changed.group(0)
    assert f'<code class="hash now">{now}</code>' in changed.group(0)
    assert '<pre class="current">a different plan\n</pre>' in changed.group(0)
    assert "the plan &lt;b&gt;" not in page  # the asked-about bytes are gone; nothing stands in


def test_after_a_refusal_for_a_changed_file_the_old_decision_is_disabled_and_never_counts(
    client: TestClient, waiting: Waiting
) -> None:
    old_page = client.get("/approvals").text
    assert " disabled" not in old_page
    (waiting.root / "plan.md").write_text("changed behind the human's back\n")
    old_form = {"token": TOKEN, "request_id": request_id_on(old_page), "decision": "approve"}
    refused = client.post(f"/approvals/{waiting.session_id}", data=old_form)
    assert refused.status_code == 409
    now = hashlib.sha256(b"changed behind the human's back\n").hexdigest()
    for page in (refused.text, client.get("/approvals").text):
        assert '<div class="card approval stale"' in page
        assert "changed behind the human&#x27;s back" in page
        assert now in page
        assert '<button class="approve" type="submit" disabled>' in page
        assert '<button class="reject" type="submit" disabled>' in page
        assert "The agent must call finished_step again" in page
    run_page = client.get(f"/run/{waiting.session_id}").text
    assert '<button class="approve" type="submit" disabled>' in run_page
    # The old form, sent anyway (a stale tab, a script), still completes nothing.
    again = client.post(f"/approvals/{waiting.session_id}", data=old_form)
    assert again.status_code == 409
    assert "approval.outputs_changed" in again.text
    record = ApprovalStore(waiting.store, waiting.root).load(waiting.session_id)
    assert record is not None
    assert record.decision is None
    # Submitting again makes a new request on the new bytes, decidable as usual.
    assert waiting.engine.finish({"plan": "plan.md"}).status == "awaiting_approval"
    fresh = client.get("/approvals").text
    assert request_id_on(fresh) != old_form["request_id"]
    assert " disabled" not in fresh
    status, _ = decide(client, waiting, decision="approve")
    assert status == 200
    assert waiting.engine.finish({"plan": "plan.md"}).status == "next_step"
