"""Signed approvals: each human approver's Ed25519 key pair and the public keys a project trusts.

An approver's private key is a 32-byte Ed25519 seed in the user's state directory
(`<state>/approvers/<name>.key`, mode 0600, made by `deepwork approver init`, checked like the
project's approval key in `deepwork_core.state.approvals.seal`). The project lists the approvers it
trusts as `.deepwork/approvers/<name>.pub`: one line, `deepwork-approver ed25519 <base64 of the
32-byte public key>`, trusted only as committed on the project's base ref
(`deepwork_core.evidence.trusted_keys`), never as the working tree holds it. The command line and
the dashboard sign a decision with the local approver's key; the server verifies it against the
trusted public keys and never holds a private key.

Signatures are required (`TrustedApprovers.required`) once the base ref trusts any key, or when the
run state lives in a shared store; a decision without a valid signature by a trusted approver is
then refused (`approval.unverified`; `approval.untrusted_key` when the signer's key is not on the
base ref). Otherwise the project's HMAC seal decides, as before. The trusted keys are read again
on every check (at the commit the ref names then), so a key merged or removed counts at once.
What this does and does not stop is on docs/security.md ("Approvals") and docs/team.md.

`cryptography` is imported only when a key is used, so the paths that never sign stay light.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Final

from deepwork_core.base.error_codes import ErrorCode
from deepwork_core.base.layout import APPROVERS_DIR
from deepwork_core.evidence.trusted_keys import (
    KEY_NAME,
    TrustedRef,
    TrustError,
    resolve_trusted_ref,
    trusted_keys,
    where_key_is,
)
from deepwork_core.state.approvals.seal import (
    ApprovalKeyError,
    canonical,
    create_secret,
    read_secret,
)

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

#: Binds a signature to its purpose and canonical form.
SIGNATURE_LABEL: Final = "deepwork-approval-signature-v1"


def check_approver_name(name: str) -> str:
    """`name` when it can name an approver (letters, digits, `._-`, up to 64); else an error."""
    if not KEY_NAME.fullmatch(name):
        raise ApprovalKeyError(
            f"{name!r} cannot name an approver: use letters, digits, '.', '_' and '-' "
            "(at most 64, starting with a letter or digit)",
            code=ErrorCode.APPROVAL_KEY_UNAVAILABLE,
        )
    return name


class ApproverSigner:
    """The local approver `name`, whose private key is the file `path`."""

    def __init__(self, name: str, path: Path) -> None:
        self.name = check_approver_name(name)
        self.path = path

    def create(self) -> bool:
        """Make the private key file unless it exists; True when this call made it."""
        if self.path.exists() or self.path.is_symlink():
            read_secret(self.path)  # refuses an unsafe file loudly
            return False
        create_secret(self.path)
        return True

    def public_key(self) -> bytes:
        from cryptography.hazmat.primitives import serialization

        key = self._private()
        return key.public_key().public_bytes(
            serialization.Encoding.Raw, serialization.PublicFormat.Raw
        )

    def sign(self, fields: Mapping[str, object]) -> str:
        """The base64 Ed25519 signature of `fields` in their canonical form."""
        signature = self._private().sign(canonical(fields, SIGNATURE_LABEL))
        return base64.b64encode(signature).decode()

    def _private(self) -> Ed25519PrivateKey:
        from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

        try:
            seed = read_secret(self.path)
        except FileNotFoundError:
            raise ApprovalKeyError(
                f"approver {self.name!r} has no key at {self.path}; run `deepwork approver "
                f"init --name {self.name}` first",
                code=ErrorCode.APPROVAL_KEY_UNAVAILABLE,
            ) from None
        return Ed25519PrivateKey.from_private_bytes(seed)


@dataclass(frozen=True, slots=True)
class Refusal:
    """Why a decision does not count, with the code to refuse it with."""

    code: ErrorCode
    why: str


@dataclass(frozen=True, slots=True)
class ApproverRing:
    """The approvers trusted at one moment: their keys as committed on `ref` (None: no ref
    names any, as in a project with no base branch yet)."""

    keys: Mapping[str, bytes]
    ref: TrustedRef | None


class TrustedApprovers:
    """The approvers `project_root` trusts: the `.pub` files of `.deepwork/approvers/` as
    committed on the trusted ref (`ref`: `approvals.trusted_ref`; None: the default refs).
    `shared`: the run state lives in a store other machines write too, so signatures are
    required even before any key is trusted."""

    def __init__(self, project_root: Path, *, ref: str | None = None, shared: bool = False) -> None:
        self.project_root = project_root
        self.configured_ref = ref
        self.shared = shared
        self.folder = project_root / APPROVERS_DIR

    def ring(self) -> ApproverRing:
        """The trusted keys now. A missing ref is `trust.ref_not_found` when the project named
        one or signatures are required anyway (shared); otherwise no key is trusted. A
        malformed `.pub` on the ref is `trust.key_malformed`, naming it."""
        try:
            ref = resolve_trusted_ref(self.project_root, self.configured_ref)
        except TrustError:
            if self.configured_ref or self.shared:
                raise
            return ApproverRing(keys={}, ref=None)
        return ApproverRing(keys=trusted_keys(self.project_root, ref, APPROVERS_DIR), ref=ref)

    def names(self) -> list[str]:
        """The trusted approvers' names, sorted."""
        return sorted(self.ring().keys)

    def required(self) -> bool:
        """True when a decision counts only with a trusted signature."""
        return True if self.shared else bool(self.ring().keys)

    def public_key(self, name: str) -> bytes | None:
        """The trusted public key of `name`; None when the project does not trust that name."""
        return self.ring().keys.get(name)

    def untrusted(self, ring: ApproverRing, name: str) -> Refusal:
        """`approval.untrusted_key` for `name`, saying where its `.pub` is instead."""
        if ring.ref is None:
            where = f"no base branch names any key (commit {APPROVERS_DIR}/{name}.pub to it)"
        else:
            where = where_key_is(self.project_root, ring.ref, APPROVERS_DIR, name)
        return Refusal(
            ErrorCode.APPROVAL_UNTRUSTED_KEY,
            f"approver {name!r} is not trusted: {where}. A key counts once it is merged into "
            "the base branch (docs/team.md)",
        )

    def check_signer(self, signer: ApproverSigner) -> None:
        """Refuse (`approval.untrusted_key`) to sign where `signer`'s key would not count."""
        ring = self.ring()
        if not (self.shared or ring.keys) or ring.keys.get(signer.name) == signer.public_key():
            return
        refusal = self.untrusted(ring, signer.name)
        raise ApprovalKeyError(
            f"your approver key {signer.name!r} ({signer.path}) does not count here: "
            f"{refusal.why}. Nothing was decided",
            code=refusal.code,
        )

    def why_unsigned(
        self, fields: Mapping[str, object], signer: str | None, signature: str | None
    ) -> Refusal | None:
        """Why `signature` by `signer` over `fields` does not count; None when it does."""
        from cryptography.exceptions import InvalidSignature
        from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

        if signer is None or signature is None:
            return Refusal(
                ErrorCode.APPROVAL_UNVERIFIED,
                "the decision carries no approver's signature, and this project requires one",
            )
        ring = self.ring()
        public = ring.keys.get(signer)
        if public is None:
            return self.untrusted(ring, signer)
        try:
            raw = base64.b64decode(signature, validate=True)
            Ed25519PublicKey.from_public_bytes(public).verify(
                raw, canonical(fields, SIGNATURE_LABEL)
            )
        except (binascii.Error, ValueError, InvalidSignature):
            return Refusal(
                ErrorCode.APPROVAL_UNVERIFIED,
                f"the signature does not verify with the trusted key of {signer!r}",
            )
        return None
