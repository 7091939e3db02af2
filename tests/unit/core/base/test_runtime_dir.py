"""`.deepwork/tmp/` is created with a `.gitignore` that hides it from git (docs/runtime.md)."""

from __future__ import annotations

import subprocess
from pathlib import Path

from deepwork_core.base.runtime_dir import ensure_tmp_dir


def test_creates_the_folder_with_a_gitignore_and_keeps_an_existing_one(tmp_path: Path) -> None:
    tmp = ensure_tmp_dir(tmp_path)
    assert tmp == tmp_path / ".deepwork" / "tmp"
    assert (tmp / ".gitignore").read_text() == "*\n"

    (tmp / ".gitignore").write_text("*\n# kept\n")
    assert ensure_tmp_dir(tmp_path) == tmp
    assert (tmp / ".gitignore").read_text() == "*\n# kept\n"


def test_git_sees_nothing_inside(tmp_path: Path) -> None:
    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True, timeout=30)
    tmp = ensure_tmp_dir(tmp_path)
    (tmp / "state.json").write_text("{}")
    status = subprocess.run(
        ["git", "status", "--porcelain", "--untracked-files=all"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=True,
        timeout=30,
    )
    assert status.stdout == ""
