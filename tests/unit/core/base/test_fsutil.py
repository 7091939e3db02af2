"""The cross-process lock: exclusive by default, shared on request."""

from __future__ import annotations

from pathlib import Path

import pytest
from deepwork_core.base.fsutil import LockTimeout, file_lock


def test_shared_locks_coexist_and_exclude_an_exclusive_one(tmp_path: Path) -> None:
    lock = tmp_path / "folder.lock"
    with (
        file_lock(lock, shared=True),
        file_lock(lock, shared=True, timeout=0),
        pytest.raises(LockTimeout),
        file_lock(lock, timeout=0),
    ):
        pass
    with file_lock(lock, timeout=0):  # free again
        pass


def test_an_exclusive_lock_excludes_a_shared_one(tmp_path: Path) -> None:
    lock = tmp_path / "folder.lock"
    with file_lock(lock), pytest.raises(LockTimeout), file_lock(lock, shared=True, timeout=0):
        pass
