"""The scope guard against real git repositories: what a step changed, and what it declared.

Every test runs twice: with `git status` at each snapshot, and with a change watch that answers
from the files written since the step began (falling back to `git status` where it must). Both
must find the same changes.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from deepwork_core.evidence.scope import (
    RepoSnapshot,
    changed_between,
    take_snapshot,
    undeclared,
    watched_snapshot,
)
from deepwork_core.evidence.watch import ChangeWatch

from tests.fixtures.git_repo import git, init_repo

#: The watch of each project folder, in the runs that use one.
_WATCHES: dict[Path, ChangeWatch] = {}
_WATCHING: list[bool] = [False]


@pytest.fixture(autouse=True, params=["git status", "change watch"])
def mode(request: pytest.FixtureRequest) -> Iterator[str]:
    _WATCHING[0] = request.param == "change watch"
    yield request.param
    for watch in _WATCHES.values():
        watch.close()
    _WATCHES.clear()


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    path = tmp_path / "repo"
    path.mkdir()
    init_repo(path)
    (path / "src").mkdir()
    (path / "src" / "a.py").write_text("a = 1\n")
    (path / "README.md").write_text("readme\n")
    (path / ".gitignore").write_text("build/\n")
    git(path, "add", ".")
    git(path, "commit", "-q", "-m", "first")
    return path


def _watch(root: Path) -> ChangeWatch | None:
    if not _WATCHING[0]:
        return None
    if root not in _WATCHES:
        _WATCHES[root] = ChangeWatch(root)
        assert _WATCHES[root].start()
    return _WATCHES[root]


def snap(repo: Path, before: RepoSnapshot | None = None) -> RepoSnapshot:
    watch = _watch(repo)
    snapshot = None
    if before is not None and watch is not None:
        snapshot = watched_snapshot(repo, before, watch)
    if snapshot is None:
        snapshot = take_snapshot(repo, prefix=before.prefix if before else None, watch=watch)
    assert snapshot is not None
    return snapshot


def changes(repo: Path, before: RepoSnapshot) -> list[str]:
    return changed_between(repo, before, snap(repo, before))


def test_outside_git_the_guard_is_off(tmp_path: Path) -> None:
    assert take_snapshot(tmp_path) is None


def test_a_clean_step_changes_nothing(repo: Path) -> None:
    before = snap(repo)
    assert before.head == git(repo, "rev-parse", "HEAD")
    assert before.dirty == {}
    assert changes(repo, before) == []


def test_edits_new_files_and_deletions_during_the_step_are_seen(repo: Path) -> None:
    before = snap(repo)
    (repo / "src" / "a.py").write_text("a = 2\n")
    (repo / "src" / "new").mkdir()
    (repo / "src" / "new" / "b.py").write_text("b\n")
    (repo / "README.md").unlink()
    (repo / "build").mkdir()
    (repo / "build" / "out.bin").write_text("ignored\n")
    assert changes(repo, before) == ["README.md", "src/a.py", "src/new/b.py"]


def test_files_already_changed_when_the_step_began_count_only_if_touched_again(
    repo: Path,
) -> None:
    (repo / "src" / "a.py").write_text("earlier step\n")
    (repo / "notes.md").write_text("earlier step\n")
    before = snap(repo)
    assert set(before.dirty) == {"src/a.py", "notes.md"}
    assert changes(repo, before) == []
    (repo / "notes.md").write_text("this step, longer\n")
    assert changes(repo, before) == ["notes.md"]


def test_a_commit_during_the_step_does_not_hide_what_it_changed(repo: Path) -> None:
    (repo / "carried.md").write_text("from the last step\n")
    before = snap(repo)
    (repo / "src" / "a.py").write_text("a = 3\n")
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "step")
    # carried.md was committed as it was: not a change of this step.
    assert changes(repo, before) == ["src/a.py"]


def test_reverting_a_file_that_was_changed_at_the_start_is_a_change(repo: Path) -> None:
    (repo / "src" / "a.py").write_text("dirty\n")
    before = snap(repo)
    git(repo, "checkout", "--", "src/a.py")
    assert changes(repo, before) == ["src/a.py"]


def test_a_project_inside_a_repository_sees_its_own_files_only(repo: Path) -> None:
    project = repo / "src"
    before = snap(project)
    assert before.prefix == "src/"
    (project / "a.py").write_text("changed\n")
    (repo / "README.md").write_text("outside the project\n")
    assert changed_between(project, before, snap(project, before)) == ["a.py"]


def test_the_first_commit_of_a_repository_during_a_step(tmp_path: Path) -> None:
    git(tmp_path, "init", "-q", "-b", "main")
    git(tmp_path, "config", "user.email", "t@example.com")
    git(tmp_path, "config", "user.name", "Tester")
    before = snap(tmp_path)
    assert before.head is None
    (tmp_path / "x.txt").write_text("x\n")
    git(tmp_path, "add", ".")
    git(tmp_path, "commit", "-q", "-m", "first")
    assert changes(tmp_path, before) == ["x.txt"]


def test_undeclared_leaves_out_outputs_and_may_change_globs() -> None:
    changed = ["docs/guide/a.md", "out/report.md", "src/x.py", "CHANGELOG.md"]
    assert undeclared(changed, ["out/report.md"], []) == [
        "docs/guide/a.md",
        "src/x.py",
        "CHANGELOG.md",
    ]
    assert undeclared(changed, ["out/report.md"], ["docs/**", "./CHANGELOG.md"]) == ["src/x.py"]
    assert undeclared(changed, [], ["*.md"]) == ["docs/guide/a.md", "out/report.md", "src/x.py"]


def test_deepworks_runtime_folder_is_never_a_change(repo: Path) -> None:
    before = snap(repo)
    (repo / ".deepwork" / "tmp").mkdir(parents=True)
    (repo / ".deepwork" / "tmp" / "session_x.json").write_text("{}\n")
    assert changes(repo, before) == []
