"""The approvals of one project in its store: opening requests, reading them back verified,
recording decisions with their `approval` event, closing requests (docs/security.md)."""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path

from pydantic import ValidationError

from deepwork_core.base.error_codes import ErrorCode
from deepwork_core.base.errors import DeepWorkError
from deepwork_core.base.identifiers import SessionId
from deepwork_core.state.approvals.ending import EndState, expired_end
from deepwork_core.state.approvals.event import approval_event, logs
from deepwork_core.state.approvals.models import (
    ApprovalChannel,
    ApprovalDecision,
    ApprovalError,
    ApprovalRecord,
    ApprovalRequest,
)
from deepwork_core.state.approvals.policy import RequestPolicy, standing, why_not_counted
from deepwork_core.state.approvals.seal import (
    ADOPTED_LABEL,
    REQUEST_LABEL,
    ApprovalKey,
    ApprovalKeyError,
    adopted_fields,
    request_fields,
    seal_fields,
)
from deepwork_core.state.approvals.signatures import ApproverSigner, Refusal, TrustedApprovers
from deepwork_core.state.event_kinds import ApprovalEndedEvent, parse_line
from deepwork_core.state.events import append_event
from deepwork_core.state.store.port import ProjectRef, Store
from deepwork_core.state.store.tables import approval_rows as rows
from deepwork_core.state.store.tables import shown_bytes


class ApprovalStore:
    """The approvals of one project, in its open `store`
    (`deepwork_core.state.store.tables.approval_rows`).

    `key` seals the requests opened and the decisions recorded here and verifies the ones read
    (without it no decision can be recorded or used: `approval.key_unavailable`); `trusted`: the
    approvers whose signatures count; `signer`: the local approver who signs the decisions
    recorded here (the CLI and the dashboard; never the server). `project_id` names another
    project of the same store (a checkout deciding on a run another one serves).
    """

    def __init__(
        self,
        store: Store,
        project_root: Path,
        key: ApprovalKey | None = None,
        *,
        trusted: TrustedApprovers | None = None,
        signer: ApproverSigner | None = None,
        project_id: str | None = None,
    ) -> None:
        self.store = store
        self.project_root = project_root
        self.key = key
        self.trusted = TrustedApprovers(project_root) if trusted is None else trusted
        self.signer = signer
        self._project_id = project_id

    @property
    def project_id(self) -> str:
        return self._project_id or self.store.project.project_id

    def where(self, session_id: str) -> str:
        """How messages name the approval of `session_id`."""
        return f"the approval of session {session_id} in store {self.store.display}"

    def _lock(self) -> str:
        return f"deepwork.state:{self.project_id}"

    def open_request(self, request: ApprovalRequest) -> ApprovalRecord:
        """Seal and open `request`, replacing any earlier request of the session and its decision.

        Without a key the request is stored unsealed, and no decision on it can ever count.
        """
        if self.key is not None:
            request = request.model_copy(
                update={"mac": self.key.mac(request_fields(request), REQUEST_LABEL)}
            )
        channels = [ApprovalChannel.CLI, ApprovalChannel.DASHBOARD]
        policy = request.policy
        if not (self.trusted.required() or (policy is not None and policy.needs_signatures)):
            channels.append(ApprovalChannel.ELICITATION)
        row = rows.RequestRow(
            session_id=request.session_id,
            request_id=request.request_id,
            job=request.job_name,
            workflow=request.workflow_name,
            step_ids=json.dumps(request.step_ids),
            shown=json.dumps([s.model_dump(mode="json") for s in request.shown]),
            channels=" ".join(channels),
            mac=request.mac,
            requested_at=request.requested_at.timestamp(),
            body=request.model_dump_json(),
            required=1 if policy is None else policy.required,
            expires_at=None if policy is None or policy.expires_at is None
            else policy.expires_at.timestamp(),
        )  # fmt: skip
        store = self.store
        files = shown_bytes.capture(self.project_root, request.shown)
        with store.write(lock=self._lock()) as tx:
            rows.open_request(tx, self.project_id, row, store.now())
            shown_bytes.save(tx, self.project_id, row.session_id, row.request_id, files)
        return ApprovalRecord(request=request)

    def check_bytes_travelled(self, request: ApprovalRequest) -> None:
        """Raise `approval.bytes_not_stored` when `request` is another project's (decided away
        from the checkout that serves it) and the store lacks a byte of its shown files."""
        if self.project_id != self.store.project.project_id:
            with self.store.read() as tx:
                why = shown_bytes.why_not_travelled(tx, self.project_id, request)
            if why is not None:
                raise ApprovalError(why, code=ErrorCode.APPROVAL_BYTES_NOT_STORED)

    def load(self, session_id: SessionId) -> ApprovalRecord | None:
        """The session's open request with its decisions (None: none open), unverified."""
        with self.store.read() as tx:
            found = rows.open_record(tx, self.project_id, session_id)
        if found is None:
            return None
        request, bodies = found
        try:
            decisions = [ApprovalDecision.model_validate_json(body) for body in bodies]
            return ApprovalRecord(
                request=ApprovalRequest.model_validate_json(request),
                decision=decisions[-1] if decisions else None,
                decisions=decisions,
            )
        except ValidationError as exc:
            raise ApprovalError(
                f"{self.where(session_id)} is not an approval record "
                f"({exc.error_count()} problems); the agent must call finished_step again",
                code=ErrorCode.APPROVAL_CORRUPT,
            ) from None

    def load_verified(self, session_id: SessionId) -> ApprovalRecord | None:
        """`load`, refusing a request the server did not seal as it is
        (`approval.request_unverified`) and a decision that is not sealed (or signed, where
        signatures are required) and logged (`approval.unverified`)."""
        record = self.load(session_id)
        if record is None:
            return None
        self.check_request(record)
        verified: list[ApprovalDecision] = []
        refusal: Refusal | None = None
        for decision in record.decisions:
            why = self.refusal_of(session_id, record, decision)
            if why is None:
                verified.append(decision)
            refusal = refusal or why
        settled = standing(record.request.policy, verified).concluding
        if settled is None and refusal is not None:
            raise ApprovalError(
                f"{self.where(session_id)}: {refusal.why}. It was not recorded by `deepwork "
                "approve`, the dashboard or the client's form by a trusted approver, or was "
                "changed since, so it does not count and the step keeps waiting: ask the user to "
                f"run `deepwork approve {session_id}`",
                code=refusal.code,
            )
        concluding = None if settled is None else verified[settled]
        return record.model_copy(update={"decision": concluding, "decisions": verified})

    def why_request_unverified(self, record: ApprovalRecord) -> str | None:
        """Why `record`'s request is not the one the server opened; None when it is."""
        mac = record.request.mac
        if mac is None:
            return "the request carries no seal of the server that opened it"
        adopted = record.request.adopted_mac
        if adopted is not None:
            fields, mac, label = adopted_fields(record.request), adopted, ADOPTED_LABEL
        else:
            fields, label = request_fields(record.request), REQUEST_LABEL
        if not self._key().verifies(fields, mac, label):
            return (
                "the request's seal does not verify: it was changed after the server opened it, "
                "or the approval key was replaced since"
            )
        return None

    def check_request(self, record: ApprovalRecord) -> None:
        """Raise `approval.request_unverified` unless `record`'s request is the server's own."""
        why = self.why_request_unverified(record)
        if why is not None:
            raise ApprovalError(
                f"{self.where(record.request.session_id)}: {why}. Nothing was decided; the "
                "agent must call finished_step again so the server asks anew",
                code=ErrorCode.APPROVAL_REQUEST_UNVERIFIED,
            )

    def why_unverified(self, session_id: str, record: ApprovalRecord) -> str | None:
        """Why the decision of `record` does not count; None when it does (or there is none)."""
        refusal = self.refusal(session_id, record)
        return None if refusal is None else refusal.why

    def refusal(self, session_id: str, record: ApprovalRecord) -> Refusal | None:
        """Why the decision of `record` does not count, with its code; None when it does."""
        decision = record.decision
        return None if decision is None else self.refusal_of(session_id, record, decision)

    def refusal_of(
        self, session_id: str, record: ApprovalRecord, decision: ApprovalDecision
    ) -> Refusal | None:
        """Why `decision` on `record`'s request is not the genuine one it claims to be, with
        its code; None when it is (whether its policy counts it is `policy.why_not_counted`)."""
        fields = seal_fields(session_id, record.request, decision)
        unverified = ErrorCode.APPROVAL_UNVERIFIED
        policy = record.request.policy
        if self.trusted.required() or (policy is not None and policy.needs_signatures):
            refusal = self.trusted.why_unsigned(fields, decision.signer, decision.signature)
            if refusal is not None:
                return refusal
        elif decision.mac is None:
            return Refusal(unverified, "the decision carries no MAC")
        elif not self._key().verifies(fields, decision.mac):
            return Refusal(
                unverified, "the decision's MAC does not verify with this project's approval key"
            )
        try:
            with self.store.read() as tx:
                lines = rows.approval_event_lines(tx, self.project_id, session_id)
            events = [parse_line(line, f"session {session_id}") for line in lines]
        except DeepWorkError as exc:
            why = f"the session's event log cannot be read ({exc.code}: {exc.message})"
            return Refusal(unverified, why)
        if not any(logs(event, decision) for event in events):
            why = f"the event log has no approval event of request {decision.request_id!r}"
            return Refusal(unverified, why)
        return None

    def _key(self) -> ApprovalKey:
        if self.key is None:
            raise ApprovalKeyError(
                "no approval key was given, so decisions can be neither recorded nor verified",
                code=ErrorCode.APPROVAL_KEY_UNAVAILABLE,
            )
        return self.key

    def decide(self, session_id: SessionId, decision: ApprovalDecision) -> ApprovalRecord:
        """Seal and record the human's decision on the open request, with its `approval` event
        (one transaction: both or neither).

        A request is decided once; a decision already there that does not verify (a forgery,
        or one from before seals) is replaced. Raises `approval.none_pending`,
        `approval.already_decided` or `approval.request_changed` (the request was replaced since
        the human saw it).
        """
        with self.store.write(lock=self._lock()) as tx:
            record = self.load(session_id)
            if record is None:
                raise self.nothing_open(session_id)
            if record.request.request_id != decision.request_id:
                raise ApprovalError(
                    "the approval request was replaced by a newer one; look at it again",
                    code=ErrorCode.APPROVAL_REQUEST_CHANGED,
                )
            policy = record.request.policy
            if policy is not None and policy.expired(decision.decided_at):
                raise expired(session_id, policy)
            verified = [
                d for d in record.decisions if self.refusal_of(session_id, record, d) is None
            ]
            decision = self._sealed(session_id, record.request, decision)
            _check_counts(policy, verified, decision)
            seat = "" if policy is None else policy.seat(decision.signer)
            kept = [d for d in record.decisions if _seat(policy, d) != seat]
            record = record.model_copy(
                update={"decision": decision, "decisions": [*kept, decision]}
            )
            row = _decision_row(session_id, decision, seat)
            rows.save_decision(tx, self.project_id, row)
            counted = [*(d for d in verified if _seat(policy, d) != seat), decision]
            several = policy is not None and policy.required > 1
            now = standing(policy, counted).text() if several else None
            append_event(
                self.store,
                approval_event(session_id, record.request, decision, now),
                project_id=self._project_id,
            )
        return record

    def _sealed(
        self, session_id: str, request: ApprovalRequest, decision: ApprovalDecision
    ) -> ApprovalDecision:
        """`decision` signed by the local approver (when there is one) and sealed with the
        project's key (unless the store is shared: that key belongs to the serving machine)."""
        update: dict[str, object] = {}
        if self.signer is not None:
            self.trusted.check_signer(self.signer)
            update["signer"] = self.signer.name
        elif self.trusted.required():
            raise ApprovalError(
                "this project counts only decisions signed by a trusted approver "
                f"({self.trusted.folder}/<name>.pub), and no approver's key is set up here: run "
                "`deepwork approver init`, commit the .pub file it writes, and decide again",
                code=ErrorCode.APPROVAL_UNVERIFIED,
            )
        elif request.policy is not None and request.policy.needs_signatures:
            raise ApprovalError(
                "this step's approval policy counts only decisions signed by a trusted "
                "approver, and no approver's key is set up here: run `deepwork approver init`, "
                "have the .pub file it writes merged into the base branch, and decide again",
                code=ErrorCode.APPROVAL_UNVERIFIED,
            )
        decision = decision.model_copy(update=update)
        fields = seal_fields(session_id, request, decision)
        if self.signer is not None:
            update["signature"] = self.signer.sign(fields)
        if not self.trusted.shared:
            update["mac"] = self._key().mac(fields)
        return decision.model_copy(update=update)

    def nothing_open(self, session_id: str) -> ApprovalError:
        """Why there is no open request of `session_id` to decide: it was cancelled (the run was
        aborted or moved back: `approval.cancelled`), it expired (`approval.expired`), or none
        waits (`approval.none_pending`)."""
        with self.store.read() as tx:
            last = rows.last_state(tx, self.project_id, session_id)
        end = None if last is None else last.end_state
        if end == EndState.CANCELLED or (last is not None and last.state == rows.WITHDRAWN):
            why = f": {last.end_reason}" if last is not None and last.end_reason else ""
            return ApprovalError(
                f"the approval request of session {session_id!r} was cancelled (the run was "
                f"aborted or moved back{why}): nothing was recorded",
                code=ErrorCode.APPROVAL_CANCELLED,
            )
        if end == EndState.EXPIRED:
            return ApprovalError(
                f"the approval request of session {session_id!r} expired "
                f"({last.end_reason if last is not None else ''}): nothing was recorded",
                code=ErrorCode.APPROVAL_EXPIRED,
            )
        return nothing_to_decide(session_id)

    def clear(self, session_id: SessionId, end: EndState, why: str, now: datetime) -> None:
        """Close the session's open request at `now`, storing how it ended (`end`, `why`) and
        logging an `approval_ended` event in the same transaction. A request cancelled or
        failed after its time passed, with too few approvals, is stored as expired."""
        with self.store.write(lock=self._lock()) as tx:
            record = self.load(session_id)
            if record is None:
                return
            if end in (EndState.CANCELLED, EndState.FAILED):
                ran_out = expired_end(record.request.policy, record.standing(), now)
                if ran_out is not None:
                    passed = ran_out.at.isoformat()
                    end, why = EndState.EXPIRED, f"{ran_out.why} (at {passed}); then {why}"
            state = rows.WITHDRAWN if end is EndState.CANCELLED else rows.CLOSED
            ending = rows.Ending(state, end.value, why)
            rows.close_requests(tx, self.project_id, session_id, ending, now.timestamp())
            request = record.request
            event = ApprovalEndedEvent(
                ts=now,
                session_id=session_id,
                step_ids=list(request.step_ids),
                request_id=request.request_id,
                state=end.value,
                why=why,
            )
            append_event(self.store, event, project_id=self._project_id)


def _check_counts(
    policy: RequestPolicy | None, verified: list[ApprovalDecision], decision: ApprovalDecision
) -> None:
    """Refuse `decision` when the request is settled already (`approval.already_decided`: by
    the `verified` decisions, or by this signer before) or its policy does not let it count
    (`approval.not_eligible`)."""
    now = standing(policy, verified)
    if now.concluding is not None:
        settled = verified[now.concluding]
        raise ApprovalError(
            f"this request was already {_verb(settled)} at {settled.decided_at.isoformat()}",
            code=ErrorCode.APPROVAL_ALREADY_DECIDED,
        )
    why = why_not_counted(policy, decision.signer, decision.email)
    if why is not None:
        raise ApprovalError(
            f"{why}: your decision would not count, so nothing was recorded",
            code=ErrorCode.APPROVAL_NOT_ELIGIBLE,
        )
    seat = "" if policy is None else policy.seat(decision.signer)
    if seat and any(_seat(policy, d) == seat for d in verified):
        raise ApprovalError(
            f"approver {decision.signer!r} already decided this request ({now.text()}); "
            "another approver must decide",
            code=ErrorCode.APPROVAL_ALREADY_DECIDED,
        )


def _seat(policy: RequestPolicy | None, decision: ApprovalDecision) -> str:
    return "" if policy is None else policy.seat(decision.signer)


def expired(session_id: str, policy: RequestPolicy) -> ApprovalError:
    """`approval.expired` for the request of `session_id`."""
    at = policy.expires_at.isoformat() if policy.expires_at is not None else "its time"
    return ApprovalError(
        f"the approval request of session {session_id!r} expired at {at} before enough "
        "approvers approved: nothing completes and no decision is recorded; the agent calls "
        "go_to_step to redo the step and ask anew, or abort_workflow",
        code=ErrorCode.APPROVAL_EXPIRED,
    )


def _decision_row(session_id: str, decision: ApprovalDecision, seat: str) -> rows.DecisionRow:
    return rows.DecisionRow(
        session_id=session_id,
        request_id=decision.request_id,
        seat=seat,
        approved=decision.approved,
        channel=decision.channel.value,
        actor=decision.actor,
        signer=decision.signer,
        signature=decision.signature,
        mac=decision.mac,
        decided_at=decision.decided_at.timestamp(),
        body=decision.model_dump_json(),
    )


def serving_project(store: Store, session_id: str, *, shared: bool) -> ProjectRef | None:
    """The project whose server waits on the open approval of `session_id`: the one `store` was
    opened for when it does; on a `shared` store, whichever project of it does (a checkout
    deciding on a run another one serves, docs/team.md); None when none waits."""
    here = store.project
    with store.read() as tx:
        waiting = rows.projects_waiting(tx, session_id)
    if any(project_id == here.project_id for project_id, _, _ in waiting):
        return here
    if not (shared and waiting):
        return None
    project_id, root, machine = waiting[0]
    return ProjectRef(project_id=project_id, root=root, machine=machine)


def nothing_to_decide(session_id: str) -> ApprovalError:
    """`approval.none_pending` for a decision on `session_id` (also what a root answers for a
    project that has no store yet)."""
    return ApprovalError(
        f"session {session_id!r} has no approval waiting (none was asked, or the run was "
        "aborted or moved on)",
        code=ErrorCode.APPROVAL_NONE_PENDING,
    )


def _verb(decision: ApprovalDecision) -> str:
    return "approved" if decision.approved else "rejected"
