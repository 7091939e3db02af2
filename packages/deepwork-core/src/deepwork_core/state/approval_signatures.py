"""Signed approvals: each human approver's Ed25519 key pair and the public keys a project trusts.

An approver's private key is a 32-byte Ed25519 seed in the user's state directory
(`<state>/approvers/<name>.key`, mode 0600, made by `deepwork approver init`, checked like the
project's approval key in `deepwork_core.state.approval_seal`). The project lists the approvers it
trusts as `.deepwork/approvers/<name>.pub` (committed): one line, `deepwork-approver ed25519
<base64 of the 32-byte public key>`. The command line and the dashboard sign a decision with the
local approver's key; the server verifies it against the trusted public keys and never holds a
private key.

Signatures are required (`TrustedApprovers.required`) once the project trusts any key, or when the
run state lives in a shared store; a decision without a valid signature by a trusted approver is
then refused (`approval.unverified`). Otherwise the project's HMAC seal decides, as before. The
trusted keys are read again on every check, so a key added or removed counts at once. What this
does and does not stop is on docs/security.md ("Approvals") and docs/team.md.

`cryptography` is imported only when a key is used, so the paths that never sign stay light.
"""

from __future__ import annotations

import base64
import binascii
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Final

from deepwork_core.base.error_codes import ErrorCode
from deepwork_core.state.approval_seal import (
    ApprovalKeyError,
    canonical,
    create_secret,
    read_secret,
)

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

#: Binds a signature to its purpose and canonical form.
SIGNATURE_LABEL: Final = "deepwork-approval-signature-v1"
#: The first two words of a `.pub` file.
_PUB_PREFIX: Final = ("deepwork-approver", "ed25519")
#: An approver's name: the stem of their `.pub` and `.key` files.
_NAME: Final = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
#: A `.pub` file larger than this is refused; real ones are under 100 bytes.
_MAX_PUB_BYTES: Final = 4096


def check_approver_name(name: str) -> str:
    """`name` when it can name an approver (letters, digits, `._-`, up to 64); else an error."""
    if not _NAME.fullmatch(name):
        raise ApprovalKeyError(
            f"{name!r} cannot name an approver: use letters, digits, '.', '_' and '-' "
            "(at most 64, starting with a letter or digit)",
            code=ErrorCode.APPROVAL_KEY_UNAVAILABLE,
        )
    return name


def public_line(public: bytes) -> str:
    """The content of a `.pub` file for the raw public key `public`."""
    return f"{' '.join(_PUB_PREFIX)} {base64.b64encode(public).decode()}\n"


def parse_public_line(text: str) -> bytes | None:
    """The raw 32-byte public key of a `.pub` file's text; None when it is not one."""
    words = text.split()
    if len(words) != 3 or tuple(words[:2]) != _PUB_PREFIX:
        return None
    try:
        raw = base64.b64decode(words[2], validate=True)
    except (binascii.Error, ValueError):
        return None
    return raw if len(raw) == 32 else None


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


class TrustedApprovers:
    """The approvers whose `.pub` files are in `folder`; `shared`: the run state lives in a store
    other machines write too, so signatures are required even before any key is trusted."""

    def __init__(self, folder: Path, *, shared: bool = False) -> None:
        self.folder = folder
        self.shared = shared

    def names(self) -> list[str]:
        """The stems of every `.pub` file in the folder, valid or not, sorted."""
        try:
            entries = list(os.scandir(self.folder))
        except OSError:
            return []
        return sorted(e.name[: -len(".pub")] for e in entries if e.name.endswith(".pub"))

    def required(self) -> bool:
        """True when a decision counts only with a trusted signature."""
        return self.shared or bool(self.names())

    def public_key(self, name: str) -> bytes | None:
        """The trusted public key of `name`; None when the project does not trust that name."""
        if not _NAME.fullmatch(name):
            return None
        path = self.folder / f"{name}.pub"
        try:
            with path.open("rb") as handle:
                data = handle.read(_MAX_PUB_BYTES + 1)
        except OSError:
            return None
        if len(data) > _MAX_PUB_BYTES:
            return None
        return parse_public_line(data.decode("ascii", errors="replace"))

    def check_signer(self, signer: ApproverSigner) -> None:
        """Refuse (`approval.unverified`) to sign where `signer`'s key would not count."""
        if not self.required() or self.public_key(signer.name) == signer.public_key():
            return
        raise ApprovalKeyError(
            f"your approver key {signer.name!r} ({signer.path}) is not trusted here: "
            f"{self.folder / (signer.name + '.pub')} is missing or holds another key. Nothing "
            "was decided; have the project trust it (`deepwork approver init` writes the file "
            "to commit) or sign with a trusted key (--approver NAME)",
            code=ErrorCode.APPROVAL_UNVERIFIED,
        )

    def why_unsigned(
        self, fields: Mapping[str, object], signer: str | None, signature: str | None
    ) -> str | None:
        """Why `signature` by `signer` over `fields` does not count; None when it does."""
        from cryptography.exceptions import InvalidSignature
        from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

        if signer is None or signature is None:
            return "the decision carries no approver's signature, and this project requires one"
        public = self.public_key(signer)
        if public is None:
            where = self.folder / f"{signer}.pub"
            return f"the signer {signer!r} is not a trusted approver ({where} holds no valid key)"
        try:
            raw = base64.b64decode(signature, validate=True)
            Ed25519PublicKey.from_public_bytes(public).verify(
                raw, canonical(fields, SIGNATURE_LABEL)
            )
        except (binascii.Error, ValueError, InvalidSignature):
            return f"the signature does not verify with the trusted key of {signer!r}"
        return None
