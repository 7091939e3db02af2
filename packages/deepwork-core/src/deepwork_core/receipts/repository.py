"""What `deepwork verify` asks git (docs/verify.md): the base ref, the files the change touches,
the files and trusted keys as committed on the base ref (read by `evidence.trusted_keys`, as
the approvals' are), and whether one commit descends from
another. Every question runs `git` through `base.git` (bounded, never prompting); a failing
answer is a `GitError` the caller turns into a finding, never a pass.
"""

from __future__ import annotations

import hashlib
import os
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

from deepwork_core.base.errors import GitError
from deepwork_core.base.git import run_git
from deepwork_core.evidence.hashes import sha256_file
from deepwork_core.evidence.trusted_keys import TrustedRef, TrustError, trusted_keys
from deepwork_core.receipts.model import DefinitionRoot

#: The base refs tried, in order, when `--base` is not given.
DEFAULT_BASES: Final = ("origin/HEAD", "main", "master")


@dataclass
class Repository:
    """The git work tree at `root`, checked against the commit `base`."""

    root: Path
    base: str
    #: How messages name the base ref (`--base` as given).
    base_name: str | None = None
    #: The trusted keys of each folder on the base ref, read once per folder.
    _listed: dict[str, dict[str, bytes] | TrustError] = field(default_factory=dict)
    #: commit -> (known here, an ancestor of HEAD), asked once per commit.
    _commits: dict[str, tuple[bool, bool]] = field(default_factory=dict)
    #: The hashes of job definition files taken so far (`definition.changed_files`).
    definition_hashes: dict[tuple[DefinitionRoot, str], str | None] = field(default_factory=dict)
    #: Resolved folders of the work tree by relative path (None: outside the project).
    _folders: dict[str, Path | None] = field(default_factory=dict)

    @staticmethod
    def find_base(root: Path, wanted: str | None) -> str | None:
        """The commit `wanted` (else the first of `DEFAULT_BASES` that exists) names; None when
        there is none."""
        for ref in (wanted,) if wanted else DEFAULT_BASES:
            result = run_git(
                ["rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}"], cwd=root, check=False
            )
            if result.returncode == 0 and result.stdout.strip():
                return result.stdout.strip()
        return None

    def current_sha256(self, path: str) -> str | None:
        """The SHA-256 of the regular file `path` of the work tree now (None: gone, not a
        regular file, or outside the project), as `evidence.hashes.sha256_file` gives it; each
        folder is resolved once, which checking many receipts repeats most."""
        folder, _, name = path.rpartition("/")
        if folder not in self._folders:
            resolved = (self.root / folder).resolve()
            inside = resolved == self.root or resolved.is_relative_to(self.root)
            self._folders[folder] = resolved if inside else None
        parent = self._folders[folder]
        if parent is None:
            return None
        try:
            fd = os.open(parent / name, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW)
        except OSError:  # gone, or a link inside the project: as the evidence hashed it
            return sha256_file(self.root, path)
        with os.fdopen(fd, "rb") as handle:
            if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
                return None
            return hashlib.file_digest(handle, "sha256").hexdigest()

    def git(self, *args: str) -> str:
        return run_git(list(args), cwd=self.root).stdout

    def changed_files(self) -> list[str]:
        """Every file the change since the base touches: committed since the merge base with
        HEAD, staged, unstaged, or untracked (and not ignored)."""
        found = run_git(["merge-base", self.base, "HEAD"], cwd=self.root, check=False)
        fork = found.stdout.strip()
        if found.returncode == 1 and not fork:
            raise GitError(
                f"the base ref {self.base_name or self.base[:12]} shares no history with HEAD: "
                "the change since it cannot be told"
            )
        if found.returncode != 0:
            raise GitError(f"git merge-base: {found.stderr.strip() or found.returncode}")
        changed = self.git("diff", "--name-only", "--no-renames", "-z", fork, "--")
        untracked = self.git("ls-files", "--others", "--exclude-standard", "-z")
        return sorted({p for p in (changed + untracked).split("\0") if p})

    def tracked_under(self, folder: str) -> list[str]:
        """The files under `folder` in the work tree: tracked (index) or untracked."""
        tracked = self.git("ls-files", "-z", "--cached", "--others", "--exclude-standard", folder)
        return sorted({p for p in tracked.split("\0") if p})

    def keys_at_base(self, folder: str, kind: str) -> dict[str, bytes] | TrustError:
        """`{name: public key}` of the `<name>.pub` lines of `kind` in `folder` as committed on
        the base ref (`evidence.trusted_keys`), or why none of them can be trusted."""
        if folder not in self._listed:
            try:
                self._listed[folder] = trusted_keys(self.root, self._ref(), folder, kind=kind)
            except TrustError as exc:
                self._listed[folder] = exc
        return self._listed[folder]

    def _ref(self) -> TrustedRef:
        return TrustedRef(name=self.base_name or self.base[:12], commit=self.base)

    def listed_now(self, folder: str) -> set[str]:
        """The names of the `.pub` files in `folder` of the work tree (of the change)."""
        try:
            return {p.name[: -len(".pub")] for p in (self.root / folder).glob("*.pub")}
        except OSError:
            return set()

    def file_at_base(self, path: str) -> bytes | None:
        """The bytes of `path` as committed on the base ref; None when it is not there."""
        result = run_git(["cat-file", "-e", f"{self.base}:{path}"], cwd=self.root, check=False)
        if result.returncode != 0:
            return None
        return self.git("cat-file", "blob", f"{self.base}:{path}").encode()

    def commit_standing(self, commit: str) -> tuple[bool, bool]:
        """(the commit is in this repository, it is an ancestor of HEAD or HEAD itself)."""
        if commit not in self._commits:
            known = run_git(["cat-file", "-e", f"{commit}^{{commit}}"], cwd=self.root, check=False)
            if known.returncode != 0:
                self._commits[commit] = (False, False)
            else:
                result = run_git(
                    ["merge-base", "--is-ancestor", commit, "HEAD"], cwd=self.root, check=False
                )
                if result.returncode not in (0, 1):
                    raise GitError(f"git merge-base --is-ancestor: {result.stderr.strip()}")
                self._commits[commit] = (True, result.returncode == 0)
        return self._commits[commit]
