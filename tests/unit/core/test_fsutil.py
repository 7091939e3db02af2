"""The cross-process lock: exclusive by default, shared on request."""

from __future__ import annotations

from pathlib import Path

import pytest
from deepwork_core.errors import SessionError
from deepwork_core.fsutil import file_lock


def test_shared_locks_coexist_and_exclude_an_exclusive_one(tmp_path: Path) -> None:
    lock = tmp_path / "folder.lock"
    with file_lock(lock, shared=True), file_lock(lock, shared=True, timeout=0):
        with pytest.raises(SessionError) as caught, file_lock(lock, timeout=0):
            pass
        assert caught.value.code == "session.lock_timeout"
    with file_lock(lock, timeout=0):  # free again
        pass


def test_an_exclusive_lock_excludes_a_shared_one(tmp_path: Path) -> None:
    lock = tmp_path / "folder.lock"
    with file_lock(lock), pytest.raises(SessionError), file_lock(lock, shared=True, timeout=0):
        pass
