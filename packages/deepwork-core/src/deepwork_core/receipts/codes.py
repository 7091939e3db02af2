"""The codes of receipts and of `deepwork verify` (docs/verify.md): one family of `Code`.

They are many, and only this subpackage and the `deepwork verify` command report them, so they
live beside the code that does, as their own family (`ReceiptCode`); docs/errors.md lists them
with every other code. A `verify.*` code names one finding: what `deepwork verify` refuses and
why. A `receipt.*` code is an error of writing a receipt.
"""

from __future__ import annotations

from deepwork_core.base.error_codes import Code


class ReceiptCode(Code):
    """A code of a receipt or of a verify finding; the string under each member says what it
    means."""

    AUDIT_BASE_MISSING = "audit.base_missing"
    """`deepwork audit verify` found no base ref to read the trusted keys from (`--base`, else
    the remote's default branch, `main` or `master`): nothing could be checked."""
    AUDIT_DECISION_UNVERIFIED = "audit.decision_unverified"
    """A decision in the audit record does not hold: its approver's signature does not verify
    with the key committed on the base ref, or its signer is not trusted there."""
    AUDIT_EDITED = "audit.edited"
    """The audit record's bytes are not the ones `deepwork audit export` wrote (the file is not
    in its canonical form): it was edited since."""
    AUDIT_END_UNSUPPORTED = "audit.end_unsupported"
    """How a request of the audit record ended is not what its decisions and policy support:
    `approved` without enough verified approvals from distinct signers who may count, `rejected`
    without a verified rejection, `expired` before its `expires_at` or after it was settled, or
    a state that is not one of approved, rejected, expired, cancelled and failed."""
    AUDIT_HASHES_DISAGREE = "audit.hashes_disagree"
    """A decision in the audit record binds other paths or hashes than its request showed."""
    AUDIT_MALFORMED = "audit.malformed"
    """The file is not an audit record `deepwork audit export` writes (not JSON, or not its
    shape)."""
    AUDIT_SIGNATURE_INVALID = "audit.signature_invalid"
    """The gate signature over the audit record does not verify: a byte of what it covers was
    changed."""
    AUDIT_UNTRUSTED_KEY = "audit.untrusted_key"
    """The gate key that signed the audit record is not committed on the base ref
    (`.deepwork/gate_keys/`): commit its `.pub` there, or the record proves nothing."""
    RECEIPT_KEY_UNAVAILABLE = "receipt.key_unavailable"
    """The gate key (`<state>/gate/gate.key`) could not be read or created, so no receipt was
    signed; the run is complete all the same. Fix the state folder, then write the receipt with
    `deepwork receipt SESSION`."""
    RECEIPT_KEY_UNSAFE = "receipt.key_unsafe"
    """The gate key file is refused: a symbolic link, not a regular file, open to group or
    others, owned by another user, or not a 32-byte key. Fix its mode (`chmod 600`) or delete it
    (a new key is made, with a new `.pub` to commit)."""
    RECEIPT_NOT_COMPLETED = "receipt.not_completed"
    """Only a completed run has a receipt: the session is still active or was aborted."""
    RECEIPT_WRITE_FAILED = "receipt.write_failed"
    """The receipt could not be built or written into `.deepwork/receipts/` (the message says
    why); the run is complete all the same, and `deepwork receipt SESSION` writes it again."""

    VERIFY_APPROVAL_MISSING = "verify.approval_missing"
    """A step the receipt says needs a human's approval, or whose files the policy requires to
    be approved (`verify.require: approval: true`), has no approval in the receipt."""
    VERIFY_APPROVAL_UNVERIFIED = "verify.approval_unverified"
    """An approval in the receipt does not count: it is not signed, its signer is not an approver
    trusted on the base ref, its signature does not verify, it is a rejection, or it names
    another session or other files than the receipt's."""
    VERIFY_BASE_MISSING = "verify.base_missing"
    """The base ref (`--base`, else the remote's default branch, `main` or `master`) does not
    exist in this repository: nothing can be trusted, so nothing passes."""
    VERIFY_CI_KEY_INVALID = "verify.ci_key_invalid"
    """`--rereview` needs the CI key in `DEEPWORK_CI_KEY` (`deepwork-ci-key NAME BASE64`, as
    `deepwork ci-key NAME` printed it); it is missing or malformed."""
    VERIFY_CI_KEY_UNTRUSTED = "verify.ci_key_untrusted"
    """`--rereview` countersigns nothing: the CI key of `DEEPWORK_CI_KEY` is not listed under
    `.deepwork/ci_keys/` on the base ref with this public key (or only the change lists it)."""
    VERIFY_COMMIT_NOT_ANCESTOR = "verify.commit_not_ancestor"
    """The commit the run started from is not an ancestor of the commit verified: the receipt
    was copied from another branch."""
    VERIFY_COMMIT_UNKNOWN = "verify.commit_unknown"
    """The commit the run started from is not in this repository (or the receipt names none):
    the receipt was copied from another project, or the run was not in a git repository."""
    VERIFY_CONFLICTING_RECEIPTS = "verify.conflicting_receipts"
    """Two receipts claim one file with different hashes; at most one of them can be true."""
    VERIFY_COUNTERSIGN_INVALID = "verify.countersign_invalid"
    """A countersignature of the receipt does not verify, or its key is not listed under
    `.deepwork/ci_keys/` on the base ref."""
    VERIFY_COUNTERSIGN_MISSING = "verify.countersign_missing"
    """The policy requires a countersignature (`verify.require_countersign: true`) and the
    receipt has none that is trusted: run `deepwork verify --rereview` in CI."""
    VERIFY_GIT_FAILED = "verify.git_failed"
    """git could not answer what `deepwork verify` asks it (the message gives git's own words),
    or the base ref shares no history with HEAD, so the change cannot be told apart: nothing
    passes."""
    VERIFY_JOB_CHANGED = "verify.job_changed"
    """A file of the job definition the run used (job.yml, a step's instructions, a doc spec, a
    `.deepreview` rule file) differs now, or is gone; the finding names each file."""
    VERIFY_JOB_CHANGED_DURING_RUN = "verify.job_changed_during_run"
    """A step ran under another job definition than the one the run completed with: a file of it
    (job.yml, a step's instructions, a doc spec, a `.deepreview` file of its reviews) was
    otherwise when the gate accepted the step, and was changed back or again before the run
    completed. The receipt says so for that step
    (`definition_changed`), and the finding names the step and each file."""
    VERIFY_JOB_OUTSIDE_PROJECT = "verify.job_outside_project"
    """The run's job came from a folder outside the project (`DEEPWORK_ADDITIONAL_JOBS_FOLDERS`),
    so its definition cannot be checked against the repository."""
    VERIFY_KEY_ADDED_IN_CHANGE = "verify.key_added_in_change"
    """The key that signed (a gate key, an approver's, a CI key) is only in the change under
    test, not on the base ref: a key counts once it is merged there."""
    VERIFY_NO_TRUSTED_KEYS = "verify.no_trusted_keys"
    """The base ref lists no gate key under `.deepwork/gate_keys/`, so no receipt can be
    trusted: commit the `.pub` file a run listed there and merge it into the base branch."""
    VERIFY_NOT_A_REPOSITORY = "verify.not_a_repository"
    """`deepwork verify` was run outside a git work tree; it checks receipts against commits."""
    VERIFY_NOT_REVIEWED = "verify.not_reviewed"
    """The policy requires a reviewer (`verify.require: reviewed: true`) and a step that made a
    required file passed without one (self-review, override, or no review)."""
    VERIFY_OUTPUT_CHANGED = "verify.output_changed"
    """An output's bytes differ from the hash the receipt holds, or the file is gone: it was
    edited after the run; the finding names the file and the step."""
    VERIFY_PATH_OUTSIDE_PROJECT = "verify.path_outside_project"
    """The receipt names a path outside the project (absolute, `..`, or into `.git`)."""
    VERIFY_POLICY_INVALID = "verify.policy_invalid"
    """`.deepwork/config.yml` on the base ref cannot be read as a policy (its `verify` section,
    or the file as a whole, is invalid)."""
    VERIFY_RECEIPT_MALFORMED = "verify.receipt_malformed"
    """The receipt is not a receipt: not JSON, nested too deeply, not in canonical form, or not
    of the receipt's shape."""
    VERIFY_RECEIPT_MISPLACED = "verify.receipt_misplaced"
    """A receipt is not at `.deepwork/receipts/<its job>/<its session>.json`: moved, copied
    from another run, or outside `.deepwork/receipts/`."""
    VERIFY_RECEIPT_SYMLINK = "verify.receipt_symlink"
    """The receipt is a symbolic link or not a regular file."""
    VERIFY_RECEIPT_TOO_LARGE = "verify.receipt_too_large"
    """The receipt is larger than a receipt can be (docs/limits.md)."""
    VERIFY_RECEIPT_UNREADABLE = "verify.receipt_unreadable"
    """The receipt cannot be read (permissions, an I/O error)."""
    VERIFY_REREVIEW_ERROR = "verify.rereview_error"
    """`--rereview` got no verdict for a review (the reviewer timed out, stalled, answered
    outside the schema, or the job could not be loaded); the receipt is not countersigned. The
    message names the review and the gate's own code."""
    VERIFY_REREVIEW_FAILED = "verify.rereview_failed"
    """`--rereview` judged a review again against the committed bytes and a criterion failed;
    the finding names the receipt, the step and the criterion. Nothing is countersigned."""
    VERIFY_REREVIEW_UNMATCHED = "verify.rereview_unmatched"
    """A review the receipt records is not one the job at HEAD plans for the receipt's outputs
    with the same criteria (a `.deepreview` rule changed or is gone), so it cannot be judged
    again; the receipt is not countersigned."""
    VERIFY_RUN_INCOMPLETE = "verify.run_incomplete"
    """The receipt is of a run that did not complete (aborted or unfinished)."""
    VERIFY_RUNNER_MISSING = "verify.runner_missing"
    """`--rereview` cannot run its reviewer: the CLI of `--runner` (claude, codex, gemini) is
    not installed or not on PATH. Nothing is countersigned: install it in the CI job."""
    VERIFY_SIGNATURE_INVALID = "verify.signature_invalid"
    """The receipt's signature does not verify with the gate key it names: a signed field was
    edited after the run (an output hash, a verdict, a step, the job hash, the approvals...)."""
    VERIFY_UNRECEIPTED_CHANGE = "verify.unreceipted_change"
    """A changed file matches a `verify.require` rule of the policy and no valid receipt of the
    rule's job and workflow declares it with its current bytes."""
    VERIFY_UNTRUSTED_KEY = "verify.untrusted_key"
    """The receipt is signed by a gate key that is not listed under `.deepwork/gate_keys/` on
    the base ref (or that file holds another key)."""
