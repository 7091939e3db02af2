"""Changed-file detection (docs/reviews.md) on real git repositories."""

from __future__ import annotations

from pathlib import Path

import pytest
from deepwork_core.base.errors import ReviewError
from deepwork_review.changes import detect_changes


def test_committed_staged_unstaged_and_untracked_files_count(repo) -> None:
    repo.write("committed.py")
    repo.commit("on the branch")
    repo.write("staged.py")
    repo.git("add", "staged.py")
    repo.write("base.py", "edited but not staged\n")
    repo.write("untracked.py")

    changes = detect_changes(repo.root)

    assert changes.files == ("base.py", "committed.py", "staged.py", "untracked.py")
    assert changes.base_ref == "refs/heads/main"


def test_ignored_files_do_not_count(repo) -> None:
    repo.write(".gitignore", "*.log\nbuild/\n")
    repo.commit("ignore rules")
    repo.write("debug.log")
    repo.write("build/out.py")

    assert detect_changes(repo.root).files == (".gitignore",)


def test_runtime_files_never_count_even_without_a_gitignore(repo) -> None:
    repo.write(".deepwork/tmp/state.json")
    repo.write(".deepwork/tmp/review_instructions/run/x.md")
    repo.write(".deepwork/jobs/a/job.yml")

    assert detect_changes(repo.root).files == (".deepwork/jobs/a/job.yml",)


def test_renamed_file_counts_under_its_new_name(repo) -> None:
    repo.write("old_name.py", "some content that stays the same\n" * 5)
    repo.git("checkout", "-q", "main")
    repo.commit("add a file on main")
    repo.git("checkout", "-q", "feature")
    repo.git("merge", "-q", "main")
    repo.git("mv", "old_name.py", "new_name.py")

    assert detect_changes(repo.root).files == ("new_name.py",)


def test_deleted_files_are_not_reviewed(repo) -> None:
    repo.git("rm", "-q", "base.py")
    repo.write("kept.py")

    assert detect_changes(repo.root).files == ("kept.py",)


def test_a_file_deleted_after_staging_is_not_reviewed(repo) -> None:
    repo.write("fleeting.py")
    repo.git("add", "fleeting.py")
    (repo.root / "fleeting.py").unlink()

    assert detect_changes(repo.root).files == ()


def test_changes_on_main_after_the_branch_point_do_not_count(repo) -> None:
    repo.git("checkout", "-q", "main")
    repo.write("main_only.py")
    repo.commit("main moves on")
    repo.git("checkout", "-q", "feature")
    repo.write("mine.py")

    assert detect_changes(repo.root).files == ("mine.py",)


def test_project_in_a_sub_folder_gets_project_relative_paths(make_repo) -> None:
    repo = make_repo()
    repo.write("project/base.py")
    repo.write("elsewhere/base.py")
    repo.commit("base")
    repo.git("checkout", "-q", "-b", "feature")
    repo.write("project/pkg/changed.py")
    repo.git("add", "project/pkg/changed.py")
    repo.write("project/untracked.py")
    repo.write("elsewhere/changed.py")
    repo.write("project/base.py", "edited\n")
    repo.commit("work")
    repo.write("project/later.py")

    changes = detect_changes(repo.root / "project")

    assert changes.files == ("base.py", "later.py", "pkg/changed.py", "untracked.py")


def test_git_worktree(repo, tmp_path: Path) -> None:
    worktree = tmp_path / "second-tree"
    repo.git("worktree", "add", "-q", "-b", "other", str(worktree), "main")
    (worktree / "in_worktree.py").write_text("x\n")
    repo.git("add", "in_worktree.py", cwd=worktree)
    repo.git("commit", "-q", "-m", "w", cwd=worktree)
    (worktree / "untracked.py").write_text("x\n")
    repo.write("in_main_tree.py")

    assert detect_changes(worktree).files == ("in_worktree.py", "untracked.py")
    assert detect_changes(repo.root).files == ("in_main_tree.py",)


def test_unborn_head_counts_every_non_ignored_file(make_repo) -> None:
    repo = make_repo()
    repo.write(".gitignore", "*.log\n")
    repo.write("a.py")
    repo.write("sub/b.py")
    repo.write("x.log")
    repo.git("add", "a.py")

    changes = detect_changes(repo.root)

    assert changes.files == (".gitignore", "a.py", "sub/b.py")
    assert changes.base_commit is None


def test_detached_head(repo) -> None:
    repo.write("on_branch.py")
    repo.commit("branch work")
    repo.git("checkout", "-q", "--detach", "HEAD")
    repo.write("detached.py")

    assert detect_changes(repo.root).files == ("detached.py", "on_branch.py")


def test_on_the_default_branch_only_uncommitted_changes_count(repo) -> None:
    repo.git("checkout", "-q", "main")
    repo.write("wip.py")

    assert detect_changes(repo.root).files == ("wip.py",)


def test_master_is_used_when_there_is_no_main(make_repo) -> None:
    repo = make_repo()
    repo.git("checkout", "-q", "-b", "master")
    repo.write("base.py")
    repo.commit("base")
    repo.git("checkout", "-q", "-b", "feature")
    repo.write("work.py")
    repo.commit("work")

    changes = detect_changes(repo.root)

    assert changes.base_ref == "refs/heads/master"
    assert changes.files == ("work.py",)


def test_the_remote_head_branch_wins(repo, tmp_path: Path) -> None:
    repo.git("checkout", "-q", "-b", "trunk", "main")
    repo.write("trunk.py")
    repo.commit("trunk")
    repo.git("checkout", "-q", "feature")
    repo.write("mine.py")
    repo.commit("mine")
    remote = tmp_path / "remote.git"
    repo.git("clone", "-q", "--bare", str(repo.root), str(remote))
    repo.git("remote", "add", "origin", str(remote))
    repo.git("fetch", "-q", "origin")
    repo.git("remote", "set-head", "origin", "trunk")

    changes = detect_changes(repo.root)

    assert changes.base_ref == "refs/remotes/origin/trunk"
    # trunk.py is on trunk (the base) but not on feature: it is not a change of this branch.
    assert changes.files == ("mine.py",)


def test_base_ref_override(repo) -> None:
    repo.write("first.py")
    repo.commit("first")
    checkpoint = repo.git("rev-parse", "HEAD").strip()
    repo.write("second.py")
    repo.commit("second")

    assert detect_changes(repo.root).files == ("first.py", "second.py")
    assert detect_changes(repo.root, base_ref=checkpoint).files == ("second.py",)


@pytest.mark.parametrize("ref", ["no-such-branch", "--output=/tmp/x"])
def test_unknown_base_ref_is_a_clear_error(repo, ref: str) -> None:
    with pytest.raises(ReviewError) as caught:
        detect_changes(repo.root, base_ref=ref)
    assert caught.value.code == "review.base_ref_unknown"


def test_outside_git_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(ReviewError) as caught:
        detect_changes(tmp_path)
    assert caught.value.code == "review.not_a_git_repository"


def test_paths_with_spaces_and_unicode(repo) -> None:
    repo.write("with space/ünïcode file.py")

    assert detect_changes(repo.root).files == ("with space/ünïcode file.py",)
