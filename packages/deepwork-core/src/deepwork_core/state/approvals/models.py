"""The approval request the server opens, the decision a human records and their record.

What each field means and what the seals cover: docs/security.md ("Approvals").
"""

from __future__ import annotations

import secrets
from collections.abc import Iterable
from datetime import datetime
from enum import StrEnum
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from deepwork_core.base.error_codes import ErrorCode
from deepwork_core.base.errors import DeepWorkError
from deepwork_core.base.identifiers import SessionId
from deepwork_core.evidence.hashes import OutputHash, ShownOutput


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
    session_id: SessionId
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
