"""The checks `deepwork verify` runs on one receipt (docs/verify.md, "What verify checks").

Each check returns findings, none when it holds: where the receipt lies, that its run
completed, the gate key's signature by a key trusted on the base ref, that every path it names
stays inside the project, each output's current bytes, the job definition as it is now, the
commit the run started from, every approval's signature by an approver trusted on the base ref,
and the countersignatures. Keys are trusted only as committed on the base ref: one that only
the change lists is `verify.key_added_in_change`.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from typing import Final

from deepwork_core.base.layout import APPROVERS_DIR, CI_KEYS_DIR, GATE_KEYS_DIR
from deepwork_core.evidence.trusted_keys import APPROVER_KIND, TrustError
from deepwork_core.receipts.codes import ReceiptCode
from deepwork_core.receipts.definition import changed_files
from deepwork_core.receipts.findings import Finding
from deepwork_core.receipts.keys import (
    COUNTERSIGN_LABEL,
    KEY_NAME,
    RECEIPT_LABEL,
    KeyKind,
    signature_holds,
)
from deepwork_core.receipts.model import (
    ApprovalEntry,
    Countersignature,
    Receipt,
    canonical_bytes,
    receipt_path,
)
from deepwork_core.receipts.reading import unsafe_path
from deepwork_core.receipts.repository import Repository
from deepwork_core.state.approvals.signatures import SIGNATURE_LABEL

#: A commit id as git prints it (SHA-1 or SHA-256).
_COMMIT: Final = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")
#: The first word of the `.pub` lines of each folder of keys.
_KINDS: Final = {
    GATE_KEYS_DIR: KeyKind.GATE.prefix[0],
    CI_KEYS_DIR: KeyKind.CI.prefix[0],
    APPROVERS_DIR: APPROVER_KIND,
}


@dataclass(frozen=True, slots=True)
class Checked:
    """A receipt's findings, and the steps whose approval counts."""

    findings: list[Finding]
    approved_steps: frozenset[str]
    countersigned: bool
    #: The gate's signature holds, by a key trusted on the base ref: what the receipt claims,
    #: a run did claim (its outputs may have been edited since).
    signed: bool


def trusted_key(repo: Repository, folder: str, name: str) -> bytes | ReceiptCode:
    """The public key `name` of `folder` as committed on the base ref, or why it is not
    trusted."""
    listed = repo.keys_at_base(folder, _KINDS[folder])
    if isinstance(listed, TrustError):
        return ReceiptCode.VERIFY_UNTRUSTED_KEY
    if KEY_NAME.fullmatch(name) and name in listed:
        return listed[name]
    if KEY_NAME.fullmatch(name) and name in repo.listed_now(folder):
        return ReceiptCode.VERIFY_KEY_ADDED_IN_CHANGE
    return ReceiptCode.VERIFY_UNTRUSTED_KEY


def body_sha256(receipt: Receipt) -> str:
    return hashlib.sha256(canonical_bytes(receipt.body.model_dump(mode="json"))).hexdigest()


def countersign_fields(receipt: Receipt, sign: Countersignature) -> dict[str, object]:
    """What a countersignature covers: the body, the gate's signature, and its own fields."""
    own = sign.model_dump(mode="json", exclude={"ed25519"})
    return {**own, "body_sha256": body_sha256(receipt), "gate": receipt.signature.ed25519}


def check_receipt(
    repo: Repository, relative: str, receipt: Receipt, require_countersign: bool
) -> Checked:
    """Every check of the receipt at `relative`."""
    finding = _Findings(relative)
    body = receipt.body
    _placement(finding, relative, receipt)
    if body.status != "completed" or body.completed_at is None:
        finding.add(ReceiptCode.VERIFY_RUN_INCOMPLETE, f"the run is {body.status}, not completed")
    signed = _signature(finding, repo, receipt)
    _outputs(finding, repo, receipt)
    _definition(finding, repo, receipt)
    _start_commit(finding, repo, body.start_commit)
    approved = _approvals(finding, repo, receipt)
    countersigned = _countersignatures(finding, repo, receipt)
    if require_countersign and not countersigned:
        finding.add(
            ReceiptCode.VERIFY_COUNTERSIGN_MISSING,
            "the policy requires a countersignature (verify.require_countersign) and none by "
            "a trusted CI key holds: run `deepwork verify --rereview` in CI",
        )
    return Checked(finding.items, approved, countersigned, signed)


class _Findings:
    def __init__(self, receipt: str) -> None:
        self.receipt = receipt
        self.items: list[Finding] = []

    def add(
        self, code: ReceiptCode, message: str, *, file: str | None = None, step: str | None = None
    ) -> None:
        where = file or self.receipt
        self.items.append(
            Finding(code=code, file=where, receipt=self.receipt, step=step, message=message)
        )


def _placement(finding: _Findings, relative: str, receipt: Receipt) -> None:
    expected = receipt_path(receipt.body.job, receipt.body.session_id)
    if unsafe_path(expected) or expected != relative:
        finding.add(
            ReceiptCode.VERIFY_RECEIPT_MISPLACED,
            f"the receipt of session {receipt.body.session_id} of job {receipt.body.job!r} "
            f"belongs at {expected}",
        )


def _signature(finding: _Findings, repo: Repository, receipt: Receipt) -> bool:
    name = receipt.signature.key
    listed = repo.keys_at_base(GATE_KEYS_DIR, _KINDS[GATE_KEYS_DIR])
    if not listed or isinstance(listed, TrustError):
        why = listed.message if isinstance(listed, TrustError) else "the base ref lists none"
        finding.add(
            ReceiptCode.VERIFY_NO_TRUSTED_KEYS,
            f"no gate key under {GATE_KEYS_DIR}/ can be trusted: {why}",
        )
        return False
    public = trusted_key(repo, GATE_KEYS_DIR, name)
    if isinstance(public, ReceiptCode):
        finding.add(public, f"signed by the gate key {name!r}, {_untrusted(public)}")
        return False
    body = receipt.body.model_dump(mode="json")
    if not signature_holds(public, body, RECEIPT_LABEL, receipt.signature.ed25519):
        finding.add(
            ReceiptCode.VERIFY_SIGNATURE_INVALID,
            f"the signature does not verify with the gate key {name!r}: a signed field was "
            "edited after the run",
        )
        return False
    return True


def _untrusted(code: ReceiptCode) -> str:
    if code is ReceiptCode.VERIFY_KEY_ADDED_IN_CHANGE:
        return "which only this change lists; a key counts once merged into the base branch"
    return "which the base ref does not list (or lists with another key)"


def _outputs(finding: _Findings, repo: Repository, receipt: Receipt) -> None:
    for step in receipt.body.steps:
        for output in step.outputs:
            why = unsafe_path(output.path)
            if why:
                finding.add(ReceiptCode.VERIFY_PATH_OUTSIDE_PROJECT, why, step=step.step)
                continue
            if output.sha256 is None:
                continue
            now = repo.current_sha256(output.path)
            if now != output.sha256:
                state = "is gone" if now is None else "was edited after the run"
                finding.add(
                    ReceiptCode.VERIFY_OUTPUT_CHANGED,
                    f"output {output.output!r} {state}: its bytes differ from the receipt's hash",
                    file=output.path,
                    step=step.step,
                )


def _definition(finding: _Findings, repo: Repository, receipt: Receipt) -> None:
    files = receipt.body.job_definition.files
    for item in files:
        why = unsafe_path(item.path)
        if why:
            finding.add(ReceiptCode.VERIFY_PATH_OUTSIDE_PROJECT, f"job definition: {why}")
            return
    if any(item.root == "additional" for item in files):
        finding.add(
            ReceiptCode.VERIFY_JOB_OUTSIDE_PROJECT,
            f"job {receipt.body.job!r} came from a folder outside the project",
        )
    changed = changed_files(repo.root, receipt.body.job_definition, repo.definition_hashes)
    if changed:
        finding.add(
            ReceiptCode.VERIFY_JOB_CHANGED,
            f"the job definition differs from the one the run used: {', '.join(changed)}",
        )
    _during_run(finding, receipt)


def _during_run(finding: _Findings, receipt: Receipt) -> None:
    """Each step ran under the definition the run completed with (the one just compared)."""
    completed = receipt.body.job_definition.sha256
    for step in receipt.body.steps:
        same = step.definition_sha256 in (None, completed)
        if same and not step.definition_changed:
            continue
        files = ", ".join(
            f"{item.path} ({'absent' if item.sha256 is None else item.sha256[:12]})"
            for item in step.definition_changed
        )
        finding.add(
            ReceiptCode.VERIFY_JOB_CHANGED_DURING_RUN,
            f"the step ran under another job definition than the run completed with: "
            f"{files or 'its definition hash differs'} when the gate accepted it",
            step=step.step,
        )


def _start_commit(finding: _Findings, repo: Repository, commit: str | None) -> None:
    if commit is None or not _COMMIT.fullmatch(commit):
        finding.add(ReceiptCode.VERIFY_COMMIT_UNKNOWN, "the receipt names no start commit")
        return
    known, ancestor = repo.commit_standing(commit)
    if not known:
        finding.add(
            ReceiptCode.VERIFY_COMMIT_UNKNOWN,
            f"the run started from {commit[:12]}, which this repository does not have",
        )
    elif not ancestor:
        finding.add(
            ReceiptCode.VERIFY_COMMIT_NOT_ANCESTOR,
            f"the run started from {commit[:12]}, which is not an ancestor of HEAD",
        )


def _approvals(finding: _Findings, repo: Repository, receipt: Receipt) -> frozenset[str]:
    approved: set[str] = set()
    for entry in receipt.body.approvals:
        why = _approval_fault(repo, receipt, entry)
        if why is None:
            approved.update(entry.step_ids)
            continue
        code, message = why
        finding.add(code, f"approval {entry.request_id}: {message}", step=",".join(entry.step_ids))
    for step in receipt.body.steps:
        if step.approval_required and step.step not in approved:
            finding.add(
                ReceiptCode.VERIFY_APPROVAL_MISSING,
                "the step asks a human's approval and the receipt holds no valid one",
                step=step.step,
            )
    return frozenset(approved)


def _approval_fault(
    repo: Repository, receipt: Receipt, entry: ApprovalEntry
) -> tuple[ReceiptCode, str] | None:
    unverified = ReceiptCode.VERIFY_APPROVAL_UNVERIFIED
    if entry.signer is None or entry.signature is None:
        return unverified, "not signed by an approver"
    fields = entry.fields
    expected = {
        "session_id": receipt.body.session_id,
        "signer": entry.signer,
        "request_id": entry.request_id,
        "step_ids": entry.step_ids,
        "approved": True,
    }
    if any(fields.get(key) != value for key, value in expected.items()):
        return unverified, "its signed fields name another session, request, step or decision"
    public = trusted_key(repo, APPROVERS_DIR, entry.signer)
    if isinstance(public, ReceiptCode):
        code = public if public is ReceiptCode.VERIFY_KEY_ADDED_IN_CHANGE else unverified
        return code, f"the approver {entry.signer!r} is {_untrusted(public)}"
    if not signature_holds(public, fields, SIGNATURE_LABEL, entry.signature):
        return unverified, f"the signature does not verify with {entry.signer!r}'s trusted key"
    return None


def _countersignatures(finding: _Findings, repo: Repository, receipt: Receipt) -> bool:
    held = False
    for sign in receipt.countersignatures:
        public = trusted_key(repo, CI_KEYS_DIR, sign.key)
        if isinstance(public, ReceiptCode):
            code = (
                public
                if public is ReceiptCode.VERIFY_KEY_ADDED_IN_CHANGE
                else ReceiptCode.VERIFY_COUNTERSIGN_INVALID
            )
            finding.add(code, f"countersigned by the CI key {sign.key!r}, {_untrusted(public)}")
        elif not signature_holds(
            public, countersign_fields(receipt, sign), COUNTERSIGN_LABEL, sign.ed25519
        ):
            finding.add(
                ReceiptCode.VERIFY_COUNTERSIGN_INVALID,
                f"the countersignature by {sign.key!r} does not verify",
            )
        elif all(review.verdict == "passed" for review in sign.reviews):
            held = True
    return held
