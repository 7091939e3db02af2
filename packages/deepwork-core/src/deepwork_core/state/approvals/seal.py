"""The per-project approval key and the MAC that seals each approval decision.

A decision written by `deepwork approve` or the client's form carries an HMAC-SHA256 over a
canonical JSON of what was decided (session, request, steps, shown hashes, approved, comment,
channel, actor, terminal, time), keyed with a secret of the project that lives outside the
agent-writable `.deepwork/` tree. The command line and the server choose the key file and pass it
down; nothing here reads the environment. What this does and does not protect against is on
docs/security.md ("Approvals").

The key is read again whenever its file changes (another inode, size or modification time), so a
key replaced on disk, as docs/security.md advises after an unsafe one, is used at once, without a
restart; a key file that vanished is made anew on the next use.

The key file holds 32 random bytes. It is created with mode 0600, all at once (written under a
temporary name, then hard-linked into place, so no reader ever sees half a key and two processes
creating it at the same time end up with the same one). A key file that is a symbolic link, not a
regular file, open to group or others, owned by someone else or of the wrong size is refused
(`approval.key_unsafe`), never repaired silently.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import hmac
import json
import os
import secrets
import stat
import threading
from collections.abc import Mapping
from datetime import UTC, datetime
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Final, Protocol

from deepwork_core.base.error_codes import ErrorCode
from deepwork_core.base.errors import DeepWorkError

if TYPE_CHECKING:
    from deepwork_core.evidence.hashes import ShownOutput

#: Length of the secret in the key file, in bytes.
KEY_BYTES: Final = 32
#: Mode bits a key file must not have: any permission for group or others.
_OPEN_TO_OTHERS: Final = 0o077
#: Binds a MAC to its purpose and canonical form; a new form gets a new label.
_LABEL: Final = "deepwork-approval-v2"
#: Binds a request's seal to its purpose and canonical form.
REQUEST_LABEL: Final = "deepwork-approval-request-v1"
#: How the errors of `read_secret` and `create_secret` name the project's approval key.
APPROVAL_KEY: Final = "approval key"


class ApprovalKeyError(DeepWorkError):
    """The approval key cannot be used (`approval.key_unsafe`, `approval.key_unavailable`)."""

    code = ErrorCode.APPROVAL_KEY_UNAVAILABLE


class ApprovalKey:
    """The secret of one project's approvals, in the file `path` (read or created on first use)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._secret: bytes | None = None
        self._stamp: tuple[int, int, int, int] | None = None
        self._lock = threading.Lock()

    def secret(self) -> bytes:
        """The 32-byte secret as the key file holds it now; creates the file when there is none."""
        with self._lock:
            stamp = _stamp(self.path)
            if self._secret is None or stamp is None or stamp != self._stamp:
                self._secret, self._stamp = load_or_create_secret(self.path)
            return self._secret

    def mac(self, fields: Mapping[str, object], label: str = _LABEL) -> str:
        """The hex HMAC-SHA256 of `fields` (JSON values) in their canonical form."""
        return hmac.new(self.secret(), canonical(fields, label), hashlib.sha256).hexdigest()

    def verifies(self, fields: Mapping[str, object], mac: str, label: str = _LABEL) -> bool:
        """True when `mac` is the MAC of `fields` under this key (compared in constant time)."""
        return hmac.compare_digest(self.mac(fields, label), mac)


def canonical(fields: Mapping[str, object], label: str = _LABEL) -> bytes:
    """`fields` with `label` as one JSON text: sorted keys, no spaces, ASCII only."""
    document = {"label": label, **fields}
    return json.dumps(document, sort_keys=True, separators=(",", ":"), ensure_ascii=True).encode()


def _stamp(path: Path) -> tuple[int, int, int, int] | None:
    """What identifies the key file's present content cheaply; None when there is none."""
    try:
        info = path.lstat()
    except OSError:
        return None
    return (info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns)


def load_or_create_secret(path: Path) -> tuple[bytes, tuple[int, int, int, int] | None]:
    """The 32-byte secret in `path` (made first when there is none) and its file's stamp."""
    try:
        return read_secret(path), _stamp(path)
    except FileNotFoundError:
        pass
    create_secret(path)
    try:
        return read_secret(path), _stamp(path)
    except FileNotFoundError:
        raise ApprovalKeyError(f"approval key {path} vanished right after it was made") from None


def read_secret(path: Path, *, what: str = APPROVAL_KEY) -> bytes:
    """The secret in `path`; FileNotFoundError when there is no key file yet. `what` names the
    key in the errors (the approval key, an approver's key, the gate key)."""
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
    try:
        fd = os.open(path, flags)
    except FileNotFoundError:
        raise
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise _unsafe(path, "is a symbolic link", what) from None
        raise _unavailable(path, exc, what) from None
    try:
        info = os.fstat(fd)
        _check_file(path, info, what)
        data = os.read(fd, KEY_BYTES + 1)
    except OSError as exc:
        raise _unavailable(path, exc, what) from None
    finally:
        os.close(fd)
    if len(data) != KEY_BYTES:
        raise _unsafe(path, f"holds {len(data)} bytes, not a {KEY_BYTES}-byte key", what)
    return data


def _check_file(path: Path, info: os.stat_result, what: str) -> None:
    if not stat.S_ISREG(info.st_mode):
        raise _unsafe(path, "is not a regular file", what)
    mode = stat.S_IMODE(info.st_mode)
    if mode & _OPEN_TO_OTHERS:
        raise _unsafe(path, f"has mode {mode:04o}; only its owner may read it (chmod 600)", what)
    if info.st_uid != os.geteuid():
        raise _unsafe(path, f"belongs to user id {info.st_uid}, not to this user", what)


def create_secret(path: Path, *, what: str = APPROVAL_KEY) -> None:
    """Make a new 32-byte key file at `path` (mode 0600), unless another process makes one
    first."""
    try:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        draft = path.with_name(f".{path.name}.{secrets.token_hex(8)}.new")
        fd = os.open(draft, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    except OSError as exc:
        raise _unavailable(path, exc, what) from None
    try:
        try:
            os.fchmod(fd, 0o600)
            _write_all(fd, secrets.token_bytes(KEY_BYTES))
            os.fsync(fd)
        finally:
            os.close(fd)
        with contextlib.suppress(FileExistsError):  # another process made it first: keep theirs
            os.link(draft, path, follow_symlinks=False)
    except OSError as exc:
        raise _unavailable(path, exc, what) from None
    finally:
        with contextlib.suppress(OSError):
            draft.unlink()


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def _unsafe(path: Path, why: str, what: str) -> ApprovalKeyError:
    after = ", and decisions sealed with the old one stop counting" if what == APPROVAL_KEY else ""
    return ApprovalKeyError(
        f"{what} {path} {why}; fix it or delete it (a new key is made{after})",
        code=ErrorCode.APPROVAL_KEY_UNSAFE,
    )


def _unavailable(path: Path, exc: OSError, what: str) -> ApprovalKeyError:
    return ApprovalKeyError(
        f"{what} {path} cannot be used: {exc.strerror or exc}",
        code=ErrorCode.APPROVAL_KEY_UNAVAILABLE,
    )


class SealedRequest(Protocol):
    """What a request's seal covers (`deepwork_core.state.approvals.models.ApprovalRequest`)."""

    @property
    def session_id(self) -> str: ...
    @property
    def request_id(self) -> str: ...
    @property
    def job_name(self) -> str: ...
    @property
    def workflow_name(self) -> str: ...
    @property
    def step_ids(self) -> list[str]: ...
    @property
    def prompt(self) -> str: ...
    @property
    def shown(self) -> list[ShownOutput]: ...
    @property
    def requested_at(self) -> datetime: ...
    @property
    def mac(self) -> str | None: ...


class SealedDecision(Protocol):
    """What a decision's seal covers (`deepwork_core.state.approvals.models.ApprovalDecision`)."""

    @property
    def signer(self) -> str | None: ...
    @property
    def request_id(self) -> str: ...
    @property
    def shown(self) -> list[ShownOutput]: ...
    @property
    def approved(self) -> bool: ...
    @property
    def comment(self) -> str | None: ...
    @property
    def channel(self) -> StrEnum: ...
    @property
    def actor(self) -> str: ...
    @property
    def terminal(self) -> str | None: ...
    @property
    def decided_at(self) -> datetime: ...


def request_fields(request: SealedRequest) -> dict[str, object]:
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
    session_id: str, request: SealedRequest, decision: SealedDecision
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
