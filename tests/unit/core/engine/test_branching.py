"""Workflow branches (docs/runtime.md) against real git repositories in tmp_path."""

from __future__ import annotations

from datetime import date
from pathlib import Path

import pytest
from deepwork_core.engine.branching import (
    BranchOutcome,
    ensure_workflow_branch,
    workflow_branch_name,
)

from tests.fixtures.git_repo import git, init_repo

TODAY = date(2026, 3, 14)
BRANCH = "deepwork/demo-acme-2026-03-14"


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    path = tmp_path / "repo"
    path.mkdir()
    init_repo(path)
    (path / "tracked.txt").write_text("v1\n")
    (path / "other.txt").write_text("o1\n")
    git(path, "add", ".")
    git(path, "commit", "-q", "-m", "first")
    return path


def ensure(repo: Path, label: str = "acme") -> BranchOutcome:
    return ensure_workflow_branch(repo, job_name="demo", label=label, today=TODAY)


def head(repo: Path) -> str:
    return git(repo, "symbolic-ref", "--short", "HEAD")


def test_clean_repo_creates_branch_from_head(repo: Path) -> None:
    base = git(repo, "rev-parse", "HEAD")
    outcome = ensure(repo)
    assert (outcome.branch_name, outcome.previous_branch) == (BRANCH, "main")
    # The user is told in words where the repository went and how to go back.
    assert outcome.note is not None
    assert f"from `main` to the branch `{BRANCH}`" in outcome.note
    assert "`git switch main`" in outcome.note
    assert head(repo) == BRANCH
    assert git(repo, "rev-parse", "HEAD") == base


def test_dirty_changes_are_carried_over(repo: Path) -> None:
    (repo / "tracked.txt").write_text("staged\n")
    git(repo, "add", "tracked.txt")
    (repo / "other.txt").write_text("unstaged\n")
    (repo / "new.txt").write_text("untracked\n")
    before = git(repo, "status", "--porcelain")

    outcome = ensure(repo)

    assert outcome.branch_name == BRANCH
    assert head(repo) == BRANCH
    assert git(repo, "status", "--porcelain") == before
    assert git(repo, "diff", "--cached", "--name-only") == "tracked.txt"
    assert (repo / "tracked.txt").read_text() == "staged\n"
    assert (repo / "other.txt").read_text() == "unstaged\n"
    assert (repo / "new.txt").read_text() == "untracked\n"
    assert git(repo, "stash", "list") == ""


def test_existing_branch_is_switched_to(repo: Path) -> None:
    git(repo, "branch", BRANCH)
    git(repo, "switch", "-q", BRANCH)
    (repo / "later.txt").write_text("x\n")
    git(repo, "add", "later.txt")
    git(repo, "commit", "-q", "-m", "on branch")
    tip = git(repo, "rev-parse", "HEAD")
    git(repo, "switch", "-q", "main")
    (repo / "other.txt").write_text("local edit\n")

    outcome = ensure(repo)

    assert outcome.branch_name == BRANCH
    assert head(repo) == BRANCH
    assert git(repo, "rev-parse", "HEAD") == tip
    assert (repo / "other.txt").read_text() == "local edit\n"


def test_already_on_branch_stays(repo: Path) -> None:
    git(repo, "switch", "-q", "-c", BRANCH)
    (repo / "new.txt").write_text("untracked\n")
    assert ensure(repo) == BranchOutcome(branch_name=BRANCH)
    assert head(repo) == BRANCH
    assert (repo / "new.txt").exists()


def test_conflicting_switch_is_refused_with_note_and_nothing_lost(repo: Path) -> None:
    git(repo, "switch", "-q", "-c", BRANCH)
    (repo / "tracked.txt").write_text("branch version\n")
    git(repo, "commit", "-q", "-am", "diverge")
    git(repo, "switch", "-q", "main")
    (repo / "tracked.txt").write_text("precious local work\n")
    (repo / "new.txt").write_text("untracked\n")
    before = git(repo, "status", "--porcelain")

    outcome = ensure(repo)

    assert outcome.branch_name is None
    assert outcome.note is not None
    assert BRANCH in outcome.note
    assert "tracked.txt" in outcome.note  # git's own reason is quoted
    assert head(repo) == "main"
    assert (repo / "tracked.txt").read_text() == "precious local work\n"
    assert (repo / "new.txt").read_text() == "untracked\n"
    assert git(repo, "status", "--porcelain") == before
    assert git(repo, "stash", "list") == ""


def test_unborn_head_gets_the_branch_and_keeps_staged_files(tmp_path: Path) -> None:
    repo = tmp_path / "empty"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    (repo / "a.txt").write_text("staged\n")
    git(repo, "add", "a.txt")
    (repo / "b.txt").write_text("untracked\n")

    outcome = ensure(repo)

    assert outcome.branch_name == BRANCH
    assert outcome.note is not None
    assert "no commits" in outcome.note
    assert head(repo) == BRANCH
    assert git(repo, "diff", "--cached", "--name-only") == "a.txt"
    assert (repo / "b.txt").read_text() == "untracked\n"


def test_detached_head_creates_branch_at_that_commit(repo: Path) -> None:
    commit = git(repo, "rev-parse", "HEAD")
    git(repo, "switch", "-q", "--detach", commit)
    outcome = ensure(repo)
    assert outcome.branch_name == BRANCH
    assert head(repo) == BRANCH
    assert git(repo, "rev-parse", "HEAD") == commit


def test_not_a_repository_gives_note_and_no_branch(tmp_path: Path) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    outcome = ensure(plain)
    assert outcome.branch_name is None
    assert outcome.note is not None
    assert "not a git repository" in outcome.note
    assert not (plain / ".git").exists()


def test_project_in_a_subfolder_of_the_repository(repo: Path) -> None:
    sub = repo / "project"
    sub.mkdir()
    assert ensure(sub).branch_name == BRANCH
    assert head(repo) == BRANCH


@pytest.mark.parametrize(
    ("label", "expected"),
    [
        ("acme", "deepwork/demo-acme-2026-03-14"),
        ("Q1 2026", "deepwork/demo-Q1-2026-2026-03-14"),
        ("../../etc/passwd", "deepwork/demo-etc-passwd-2026-03-14"),
        ("a..b~c^d:e?f*g[h\\i", "deepwork/demo-a.b-c-d-e-f-g-h-i-2026-03-14"),
        ("x.lock", "deepwork/demo-x-lock-2026-03-14"),
        ("@{-1}", "deepwork/demo-1-2026-03-14"),
        ("   ", "deepwork/demo-2026-03-14"),
        ("ünïcødé ☃", "deepwork/demo-n-c-d-2026-03-14"),
        (".hidden.", "deepwork/demo-hidden-2026-03-14"),
        ("x" * 200, "deepwork/demo-" + "x" * 60 + "-2026-03-14"),
    ],
)
def test_odd_instance_ids_give_valid_branch_names(repo: Path, label: str, expected: str) -> None:
    name = workflow_branch_name("demo", label, TODAY)
    assert name == expected
    git(repo, "check-ref-format", "--branch", name)  # raises if git rejects it
    outcome = ensure(repo, label)
    assert outcome.branch_name == expected
    assert head(repo) == expected


def test_git_missing_gives_note(repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(repo / "no-such-bin"))
    outcome = ensure(repo)
    assert outcome.branch_name is None
    assert outcome.note is not None
    assert "git" in outcome.note
