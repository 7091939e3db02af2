"""The receipt of a completed run, as `.deepwork/receipts/<job>/<session>.json` holds it
(docs/verify.md, "The receipt").

A receipt is one JSON document in canonical form (`canonical_bytes`: sorted keys, no spaces,
ASCII only, one trailing newline), so the same receipt is always the same bytes. Its `body` says
what the run was and how each step passed; `signature` is the gate key's Ed25519 signature over
the body; `countersignatures` are added by `deepwork verify --rereview` in CI, each over the body
and the gate's signature. Every model forbids unknown keys: a receipt a newer DeepWork wrote, or
one edited by hand into another shape, is malformed, never half read.
"""

from __future__ import annotations

import hashlib
import json
from typing import Final, Literal

from pydantic import BaseModel, ConfigDict, Field, JsonValue

from deepwork_core.base.layout import RECEIPTS_DIR
from deepwork_core.evidence.verdicts import unset
from deepwork_core.state.session_model import DefinitionRoot as DefinitionRoot

#: The `format` of every receipt this version writes and reads.
RECEIPT_FORMAT: Final = "deepwork-receipt/1"
#: The largest receipt `deepwork verify` reads (docs/limits.md); real ones are a few KiB.
MAX_RECEIPT_BYTES: Final = 2 * 1024 * 1024

#: How a step's outputs passed (docs/verify.md): a reviewer judged them, the agent reviewed them
#: itself (self-review mode), the agent overrode the gate with a reason, or no review ran.
PassKind = Literal["reviewed", "self_reviewed", "override", "unreviewed"]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class DefinitionFile(_Model):
    """One file of the job definition as the run used it."""

    root: DefinitionRoot
    #: POSIX path relative to its root (the project, or the folder of the standard jobs).
    path: str
    sha256: str | None


class JobDefinitionHash(_Model):
    """The job definition as it ran: job.yml, the workflow's step instruction files, the doc
    specs of its outputs and the `.deepreview` rule files the gate applied."""

    files: list[DefinitionFile]
    #: SHA-256 of the canonical form of `files` (`definition_digest`).
    sha256: str


class ReviewEntry(_Model):
    """One review a reviewer (or the agent, in self-review mode) ran on the step's outputs."""

    review: str
    target_file: str | None = None
    #: The reviewer CLI (`claude`, `codex`, `gemini`); None for a self-review.
    runner: str | None = None
    model: str | None = None
    depth: str | None = None
    #: SHA-256 of the review's criteria as the reviewer was given them.
    criteria_sha256: str | None = None
    verdict: Literal["passed", "failed", "requested"]
    attempt: int | None = None
    #: `<session>/<step>, <when>` of the review whose verdict this one reuses (it cost nothing
    #: here); None: judged in this run.
    reused_from: str | None = None


class HowPassed(_Model):
    """How a step's outputs passed its gate."""

    kind: PassKind
    reviews: list[ReviewEntry] = Field(default_factory=list)
    #: The override's reason (or the self-review's outcome), or why no review ran.
    reason: str | None = None


class OutputEntry(_Model):
    """One file of one output of a step, with its SHA-256 when its verdict covered it."""

    output: str
    path: str
    sha256: str | None


class ScopeEntry(_Model):
    """What the scope guard found for the step (docs/evidence.md, "Scope guard")."""

    #: The job's `scope_guard`: `note`, `strict` or `off`.
    guard: str
    #: False when the guard could not look (outside git, or git failed at every checkpoint).
    checked: bool
    #: Files the step changed without declaring them.
    undeclared: list[str] = Field(default_factory=list)


class ReceiptStep(_Model):
    step: str
    outputs: list[OutputEntry]
    passed: HowPassed
    scope: ScopeEntry
    #: The step asks a human's approval (`approval:` in job.yml).
    approval_required: bool = False
    #: SHA-256 of the job definition the gate accepted the step under: the body's
    #: `job_definition.sha256` when it is the one the run completed with; None when the run's
    #: session did not record it.
    definition_sha256: str | None = None
    #: The files of the job definition that were otherwise when the gate accepted the step, as
    #: they were then (`sha256` None: absent); empty when it ran under the run's definition.
    definition_changed: list[DefinitionFile] = Field(default_factory=list)


class ApprovalEntry(_Model):
    """One human approval of the run: the fields the approver signed, as signed."""

    step_ids: list[str]
    request_id: str
    signer: str | None
    #: Base64 Ed25519 signature over `fields` (docs/security.md, "Approvals"); None: unsigned.
    signature: str | None
    decided_at: str
    #: Exactly what the signature covers: session, request, steps, shown files, the decision.
    fields: dict[str, JsonValue]


class ReceiptBody(_Model):
    """What the gate key signs."""

    #: Only this version's format is read: a receipt of another is malformed, never half read.
    format: Literal["deepwork-receipt/1"] = RECEIPT_FORMAT
    deepwork_version: str
    session_id: str
    job: str
    workflow: str
    instance: str | None = None
    parent_session_id: str | None = None
    #: `completed`: only a completed run has a receipt.
    status: str
    started_at: str
    completed_at: str | None
    #: The commit HEAD pointed at when the run started; None outside git.
    start_commit: str | None
    job_definition: JobDefinitionHash
    steps: list[ReceiptStep]
    approvals: list[ApprovalEntry] = Field(default_factory=list)


class GateSignature(_Model):
    """The gate key's signature: `key` names `.deepwork/gate_keys/<key>.pub`."""

    key: str
    ed25519: str


class RereviewEntry(_Model):
    """One review judged again by `deepwork verify --rereview`."""

    step: str
    review: str
    target_file: str | None = None
    runner: str
    model: str | None = None
    criteria_sha256: str
    verdict: Literal["passed", "failed"]
    #: `reused from <session>/<step>, <when>`: CI's verdict of the same task over the same bytes,
    #: taken from the verdict cache (no reviewer call); None: judged in this run.
    reused_from: str | None = Field(default=None, exclude_if=unset)


class Countersignature(_Model):
    """A CI key's countersignature: `key` names `.deepwork/ci_keys/<key>.pub`; it covers the
    body's hash, the gate's signature, when, and every review it judged again."""

    key: str
    signed_at: str
    runner: str
    reviews: list[RereviewEntry]
    ed25519: str


class Receipt(_Model):
    body: ReceiptBody
    signature: GateSignature
    countersignatures: list[Countersignature] = Field(default_factory=list)

    def text(self) -> bytes:
        """The receipt as its file holds it."""
        return canonical_bytes(self.model_dump(mode="json"))


def canonical_bytes(document: object) -> bytes:
    """`document` as canonical JSON: sorted keys, no spaces, ASCII only, one newline at the end."""
    text = json.dumps(document, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return (text + "\n").encode("ascii")


def definition_digest(files: list[DefinitionFile]) -> str:
    """The SHA-256 of a job definition: of its files' canonical form, in path order."""
    listed = sorted(
        (f.model_dump(mode="json") for f in files), key=lambda f: (f["root"], f["path"])
    )
    return hashlib.sha256(canonical_bytes(listed)).hexdigest()


def receipt_path(job: str, session_id: str) -> str:
    """Where the receipt of `session_id` of `job` lives, relative to the project."""
    return f"{RECEIPTS_DIR}/{job}/{session_id}.json"
