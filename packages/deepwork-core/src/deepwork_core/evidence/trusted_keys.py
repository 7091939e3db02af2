"""Public keys trusted from a git ref: a folder's `.pub` files as committed on the base branch.

A key DeepWork trusts (a human approver's, and any other kind a caller names by its folder and
the first word of its line) is never read from the working tree, where an agent writes freely,
but from a commit: the files of `folder` as committed on the trusted ref, the way code hosts
read CODEOWNERS from a pull request's base branch. The ref is `approvals.trusted_ref` of
`.deepwork/config.yml` when set (a ref that does not resolve is `trust.ref_not_found`, naming
it), else the remote default branch (`origin/HEAD`), else `main`, else `master`.

Each `.pub` file is one line, `<kind> ed25519 <base64 of the 32-byte public key>`, named
`<name>.pub`. A `.pub` on the ref that is not such a line, is larger than 4 KiB, is not a
regular file (a symbolic link, a folder) or has a name that cannot name a key is
`trust.key_malformed`, naming the file: nothing is trusted from that folder until it is fixed
on the ref. Other files in the folder (a README) are ignored.

A commit's content never changes, so the keys read at a commit are kept (`_keys_at`, at most
`_CACHE_SIZE` folders); each call only asks git which commit the ref names now. docs/security.md
says where the boundary is (a protected base branch on the code host) and what a local checkout
can promise.
"""

from __future__ import annotations

import base64
import binascii
import functools
import re
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Final

from deepwork_core.base.error_codes import ErrorCode
from deepwork_core.base.errors import DeepWorkError
from deepwork_core.base.git import repository_root, run_git

#: The refs tried, in order, when the project names none (`approvals.trusted_ref`).
DEFAULT_REFS: Final = ("origin/HEAD", "main", "master")
#: The first word of an approver's `.pub` line (`.deepwork/approvers/`).
APPROVER_KIND: Final = "deepwork-approver"
#: A key's name: the stem of its `.pub` file.
KEY_NAME: Final = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
#: A `.pub` file larger than this is malformed; real ones are under 100 bytes.
MAX_PUB_BYTES: Final = 4096
#: A ref name a project may configure: no option look-alikes, spaces or control characters.
_REF_NAME: Final = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_./@{}^~+-]{0,199}")
_CACHE_SIZE: Final = 256
_BLOB_MODES: Final = frozenset({"100644", "100755"})


class TrustError(DeepWorkError):
    """Keys cannot be trusted from the ref: it does not exist (`trust.ref_not_found`) or a
    `.pub` on it is malformed (`trust.key_malformed`)."""

    code = ErrorCode.TRUST_REF_NOT_FOUND


@dataclass(frozen=True, slots=True)
class TrustedRef:
    """The ref keys are trusted from: its `name` as messages say it (`origin/main` for
    `origin/HEAD`) and the `commit` it names now."""

    name: str
    commit: str


def public_line(public: bytes, kind: str = APPROVER_KIND) -> str:
    """The content of a `.pub` file of `kind` for the raw public key `public`."""
    return f"{kind} ed25519 {base64.b64encode(public).decode()}\n"


def parse_public_line(text: str, kind: str = APPROVER_KIND) -> bytes | None:
    """The raw 32-byte public key of a `.pub` file's text of `kind`; None when it is not one."""
    words = text.split()
    if len(words) != 3 or words[0] != kind or words[1] != "ed25519":
        return None
    try:
        raw = base64.b64decode(words[2], validate=True)
    except (binascii.Error, ValueError):
        return None
    return raw if len(raw) == 32 else None


def check_ref_name(ref: str) -> str:
    """`ref` when it can name a git ref here; else `trust.ref_not_found` naming it."""
    if not _REF_NAME.fullmatch(ref) or ".." in ref:
        raise TrustError(
            f"{ref!r} cannot name a git ref to trust keys from (approvals.trusted_ref)",
            code=ErrorCode.TRUST_REF_NOT_FOUND,
        )
    return ref


def resolve_trusted_ref(repo_root: Path, configured: str | None) -> TrustedRef:
    """The ref keys are trusted from in the repository of `repo_root`: `configured`
    (`approvals.trusted_ref`), else the first of `DEFAULT_REFS` that exists.

    Raises `trust.ref_not_found` naming the ref (or the refs tried) when it does not resolve to
    a commit, or when `repo_root` is not in a git repository.
    """
    if not repo_root.is_dir() or repository_root(repo_root) is None:
        raise TrustError(
            f"{repo_root} is not in a git repository, and keys are trusted only as committed on "
            "its base branch: keep the project in git (docs/security.md)",
            code=ErrorCode.TRUST_REF_NOT_FOUND,
        )
    candidates = (check_ref_name(configured),) if configured else DEFAULT_REFS
    for ref in candidates:
        commit = _commit_of(repo_root, ref)
        if commit is not None:
            return TrustedRef(name=_display_name(repo_root, ref), commit=commit)
    if configured:
        raise TrustError(
            f"approvals.trusted_ref names {configured!r}, which is no commit in {repo_root} "
            f"(fetch it, or fix .deepwork/config.yml)",
            code=ErrorCode.TRUST_REF_NOT_FOUND,
        )
    raise TrustError(
        f"none of {', '.join(DEFAULT_REFS)} exists in {repo_root}, so no base branch says which "
        "keys to trust: set approvals.trusted_ref in .deepwork/config.yml",
        code=ErrorCode.TRUST_REF_NOT_FOUND,
    )


def trusted_keys(
    repo_root: Path, ref: str | TrustedRef, folder: str, *, kind: str = APPROVER_KIND
) -> dict[str, bytes]:
    """`{name: raw public key}` of the `<name>.pub` files of `folder` (relative to `repo_root`,
    POSIX) as committed on `ref` (a ref name, resolved now, or a `TrustedRef`).

    Raises `trust.ref_not_found` for a ref that names no commit and `trust.key_malformed`,
    naming the file, for a `.pub` on it that is not one key of `kind`.
    """
    if isinstance(ref, str):
        commit = _commit_of(repo_root, check_ref_name(ref))
        if commit is None:
            raise TrustError(
                f"{ref!r} is no commit in {repo_root}", code=ErrorCode.TRUST_REF_NOT_FOUND
            )
        ref = TrustedRef(name=ref, commit=commit)
    pairs = _keys_at(str(repo_root.resolve()), ref.commit, _folder(folder), kind, ref.name)
    return dict(pairs)


def committed_blob(repo_root: Path, commit: str, path: str) -> str | None:
    """The object id of the file `path` (relative to `repo_root`) at `commit`; None when the
    commit has no regular file there."""
    result = run_git(["ls-tree", "-z", commit, "--", path], cwd=repo_root, check=False)
    for entry in result.stdout.split("\0"):
        meta, _, _ = entry.partition("\t")
        words = meta.split()
        if len(words) == 3 and words[0] in _BLOB_MODES and words[1] == "blob":
            return words[2]
    return None


def where_key_is(repo_root: Path, ref: TrustedRef, folder: str, name: str) -> str:
    """Why `folder/<name>.pub` is not trusted on `ref`, for `approval.untrusted_key`: only in
    the working tree (untracked or changed), committed on the current branch alone, or absent."""
    path = f"{_folder(folder)}/{name}.pub"
    on_disk = (repo_root / path).is_file()
    head = _commit_of(repo_root, "HEAD")
    in_head = head is not None and committed_blob(repo_root, head, path) is not None
    if on_disk and not in_head:
        return f"{path} is only in the working tree (not committed), and not on {ref.name}"
    if in_head:
        return f"{path} is committed on the current branch but not as it is on {ref.name}"
    return f"no {path} is committed on {ref.name}"


def _folder(folder: str) -> str:
    cleaned = PurePosixPath(folder).as_posix().strip("/")
    if not cleaned or cleaned.startswith("-") or ".." in PurePosixPath(cleaned).parts:
        raise ValueError(f"not a folder of the project: {folder!r}")
    return cleaned


def _commit_of(repo_root: Path, ref: str) -> str | None:
    result = run_git(
        ["rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}"], cwd=repo_root, check=False
    )
    commit = result.stdout.strip()
    return commit if result.returncode == 0 and commit else None


def _display_name(repo_root: Path, ref: str) -> str:
    """`origin/main` for `origin/HEAD`, else `ref` as given."""
    if not ref.endswith("/HEAD"):
        return ref
    result = run_git(["rev-parse", "--abbrev-ref", ref], cwd=repo_root, check=False)
    shown = result.stdout.strip()
    return shown if result.returncode == 0 and shown else ref


@functools.lru_cache(maxsize=_CACHE_SIZE)
def _keys_at(
    repo_root: str, commit: str, folder: str, kind: str, ref_name: str
) -> tuple[tuple[str, bytes], ...]:
    """The keys of `folder` at `commit` (a commit never changes, so this is kept)."""
    root = Path(repo_root)
    listing = run_git(["ls-tree", "-z", "-l", commit, "--", f"{folder}/"], cwd=root)
    keys: list[tuple[str, bytes]] = []
    for entry in listing.stdout.split("\0"):
        meta, _, path = entry.partition("\t")
        if not path.endswith(".pub"):
            continue
        keys.append((_name_of(path, ref_name), _read_key(root, meta, path, kind, ref_name)))
    return tuple(sorted(keys))


def _name_of(path: str, ref_name: str) -> str:
    name = PurePosixPath(path).name[: -len(".pub")]
    if not KEY_NAME.fullmatch(name):
        raise _malformed(path, ref_name, "its name is not letters, digits, '.', '_' and '-'")
    return name


def _read_key(root: Path, meta: str, path: str, kind: str, ref_name: str) -> bytes:
    words = meta.split()
    if len(words) != 4 or words[0] not in _BLOB_MODES or words[1] != "blob":
        raise _malformed(path, ref_name, "it is not a regular file")
    if not words[3].isdigit() or int(words[3]) > MAX_PUB_BYTES:
        raise _malformed(path, ref_name, f"it is larger than {MAX_PUB_BYTES} bytes")
    text = run_git(["cat-file", "blob", words[2]], cwd=root).stdout
    public = parse_public_line(text, kind)
    if public is None:
        raise _malformed(path, ref_name, f"it is not one line `{kind} ed25519 <base64 key>`")
    return public


def _malformed(path: str, ref_name: str, why: str) -> TrustError:
    return TrustError(
        f"{path} on {ref_name} is not a public key: {why}. No key of its folder is trusted "
        f"until it is fixed on {ref_name}",
        code=ErrorCode.TRUST_KEY_MALFORMED,
    )
