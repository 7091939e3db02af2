"""How approval requests end (docs/team.md, "How a request ends"): stored on the request with
when and why, logged as `approval_ended`, and read as expired from `expires_at` before anyone
tries a decision."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta

import pytest
from click.testing import CliRunner
from deepwork_core.base.error_codes import ErrorCode
from deepwork_core.base.identifiers import SessionId
from deepwork_core.engine.results import FinishStatus
from deepwork_core.state.approvals.models import ApprovalError
from deepwork_core.state.event_kinds import ApprovalEndedEvent
from deepwork_core.state.events import read_events
from deepwork_core.state.overview import project_overview
from deepwork_core.state.read_model.detail import session_detail
from deepwork_core.state.sessions import SessionStore
from deepwork_core.state.store.port import Store
from deepwork_core.state.store.tables.session_lists import EXPIRED_STATUS, list_session_rows
from deepwork_mcp.cli import cli

from tests.unit.core.engine.test_approval_policy_engine import Waiting, decide, waiting


def ends(w: Waiting) -> list[tuple[str, str, str]]:
    """(request id, end state, why) of each request of the run, as the store holds them."""
    with w.store.read() as tx:
        rows = tx.execute(
            "SELECT request_id, end_state, end_reason FROM approval_requests "
            "WHERE session_id = ? ORDER BY requested_at",
            (w.session_id,),
        )
    return [(str(a), str(b), str(c)) for a, b, c in rows]


def ended_events(w: Waiting) -> list[ApprovalEndedEvent]:
    events = read_events(w.store, SessionId(w.session_id))
    return [e for e in events if isinstance(e, ApprovalEndedEvent)]


def test_an_approved_request_is_stored_and_shown_as_approved_by_both_signers(
    tmp_path, make_store: Callable[..., Store]
) -> None:
    w = waiting(tmp_path, make_store)
    decide(w.store, w.root, w.signers["bob"], w.session_id, w.clock.now)
    decide(w.store, w.root, w.signers["carol"], w.session_id, w.clock.now)
    assert w.run.finish({"sig": "sig.md"}).status is FinishStatus.WORKFLOW_COMPLETE

    [(_, state, why)] = ends(w)
    assert state == "approved"
    assert "2 of 2 approvals (bob, carol)" in why
    [event] = ended_events(w)
    assert (event.state, event.why) == ("approved", why)
    summary = session_detail(SessionStore(w.store, w.root), SessionId(w.session_id)).summary
    assert [(e.state, e.why) for e in summary.ended] == [("approved", why)]


def test_a_rejected_request_ends_rejected_with_who_and_why(
    tmp_path, make_store: Callable[..., Store]
) -> None:
    from deepwork_core.state.approvals.decide import record_decision
    from deepwork_core.state.approvals.models import ApprovalChannel
    from deepwork_core.state.approvals.signatures import TrustedApprovers
    from deepwork_core.state.approvals.store import ApprovalStore

    from tests.fixtures.evidence_project import key_of

    w = waiting(tmp_path, make_store)
    approvals = ApprovalStore(
        w.store, w.root, key_of(w.root), trusted=TrustedApprovers(w.root), signer=w.signers["bob"]
    )
    record_decision(
        approvals, SessionId(w.session_id), approved=False, comment="wrong figure",
        channel=ApprovalChannel.CLI, actor="bob@laptop", terminal=None, now=w.clock.now,
    )  # fmt: skip
    answer = w.run.finish({"sig": "sig.md"})
    assert answer.status is FinishStatus.NEEDS_WORK
    assert "ended rejected: changes requested by approver bob" in (answer.feedback or "")
    [(_, state, why)] = ends(w)
    assert state == "rejected"
    assert "approver bob" in why
    assert "wrong figure" in why


def test_an_aborted_run_cancels_its_request_and_a_late_decision_says_so(
    tmp_path, make_store: Callable[..., Store]
) -> None:
    w = waiting(tmp_path, make_store)
    w.run.abort("not needed any more")
    [(_, state, why)] = ends(w)
    assert (state, why) == ("cancelled", "the run was aborted: not needed any more")
    with pytest.raises(ApprovalError) as late:
        decide(w.store, w.root, w.signers["bob"], w.session_id, w.clock.now)
    assert late.value.code == ErrorCode.APPROVAL_CANCELLED
    assert [e.state for e in ended_events(w)] == ["cancelled"]


def test_an_expired_request_reads_expired_before_anyone_decides_and_is_stored_so(
    tmp_path, make_store: Callable[..., Store]
) -> None:
    # the views read the wall clock: the run starts now, so its request expires in an hour
    w = waiting(tmp_path, make_store, start=datetime.now(UTC))
    decide(w.store, w.root, w.signers["bob"], w.session_id, w.clock.now)
    sessions = SessionStore(w.store, w.root)
    [entry] = project_overview(sessions).stacks[0].entries
    assert not entry.expired

    # past its expires_at (moved back in the store rather than waiting an hour)
    with w.store.write() as tx:
        tx.execute("UPDATE approval_requests SET expires_at = expires_at - 7200")
    [entry] = project_overview(sessions).stacks[0].entries
    assert entry.expired
    assert entry.standing == "1 of 2 approvals (bob)"
    with w.store.read() as tx:
        [row] = [r for r in list_session_rows(tx) if r.session_id == w.session_id]
    assert row.status == EXPIRED_STATUS
    assert ends(w)[0][1] == "None"  # nothing stored yet: it is read as expired

    w.clock.now += timedelta(hours=2)  # the engine's clock passes the request's expires_at
    w.run.abort("too late")
    [(_, state, why)] = ends(w)
    assert state == "expired"
    assert why.startswith("its time passed with 1 of 2 approvals (bob)")
    assert why.endswith("then the run was aborted: too late")
    assert [e.state for e in ended_events(w)] == ["expired"]
    with pytest.raises(ApprovalError) as late:
        decide(w.store, w.root, w.signers["carol"], w.session_id, w.clock.now)
    assert late.value.code == ErrorCode.APPROVAL_EXPIRED  # nothing recorded


def test_deepwork_log_and_status_say_an_open_request_expired(
    tmp_path, make_store: Callable[..., Store]
) -> None:
    # started two hours ago by the engine's clock: its one hour passed by the wall clock
    start = datetime.now(UTC) - timedelta(hours=2)
    w = waiting(tmp_path, make_store, start=start)
    result = CliRunner().invoke(cli, ["log", w.session_id, "--path", str(w.root)])
    assert result.exit_code == 0, result.output
    last = result.output.splitlines()[-1]
    assert last.startswith("(now)")
    assert f"expired at {(start + timedelta(hours=1)).isoformat()}" in last
    result = CliRunner().invoke(cli, ["status", "--path", str(w.root)])
    assert result.exit_code == 0, result.output
    assert "APPROVAL EXPIRED" in result.output
