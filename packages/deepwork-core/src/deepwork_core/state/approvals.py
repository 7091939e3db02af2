"""Human approvals of a step: the request the server opens and the decision a human records.

`.deepwork/tmp/approvals/<session_id>.json` holds the open request of a session (which step, the
prompt, the shown outputs with their SHA-256) and, once a human answered, the decision: approved
or not, the comment, when, through which channel (`cli`: `deepwork approve`; `elicitation`: a form
the MCP client showed; `dashboard`: the buttons of `deepwork dashboard`), who (the OS user and
host, or the client's name and version) and the hashes of the shown outputs at that moment. A
decision counts only while those hashes are the outputs' current ones: an edit after the approval
voids it.

The request is the server's own record of what it asked: when it opens one, the server seals it
(step, prompt, shown paths and hashes) with a MAC under the project's approval key, so an agent's
edit of the file is detected. A request whose seal does not verify is never shown for a decision
nor used (`approval.request_unverified`); the server asks anew. A decision covers the request's
seal, so it binds to exactly that step and those hashes, and counts only while the files' bytes
still have them.

Each decision is sealed with a MAC under the project's approval key
(`deepwork_core.state.approval_seal`) and, where the project requires it, signed by a human
approver's Ed25519 key (`deepwork_core.state.approval_signatures`); it is written together with
its `approval` event. A decision is used only when its seal (or, where signatures are required,
its signature by a trusted approver) verifies and the session's event log holds that event; any
other is refused as `approval.unverified` (a hand-written or edited file, or one from before
seals).

No MCP tool writes these files; see docs/evidence.md and docs/security.md for what that does and
does not protect.
"""

from __future__ import annotations

import contextlib
import json
import secrets
from collections.abc import Iterable, Iterator
from datetime import UTC, datetime
from enum import StrEnum
from pathlib import Path
from typing import Final, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from deepwork_core.base.error_codes import ErrorCode
from deepwork_core.base.errors import DeepWorkError, FileReadError
from deepwork_core.base.fsutil import atomic_write_text, file_lock, read_text_file
from deepwork_core.base.identifiers import check_session_id
from deepwork_core.base.layout import APPROVALS_DIR, APPROVERS_DIR
from deepwork_core.base.runtime_dir import ensure_tmp_dir
from deepwork_core.evidence.hashes import OutputHash, ShownOutput, sha256_file
from deepwork_core.state.approval_seal import ApprovalKey, ApprovalKeyError
from deepwork_core.state.approval_signatures import ApproverSigner, TrustedApprovers
from deepwork_core.state.event_kinds import ApprovalEvent
from deepwork_core.state.events import append_event, read_events

_LOCK: Final = "approvals.lock"
#: An approval file larger than this is refused (`approval.corrupt`); real ones are a few KB.
MAX_APPROVAL_BYTES: Final = 1024 * 1024
#: Binds a request's seal to its purpose and canonical form.
REQUEST_LABEL: Final = "deepwork-approval-request-v1"


class ApprovalError(DeepWorkError):
    """An approval could not be recorded (`approval.*` codes)."""

    code = ErrorCode.APPROVAL_ERROR


class ApprovalChannel(StrEnum):
    CLI = "cli"
    ELICITATION = "elicitation"
    #: The Approve and Reject buttons of `deepwork dashboard` (docs/dashboard.md).
    DASHBOARD = "dashboard"


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ApprovalRequest(_Model):
    request_id: str
    session_id: str
    job_name: str
    workflow_name: str
    step_ids: list[str]
    prompt: str
    shown: list[ShownOutput] = Field(default_factory=list)
    requested_at: datetime
    #: HMAC-SHA256 (hex) of the request under the project's approval key, set by the server that
    #: opened it (`request_fields`); None: unsealed, never shown for a decision nor used.
    mac: str | None = None


class ApprovalDecision(_Model):
    request_id: str
    approved: bool
    comment: str | None = None
    decided_at: datetime
    channel: ApprovalChannel
    #: `user@host` for the CLI and the dashboard, the client's `name version` for elicitation.
    actor: str
    #: The terminal the CLI read from; None when its input was not a terminal.
    terminal: str | None = None
    #: The shown outputs' hashes when the human decided.
    shown: list[ShownOutput] = Field(default_factory=list)
    #: HMAC-SHA256 (hex) of the decision under the project's approval key; None: unsealed.
    mac: str | None = None
    #: The approver whose Ed25519 key signed the decision (`.deepwork/approvers/<signer>.pub`).
    signer: str | None = None
    #: The base64 Ed25519 signature over the same fields as the MAC; None: unsigned.
    signature: str | None = None


class ApprovalRecord(_Model):
    schema_version: Literal[1] = 1
    request: ApprovalRequest
    decision: ApprovalDecision | None = None

    def decision_holds(self, current: Iterable[ShownOutput]) -> bool:
        """True when a decision exists and covers exactly the requested and `current` hashes."""
        if self.decision is None:
            return False
        key = sorted((s.output, s.path, s.sha256 or "") for s in self.request.shown)
        now = sorted((s.output, s.path, s.sha256 or "") for s in current)
        seen = sorted((s.output, s.path, s.sha256 or "") for s in self.decision.shown)
        return key == now == seen


def new_request_id() -> str:
    return secrets.token_urlsafe(12)


def shown_outputs(hashes: Iterable[OutputHash], names: Iterable[str]) -> list[ShownOutput]:
    """The hashed files of the outputs `names` (an approval's `show` list)."""
    wanted = set(names)
    return [
        ShownOutput(output=h.output, path=h.path, sha256=h.sha256)
        for h in hashes
        if h.output in wanted
    ]


def rehash(project_root: Path, shown: Iterable[ShownOutput]) -> list[ShownOutput]:
    return [s.model_copy(update={"sha256": sha256_file(project_root, s.path)}) for s in shown]


class ApprovalStore:
    """The approval files of one project. Safe across processes (one lock for all).

    `key` seals the requests opened and the decisions recorded here and verifies the ones read
    for use; without it requests open and load, but no decision can be recorded or used
    (`approval.key_unavailable`). `trusted` are the approvers whose signatures count (by default
    the project's `.deepwork/approvers/`, on a store of its own); `signer` is the local approver
    who signs the decisions recorded here (the CLI and the dashboard; never the server).
    """

    def __init__(
        self,
        project_root: Path,
        key: ApprovalKey | None = None,
        *,
        trusted: TrustedApprovers | None = None,
        signer: ApproverSigner | None = None,
    ) -> None:
        self.project_root = project_root
        self.folder = project_root / APPROVALS_DIR
        self.key = key
        self.trusted = (
            TrustedApprovers(project_root / APPROVERS_DIR) if trusted is None else trusted
        )
        self.signer = signer

    def path(self, session_id: str) -> Path:
        return self.folder / f"{check_session_id(session_id)}.json"

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        ensure_tmp_dir(self.project_root)
        with file_lock(self.folder / _LOCK):
            yield

    def open_request(self, request: ApprovalRequest) -> ApprovalRecord:
        """Seal and open `request`, replacing any earlier request of the session and its decision.

        Without a key the request is stored unsealed, and no decision on it can ever count.
        """
        if self.key is not None:
            request = request.model_copy(
                update={"mac": self.key.mac(request_fields(request), REQUEST_LABEL)}
            )
        record = ApprovalRecord(request=request)
        with self._locked():
            atomic_write_text(self.path(request.session_id), record.model_dump_json(indent=2))
        return record

    def load(self, session_id: str) -> ApprovalRecord | None:
        path = self.path(session_id)
        try:
            text = read_text_file(path, limit=MAX_APPROVAL_BYTES, follow_symlinks=False)
        except FileReadError as exc:
            if exc.code == ErrorCode.FILE_NOT_FOUND:
                return None
            raise ApprovalError(
                f"{exc.code}: {exc.message}", code=ErrorCode.APPROVAL_CORRUPT
            ) from None
        try:
            return ApprovalRecord.model_validate(json.loads(text))
        except (ValueError, ValidationError) as exc:
            raise ApprovalError(
                f"{path} is not an approval record ({exc.__class__.__name__}); delete it and "
                "call finished_step again",
                code=ErrorCode.APPROVAL_CORRUPT,
            ) from None

    def load_verified(self, session_id: str) -> ApprovalRecord | None:
        """`load`, refusing a request the server did not seal as it is
        (`approval.request_unverified`) and a decision that is not sealed (or signed, where
        signatures are required) and logged (`approval.unverified`)."""
        record = self.load(session_id)
        if record is None:
            return None
        self.check_request(record)
        why = self.why_unverified(session_id, record)
        if why is not None:
            raise ApprovalError(
                f"{self.path(session_id)}: {why}. It was not recorded by `deepwork approve` or "
                "the client's form, or was changed since, so it does not count and the step "
                f"keeps waiting: ask the user to run `deepwork approve {session_id}`",
                code=ErrorCode.APPROVAL_UNVERIFIED,
            )
        return record

    def why_request_unverified(self, record: ApprovalRecord) -> str | None:
        """Why `record`'s request is not the one the server opened; None when it is."""
        mac = record.request.mac
        if mac is None:
            return "the request carries no seal of the server that opened it"
        if not self._key().verifies(request_fields(record.request), mac, REQUEST_LABEL):
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
                f"{self.path(record.request.session_id)}: {why}. Nothing was decided; the agent "
                "must call finished_step again so the server asks anew",
                code=ErrorCode.APPROVAL_REQUEST_UNVERIFIED,
            )

    def why_unverified(self, session_id: str, record: ApprovalRecord) -> str | None:
        """Why the decision of `record` does not count; None when it does (or there is none)."""
        decision = record.decision
        if decision is None:
            return None
        fields = seal_fields(session_id, record.request, decision)
        if self.trusted.required():
            why = self.trusted.why_unsigned(fields, decision.signer, decision.signature)
            if why is not None:
                return why
        elif decision.mac is None:
            return "the decision carries no MAC"
        elif not self._key().verifies(fields, decision.mac):
            return "the decision's MAC does not verify with this project's approval key"
        try:
            events = read_events(self.project_root, session_id)
        except DeepWorkError as exc:
            return f"the session's event log cannot be read ({exc.code}: {exc.message})"
        if not any(_logs(event, decision) for event in events):
            return f"the event log has no approval event of request {decision.request_id!r}"
        return None

    def _key(self) -> ApprovalKey:
        if self.key is None:
            raise ApprovalKeyError(
                "no approval key was given, so decisions can be neither recorded nor verified",
                code=ErrorCode.APPROVAL_KEY_UNAVAILABLE,
            )
        return self.key

    def decide(self, session_id: str, decision: ApprovalDecision) -> ApprovalRecord:
        """Seal and record the human's decision on the open request, with its `approval` event.

        A request is decided once; a decision already there that does not verify (a forgery,
        or one from before seals) is replaced. Raises `approval.none_pending`,
        `approval.already_decided` or `approval.request_changed` (the request was replaced since
        the human saw it).
        """
        with self._locked():
            record = self.load(session_id)
            if record is None:
                raise ApprovalError(
                    f"session {session_id!r} has no approval waiting",
                    code=ErrorCode.APPROVAL_NONE_PENDING,
                )
            if record.request.request_id != decision.request_id:
                raise ApprovalError(
                    "the approval request was replaced by a newer one; look at it again",
                    code=ErrorCode.APPROVAL_REQUEST_CHANGED,
                )
            if record.decision is not None and self.why_unverified(session_id, record) is None:
                raise ApprovalError(
                    f"this request was already {_verb(record.decision)} "
                    f"at {record.decision.decided_at.isoformat()}",
                    code=ErrorCode.APPROVAL_ALREADY_DECIDED,
                )
            decision = self._sealed(session_id, record.request, decision)
            record = record.model_copy(update={"decision": decision})
            # The record first: a crash between the two leaves a record without its event,
            # which is refused (and can be decided again), never an approval nobody logged.
            atomic_write_text(self.path(session_id), record.model_dump_json(indent=2))
            append_event(self.project_root, approval_event(session_id, record.request, decision))
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
        decision = decision.model_copy(update=update)
        fields = seal_fields(session_id, request, decision)
        if self.signer is not None:
            update["signature"] = self.signer.sign(fields)
        if not self.trusted.shared:
            update["mac"] = self._key().mac(fields)
        return decision.model_copy(update=update)

    def clear(self, session_id: str) -> None:
        with self._locked(), contextlib.suppress(FileNotFoundError):
            self.path(session_id).unlink()


def record_decision(
    store: ApprovalStore,
    session_id: str,
    *,
    approved: bool,
    comment: str | None,
    channel: ApprovalChannel,
    actor: str,
    terminal: str | None,
    now: datetime,
    request_id: str | None = None,
) -> ApprovalRecord:
    """Decide the open request of `session_id`, bound to the shown outputs' current hashes
    (on a shared store: to the request's hashes, which the serving machine compares with its
    files' bytes before it uses the decision).

    `request_id` pins the request the human looked at (None: the open one). Raises
    `approval.outputs_changed` when a shown output changed since the request was opened: the
    human would approve bytes the reviewers never saw.
    """
    record = store.load(session_id)
    if record is None:
        raise ApprovalError(
            f"session {session_id!r} has no approval waiting (none was asked, or the run was "
            "aborted or moved on)",
            code=ErrorCode.APPROVAL_NONE_PENDING,
        )
    if store.trusted.shared:
        # Decided from any machine: the request's seal and the files' bytes are the serving
        # machine's to check when it uses the decision; this checkout may hold other bytes.
        current = list(record.request.shown)
    else:
        store.check_request(record)
        current = rehash(store.project_root, record.request.shown)
    if current != record.request.shown:
        changed = ", ".join(
            s.path for s, c in zip(record.request.shown, current, strict=True) if s != c
        )
        raise ApprovalError(
            f"shown output(s) changed since the approval was requested: {changed}; the agent "
            "must call finished_step again so the new content is reviewed first",
            code=ErrorCode.APPROVAL_OUTPUTS_CHANGED,
        )
    decision = ApprovalDecision(
        request_id=request_id or record.request.request_id,
        approved=approved,
        comment=comment,
        decided_at=now,
        channel=channel,
        actor=actor,
        terminal=terminal,
        shown=current,
    )
    return store.decide(session_id, decision)


def approval_event(
    session_id: str, request: ApprovalRequest, decision: ApprovalDecision
) -> ApprovalEvent:
    """The `approval` event of `decision` on `request`, stamped when the human decided."""
    return ApprovalEvent(
        ts=decision.decided_at,
        session_id=session_id,
        step_ids=list(request.step_ids),
        request_id=request.request_id,
        approved=decision.approved,
        comment=decision.comment,
        channel=decision.channel.value,
        actor=decision.actor,
        terminal=decision.terminal,
        decided_at=decision.decided_at,
        shown=list(decision.shown),
    )


def request_fields(request: ApprovalRequest) -> dict[str, object]:
    """What a request's seal covers, as JSON values (docs/security.md)."""
    return {
        "session_id": request.session_id,
        "request_id": request.request_id,
        "job_name": request.job_name,
        "workflow_name": request.workflow_name,
        "step_ids": list(request.step_ids),
        "prompt": request.prompt,
        "shown": [[s.output, s.path, s.sha256] for s in request.shown],
        "requested_at": _utc(request.requested_at),
    }


def seal_fields(
    session_id: str, request: ApprovalRequest, decision: ApprovalDecision
) -> dict[str, object]:
    """What a decision's MAC and signature cover, as JSON values (docs/security.md): the
    decision, and the request's seal, so it binds to exactly the request the server opened."""
    shown = [[s.output, s.path, s.sha256] for s in decision.shown]
    return {
        "request_mac": request.mac,
        "signer": decision.signer,
        "session_id": session_id,
        "request_id": decision.request_id,
        "step_ids": list(request.step_ids),
        "shown": shown,
        "approved": decision.approved,
        "comment": decision.comment,
        "channel": decision.channel.value,
        "actor": decision.actor,
        "terminal": decision.terminal,
        "decided_at": _utc(decision.decided_at),
    }


def _utc(moment: datetime) -> str:
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC).isoformat()


def _logs(event: object, decision: ApprovalDecision) -> bool:
    """True when `event` is the `approval` event of `decision`."""
    return (
        isinstance(event, ApprovalEvent)
        and event.request_id == decision.request_id
        and event.approved == decision.approved
        and event.channel == decision.channel.value
        and event.decided_at == decision.decided_at
    )


def _verb(decision: ApprovalDecision) -> str:
    return "approved" if decision.approved else "rejected"
