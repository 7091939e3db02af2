"""git's index as the change watch holds it: the mode and object id of each tracked file, and
whether a file on disk still holds exactly those (docs/evidence.md, "The change watch")."""

from __future__ import annotations

import hashlib
import os
import stat
from pathlib import Path

from deepwork_core.base.git import run_git

#: (mode, object id) of a tracked file as the index holds it; mode "" for a special entry.
IndexEntry = tuple[str, str]


def read_index(root: Path) -> dict[str, IndexEntry]:
    """The index entry of every tracked file of the work tree at `root`, by its path."""
    listed = run_git(["ls-files", "-s", "-v", "-z"], cwd=root).stdout
    index: dict[str, IndexEntry] = {}
    for record in listed.split("\0"):
        if not record:
            continue
        head, _, path = record.partition("\t")
        tag, mode, oid, stage = head.split(" ")
        special = tag != "H" or stage != "0"  # assume-unchanged, skip-worktree, unmerged
        index[path] = ("" if special else mode, oid)
    return index


def clean_in_index(entry: IndexEntry, file: Path) -> bool:
    """True when `file` holds exactly what the index's `entry` records (mode and bytes), so
    `git status` would not list it."""
    mode, oid = entry
    if mode not in ("100644", "100755"):
        return False
    try:
        info = os.lstat(file)
        if not stat.S_ISREG(info.st_mode) or bool(info.st_mode & 0o100) != (mode == "100755"):
            return False
        data = file.read_bytes()
    except OSError:
        return False
    digest = hashlib.sha1 if len(oid) == 40 else hashlib.sha256
    return digest(b"blob %d\0" % len(data) + data).hexdigest() == oid
