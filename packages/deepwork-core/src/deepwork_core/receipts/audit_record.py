"""The audit record of a run's approvals (docs/team.md, "An audit record"): `deepwork audit
export` writes it, `deepwork audit verify` checks it offline.

The record is one JSON document: the run's session and its nested ones, each approval request
with the paths and hashes it showed (and how much of each the store kept), each decision with
its signer, signature and time, and what the decision caused (the events that followed it). It
is signed with the exporting machine's gate key (`receipts.keys.GateKey`) over the body in its
canonical form, and written in that canonical form, so any edited byte is found: a byte outside
the canonical form (`audit.edited`), inside the body (`audit.signature_invalid`), or in a
decision (`audit.decision_unverified`, its approver's own signature). A request appears once,
with every decision on it (`decisions`, oldest first: both signers of a 2-of-3 request) and
the one that settled it (`decision`). The check needs only the
file and the public keys committed on the base ref: no store, no network.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any, Final

from deepwork_core.base.fsutil import loads_json
from deepwork_core.base.layout import APPROVERS_DIR, GATE_KEYS_DIR
from deepwork_core.evidence.hashes import ShownOutput
from deepwork_core.receipts.checks import trusted_key
from deepwork_core.receipts.codes import ReceiptCode
from deepwork_core.receipts.findings import Finding
from deepwork_core.receipts.keys import GateKey, signature_holds
from deepwork_core.receipts.repository import Repository
from deepwork_core.state.approvals import signatures as approval_signatures
from deepwork_core.state.approvals.ending import EndState, read_end
from deepwork_core.state.approvals.models import ApprovalDecision, ApprovalRequest
from deepwork_core.state.approvals.policy import standing
from deepwork_core.state.approvals.seal import seal_fields
from deepwork_core.state.store.port import Store, Tx
from deepwork_core.state.store.tables import approval_rows, shown_bytes
from deepwork_core.state.store.tables.session_lists import run_session_ids

FORMAT: Final = "deepwork-audit-v1"
#: Binds the gate's signature to an audit record's body.
AUDIT_LABEL: Final = "deepwork-audit-signature-v1"
#: The events a decision can cause, as the record lists them after it.
_CAUSED: Final = ("approval", "step_finished", "step_begun", "completed", "aborted", "go_to_step")
_SCOPE: Final = ("approval_requested", *_CAUSED)
#: How many events after a decision the record lists as what it caused.
_MAX_CAUSED: Final = 10


def canonical_text(document: dict[str, Any]) -> str:
    """The one form an audit record is written in: sorted keys, no spaces, ASCII, a newline."""
    return json.dumps(document, sort_keys=True, separators=(",", ":"), ensure_ascii=True) + "\n"


def export_record(store: Store, run_id: str, gate: GateKey, now: datetime) -> str:
    """The signed audit record of run `run_id` (with its nested sessions) of the store's
    project, as the text of its file."""
    project_id = store.project.project_id
    with store.read() as tx:
        project = approval_rows.project_of(tx, project_id)
        session_ids = run_session_ids(tx, project_id, run_id)
        sessions = [_session(tx, project_id, sid, now) for sid in session_ids]
    body: dict[str, Any] = {
        "format": FORMAT,
        "run_id": run_id,
        "project": {
            "project_id": project_id,
            "root": None if project is None else project[0],
            "machine": None if project is None else project[1],
        },
        "exported_at": now.astimezone(UTC).isoformat(),
        "sessions": sessions,
    }
    signature = {"key": gate.name, "ed25519": gate.sign(body, AUDIT_LABEL)}
    return canonical_text({"body": body, "signature": signature})


def _session(tx: Tx, project_id: str, session_id: str, now: datetime) -> dict[str, Any]:
    events = [
        loads_json(line)
        for _, line in approval_rows.event_kinds_after(tx, project_id, session_id, _SCOPE)
    ]
    requests = []
    for found in approval_rows.session_history(tx, project_id, session_id):
        request = ApprovalRequest.model_validate_json(found.request)
        kept = shown_bytes.load(tx, project_id, request.request_id, request.shown)
        decisions = [loads_json(body) for body in found.decisions]
        requests.append(
            {
                "request": request.model_dump(mode="json"),
                "state": found.state,
                "kept": [{"path": k.path, "size": k.size, "kept": k.kept.value} for k in kept],
                "decision": _settling(request, found.decisions),
                "decisions": decisions,
                "end": _end(request, found, now),
                "caused": _caused(events, request.request_id),
            }
        )
    return {"session_id": session_id, "requests": requests}


def _end(
    request: ApprovalRequest, found: approval_rows.RequestHistory, now: datetime
) -> dict[str, Any] | None:
    """How `request` ended (as stored; an open one whose time passed, as computed at `now`);
    None while it waits."""
    decisions = [ApprovalDecision.model_validate_json(body) for body in found.decisions]
    so_far = standing(request.policy, decisions)
    end = read_end(found.end_state, found.closed_at, found.end_reason, request.policy, so_far, now)
    if end is None:
        return None
    return {
        "state": end.state.value,
        "at": end.at.astimezone(UTC).isoformat(),
        "why": end.why,
        "computed": end.computed,
    }


def _settling(request: ApprovalRequest, bodies: list[str]) -> Any:
    """The decision that settled `request` under its policy (the latest while none did)."""
    if not bodies:
        return None
    decisions = [ApprovalDecision.model_validate_json(body) for body in bodies]
    concluding = standing(request.policy, decisions).concluding
    return loads_json(bodies[-1 if concluding is None else concluding])


def _caused(events: list[Any], request_id: str) -> list[dict[str, Any]]:
    """The events after the `approval` event of `request_id`, up to the next request."""
    caused: list[dict[str, Any]] = []
    after = False
    for event in events:
        if not isinstance(event, dict):
            continue
        kind = event.get("event")
        if after and kind == "approval_requested":
            break
        if after:
            caused.append({"event": kind, "ts": event.get("ts"), "step_ids": event.get("step_ids")})
        after = after or (kind == "approval" and event.get("request_id") == request_id)
    return caused[:_MAX_CAUSED]


def verify_record(raw: bytes, repo: Repository) -> list[Finding]:
    """What is wrong with the audit record `raw`, checked against the keys committed on
    `repo`'s base ref; [] when it holds."""
    try:
        document = loads_json(raw)
        body, signature = document["body"], document["signature"]
        key, signed = str(signature["key"]), str(signature["ed25519"])
        if body["format"] != FORMAT:
            raise ValueError(f"format {body['format']!r}")
        sessions = list(body["sessions"])
    except (ValueError, TypeError, KeyError) as exc:
        return [_found(ReceiptCode.AUDIT_MALFORMED, f"not an audit record ({exc})")]
    findings = []
    if raw.decode("utf-8", "replace") != canonical_text(document):
        findings.append(
            _found(ReceiptCode.AUDIT_EDITED, "the file is not as `deepwork audit export` wrote it")
        )
    public = trusted_key(repo, GATE_KEYS_DIR, key)
    if isinstance(public, ReceiptCode):
        findings.append(
            _found(
                ReceiptCode.AUDIT_UNTRUSTED_KEY,
                f"the gate key {key!r} is not committed on the base ref ({GATE_KEYS_DIR}/)",
            )
        )
    elif not signature_holds(public, body, AUDIT_LABEL, signed):
        findings.append(
            _found(
                ReceiptCode.AUDIT_SIGNATURE_INVALID,
                f"the signature of gate key {key!r} does not verify: a byte of the record changed",
            )
        )
    for session in sessions:
        findings += _decisions(repo, session)
    return findings


def _decisions(repo: Repository, session: Any) -> list[Finding]:
    """What is wrong with the decisions of one session of the record."""
    findings = []
    try:
        session_id = str(session["session_id"])
        entries = [
            (e["request"], raw)
            for e in session["requests"]
            for raw in _each_decision(e["decision"], e["decisions"])
        ]
    except (TypeError, KeyError, ValueError) as exc:
        return [_found(ReceiptCode.AUDIT_MALFORMED, f"a session is not as exported ({exc})")]
    for entry in session["requests"]:
        findings += _end_fault(repo, session_id, entry)
    for raw_request, raw_decision in entries:
        try:
            request = ApprovalRequest.model_validate(raw_request)
            decision = ApprovalDecision.model_validate(raw_decision)
        except ValueError as exc:
            findings.append(_found(ReceiptCode.AUDIT_MALFORMED, f"a request or decision: {exc}"))
            continue
        where = f"decision on request {request.request_id} of session {session_id}"
        if _keys(decision.shown) != _keys(request.shown):
            findings.append(
                _found(ReceiptCode.AUDIT_HASHES_DISAGREE, f"{where} binds other files or hashes")
            )
        why = _signature_fault(repo, session_id, request, decision)
        if why is not None:
            findings.append(_found(ReceiptCode.AUDIT_DECISION_UNVERIFIED, f"{where}: {why}"))
    return findings


def _end_fault(repo: Repository, session_id: str, entry: Any) -> list[Finding]:
    """What is wrong with how one request of the record ended, against its verified decisions
    and its policy; [] when it is supported (or the request is still open)."""
    try:
        end = entry.get("end")
        if end is None:
            return []
        request = ApprovalRequest.model_validate(entry["request"])
        state, at = EndState(end["state"]), datetime.fromisoformat(str(end["at"]))
        decisions = [ApprovalDecision.model_validate(raw) for raw in entry["decisions"]]
    except (ValueError, TypeError, KeyError) as exc:
        return [_found(ReceiptCode.AUDIT_END_UNSUPPORTED, f"an end is not as exported ({exc})")]
    held = [
        d
        for d in decisions
        if _keys(d.shown) == _keys(request.shown)
        and _signature_fault(repo, session_id, request, d) is None
    ]
    so_far = standing(request.policy, held)
    policy = request.policy
    why = None
    if state is EndState.APPROVED and (so_far.concluding is None or so_far.rejection is not None):
        why = f"it reads approved with {so_far.text()} that verify"
    elif state is EndState.REJECTED and so_far.rejection is None:
        why = "it reads rejected and no verified decision rejects it"
    elif state is EndState.EXPIRED and (
        policy is None or policy.expires_at is None or at < policy.expires_at
    ):
        why = "it reads expired before its expires_at (or it has none)"
    elif state is EndState.EXPIRED and so_far.concluding is not None:
        why = f"it reads expired although its decisions settled it ({so_far.text()})"
    if why is None:
        return []
    where = f"request {request.request_id} of session {session_id}"
    return [_found(ReceiptCode.AUDIT_END_UNSUPPORTED, f"{where}: {why}")]


def _each_decision(settling: Any, decisions: Any) -> list[Any]:
    """Every decision of a request's entry, each checked once (the one that settled it is
    checked on its own when it differs from all of them: an edited copy)."""
    if not isinstance(decisions, list):
        raise ValueError("its decisions are not a list")
    if settling is not None and settling not in decisions:
        return [*decisions, settling]
    return decisions


def _signature_fault(
    repo: Repository, session_id: str, request: ApprovalRequest, decision: ApprovalDecision
) -> str | None:
    if decision.signer is None or decision.signature is None:
        return None  # a decision of a project without approvers: the gate's signature covers it
    public = trusted_key(repo, APPROVERS_DIR, decision.signer)
    if isinstance(public, ReceiptCode):
        return f"its signer {decision.signer!r} is not an approver committed on the base ref"
    fields = seal_fields(session_id, request, decision)
    label = approval_signatures.SIGNATURE_LABEL
    if not signature_holds(public, fields, label, decision.signature):
        return f"the signature does not verify with {decision.signer!r}'s key"
    return None


def _keys(shown: list[ShownOutput]) -> list[tuple[str, str, str]]:
    return sorted((s.output, s.path, s.sha256 or "") for s in shown)


def _found(code: ReceiptCode, message: str) -> Finding:
    return Finding(code=code, message=message)
