"""The keys that sign receipts (docs/verify.md, "Keys"): the serving machine's gate key and the
CI key that countersigns, both Ed25519.

The gate key is a 32-byte Ed25519 seed in the user's state directory (`<state>/gate/gate.key`,
mode 0600, made on first use and checked like the approval key: `state.approvals.seal`); the
command line and the server choose the file and the machine's name and pass them down. Its
public half is listed as `.deepwork/gate_keys/<name>.pub`, where `<name>` is the machine's name
and the key's fingerprint, so two machines never claim one file. The CI key lives only in the
CI secret `DEEPWORK_CI_KEY` (`deepwork-ci-key <name> <base64 seed>`); its public half is
`.deepwork/ci_keys/<name>.pub`. A `.pub` file is one line, `deepwork-<kind> ed25519 <base64>`,
and the kind is part of it: an approver's `.pub` copied into `gate_keys/` signs nothing.

`cryptography` is imported only when a key is used.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import re
import secrets
from collections.abc import Mapping
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Final

from deepwork_core.base.error_codes import ErrorCode
from deepwork_core.base.errors import DeepWorkError
from deepwork_core.base.layout import CI_KEYS_DIR, GATE_KEYS_DIR
from deepwork_core.evidence import trusted_keys
from deepwork_core.receipts.codes import ReceiptCode
from deepwork_core.state.approvals.seal import (
    ApprovalKeyError,
    canonical,
    create_secret,
    read_secret,
)

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

#: Binds the gate's signature to a receipt body in its canonical form.
RECEIPT_LABEL: Final = "deepwork-receipt-signature-v1"
#: Binds a countersignature to what it covers.
COUNTERSIGN_LABEL: Final = "deepwork-receipt-countersignature-v1"
#: The first word of `DEEPWORK_CI_KEY`'s value.
CI_SECRET_PREFIX: Final = "deepwork-ci-key"  # noqa: S105 - a label, not a secret
#: A key's name: the stem of its `.pub` file.
KEY_NAME: Final = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
_NOT_NAME: Final = re.compile(r"[^A-Za-z0-9._-]+")
#: How the gate key's errors name it.
_GATE_KEY: Final = "gate key"


class ReceiptError(DeepWorkError):
    """A receipt could not be written or a key used (`receipt.*`, `verify.ci_key_*`)."""

    code = ReceiptCode.RECEIPT_WRITE_FAILED


class KeyKind(StrEnum):
    """Whose public key a `.pub` file holds; the first word of the file names it."""

    GATE = "gate"
    CI = "ci"

    @property
    def prefix(self) -> tuple[str, str]:
        return (f"deepwork-{self.value}", "ed25519")

    @property
    def folder(self) -> str:
        return GATE_KEYS_DIR if self is KeyKind.GATE else CI_KEYS_DIR


def _raw_key(text: str) -> bytes | None:
    try:
        raw = base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        return None
    return raw if len(raw) == 32 else None


def fingerprint(public: bytes) -> str:
    """A short, stable name part of a public key: the first 12 hex digits of its SHA-256."""
    return hashlib.sha256(public).hexdigest()[:12]


def signature_holds(public: bytes, fields: Mapping[str, object], label: str, signed: str) -> bool:
    """True when `signed` (base64) is the Ed25519 signature by `public` of `fields` under
    `label`, in their canonical form."""
    from cryptography.exceptions import InvalidSignature
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

    try:
        raw = base64.b64decode(signed, validate=True)
        Ed25519PublicKey.from_public_bytes(public).verify(raw, canonical(fields, label))
    except (binascii.Error, ValueError, InvalidSignature):
        return False
    return True


class _Signer:
    """An Ed25519 private key, named as its `.pub` file is."""

    kind: KeyKind

    @property
    def name(self) -> str:
        """The stem of the key's `.pub` file."""
        raise NotImplementedError

    def _private(self) -> Ed25519PrivateKey:
        raise NotImplementedError

    def public_key(self) -> bytes:
        from cryptography.hazmat.primitives import serialization

        return (
            self._private()
            .public_key()
            .public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
        )

    def public_line(self) -> str:
        return trusted_keys.public_line(self.public_key(), self.kind.prefix[0])

    @property
    def pub_path(self) -> str:
        """The project-relative `.pub` file that lists this key."""
        return f"{self.kind.folder}/{self.name}.pub"

    def sign(self, fields: Mapping[str, object], label: str) -> str:
        """The base64 Ed25519 signature of `fields` under `label`, in their canonical form."""
        return base64.b64encode(self._private().sign(canonical(fields, label))).decode()


class GateKey(_Signer):
    """The gate key of this machine: the seed in the file `path` (made on first use), named
    after `machine` and its fingerprint."""

    kind = KeyKind.GATE

    def __init__(self, path: Path, machine: str) -> None:
        self.path = path
        self.machine = _NOT_NAME.sub("-", machine).strip("-._")[:40] or "machine"
        self._seed: bytes | None = None

    @property
    def name(self) -> str:
        return f"{self.machine}-{fingerprint(self.public_key())}"

    def _private(self) -> Ed25519PrivateKey:
        from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

        if self._seed is None:
            self._seed = self._load()
        return Ed25519PrivateKey.from_private_bytes(self._seed)

    def _load(self) -> bytes:
        try:
            try:
                return read_secret(self.path, what=_GATE_KEY)
            except FileNotFoundError:
                create_secret(self.path, what=_GATE_KEY)
            return read_secret(self.path, what=_GATE_KEY)
        except FileNotFoundError:
            raise ReceiptError(
                f"gate key {self.path} vanished right after it was made",
                code=ReceiptCode.RECEIPT_KEY_UNAVAILABLE,
            ) from None
        except ApprovalKeyError as exc:
            unsafe = exc.code == ErrorCode.APPROVAL_KEY_UNSAFE
            code = ReceiptCode.RECEIPT_KEY_UNSAFE if unsafe else ReceiptCode.RECEIPT_KEY_UNAVAILABLE
            raise ReceiptError(exc.message, code=code) from None


class CiKey(_Signer):
    """The CI key named `name` with the 32-byte Ed25519 `seed` (from `DEEPWORK_CI_KEY`)."""

    kind = KeyKind.CI

    def __init__(self, name: str, seed: bytes) -> None:
        self._name = name
        self._seed = seed

    @property
    def name(self) -> str:
        return self._name

    @classmethod
    def parse(cls, text: str | None) -> CiKey:
        """The key `DEEPWORK_CI_KEY` holds: `deepwork-ci-key <name> <base64 seed>`."""
        words = (text or "").split()
        seed = _raw_key(words[2]) if len(words) == 3 else None
        if seed is None or words[0] != CI_SECRET_PREFIX or not KEY_NAME.fullmatch(words[1]):
            what = "is not set" if not words else "is not `deepwork-ci-key NAME BASE64`"
            raise ReceiptError(
                f"DEEPWORK_CI_KEY {what}: --rereview countersigns with the CI key of this "
                "secret (make one with `deepwork ci-key NAME`)",
                code=ReceiptCode.VERIFY_CI_KEY_INVALID,
            )
        return cls(words[1], seed)

    @classmethod
    def new(cls, name: str) -> CiKey:
        """A new CI key called `name`."""
        if not KEY_NAME.fullmatch(name):
            raise ReceiptError(
                f"{name!r} cannot name a key: use letters, digits, '.', '_' and '-' (at most "
                "64, starting with a letter or digit)",
                code=ReceiptCode.VERIFY_CI_KEY_INVALID,
            )
        return cls(name, secrets.token_bytes(32))

    def secret_line(self) -> str:
        """The value of `DEEPWORK_CI_KEY` for this key."""
        return f"{CI_SECRET_PREFIX} {self.name} {base64.b64encode(self._seed).decode()}"

    def _private(self) -> Ed25519PrivateKey:
        from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

        return Ed25519PrivateKey.from_private_bytes(self._seed)
