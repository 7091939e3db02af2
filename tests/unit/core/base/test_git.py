"""`run_git`, the one way DeepWork runs git (deepwork_core/base/git.py): a missing folder is
git's own `cannot change to` failure, never "git is not installed"."""

from __future__ import annotations

from pathlib import Path

import pytest
from deepwork_core.base.errors import GitError
from deepwork_core.base.git import repository_root, run_git


def test_a_missing_folder_fails_as_git_would_not_as_git_missing(tmp_path: Path) -> None:
    gone = tmp_path / "removed"
    with pytest.raises(GitError) as failed:
        run_git(["rev-parse", "HEAD"], cwd=gone)
    assert str(failed.value.code) == "git.failed"
    assert f"cannot change to '{gone}'" in failed.value.message
    unchecked = run_git(["status"], cwd=gone, check=False)
    assert unchecked.returncode == 128
    assert repository_root(gone) is None


def test_git_on_path_runs_in_the_folder_given(tmp_path: Path) -> None:
    run_git(["init", "-q"], cwd=tmp_path)
    assert repository_root(tmp_path) == tmp_path.resolve()
