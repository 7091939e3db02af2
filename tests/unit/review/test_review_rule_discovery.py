"""Finding files and `.deepreview` rules: `.gitignore`, `.git`, symlink loops, the parse cache."""

from __future__ import annotations

from pathlib import Path

import pytest
from deepwork_review.rule_discovery import RuleCache, deepreview_sources, list_project_files

from tests.conftest import PY_RULE


def _make_loops(root: Path) -> None:
    (root / "loop1" / "inner").mkdir(parents=True)
    (root / "loop1" / "inner" / "back").symlink_to(root / "loop1", target_is_directory=True)
    (root / "loop2").mkdir()
    (root / "loop2" / "self").symlink_to(root, target_is_directory=True)
    (root / "loop2" / "a").symlink_to(root / "loop2" / "b")
    (root / "loop2" / "b").symlink_to(root / "loop2" / "a")


def test_git_listing_honours_gitignore_and_splits_tracked_from_untracked(repo) -> None:
    repo.write(".gitignore", "build/\n*.log\n")
    repo.write("build/.deepreview", PY_RULE)
    repo.write("debug.log")
    repo.write("new/.deepreview", PY_RULE)
    repo.write(".deepwork/tmp/x.py")

    files = list_project_files(repo.root)

    assert files.in_git
    assert ".deepreview" in files.tracked
    assert "new/.deepreview" in files.untracked
    assert not [path for path in files.all if path.startswith(("build/", ".deepwork/tmp/"))]
    assert "debug.log" not in files.all
    assert deepreview_sources(files.all) == [".deepreview", "new/.deepreview"]


def test_walk_outside_git_skips_dot_git_and_runtime_files(tmp_path: Path) -> None:
    (tmp_path / ".git").mkdir()  # a stray folder named .git, not a repository
    (tmp_path / ".git" / ".deepreview").write_text(PY_RULE)
    (tmp_path / ".deepwork" / "tmp").mkdir(parents=True)
    (tmp_path / ".deepwork" / "tmp" / ".deepreview").write_text(PY_RULE)
    (tmp_path / "a" / "b").mkdir(parents=True)
    (tmp_path / "a" / "b" / ".deepreview").write_text(PY_RULE)

    files = list_project_files(tmp_path.resolve(), only_name=".deepreview")

    assert not files.in_git
    assert files.all == ("a/b/.deepreview",)


@pytest.mark.parametrize("in_git", [True, False], ids=["git", "no-git"])
def test_two_symlink_loops_end_quickly_and_correctly(make_repo, tmp_path: Path, in_git) -> None:
    if in_git:
        root = make_repo().root
    else:
        root = (tmp_path / "plain").resolve()
        root.mkdir()
    (root / ".deepreview").write_text(PY_RULE)
    (root / "loop1").mkdir()
    (root / "loop1" / ".deepreview").write_text(PY_RULE)
    _make_loops(root)

    files = list_project_files(root, only_name=".deepreview")
    everything = list_project_files(root)

    assert deepreview_sources(files.all) == [".deepreview", "loop1/.deepreview"]
    # Symlinks are listed as files (git) or skipped as folders (walk), never entered.
    assert not [path for path in everything.all if path.count("/") > 3]


def test_cache_reuses_parsed_files_until_they_change(tmp_path: Path) -> None:
    root = tmp_path.resolve()
    (root / ".deepreview").write_text(PY_RULE)
    cache = RuleCache()

    first = cache.parse(root, ".deepreview")
    assert cache.parse(root, ".deepreview") is first

    (root / ".deepreview").write_text(PY_RULE.replace("Python files", "Python sources!"))
    second = cache.parse(root, ".deepreview")
    assert second is not first
    assert second.rules[0].description == "Python sources!"


def test_cache_notices_an_edited_or_created_instructions_file(tmp_path: Path) -> None:
    root = tmp_path.resolve()
    (root / ".deepreview").write_text(
        "r:\n  description: d\n  match: {include: ['*']}\n"
        "  review:\n    strategy: individual\n    instructions: {file: guide.md}\n"
    )
    cache = RuleCache()
    assert [p.code for p in cache.parse(root, ".deepreview").problems] == [
        "review.instructions_missing"
    ]

    (root / "guide.md").write_text("one\n")
    assert cache.parse(root, ".deepreview").rules[0].instructions == "one\n"

    (root / "guide.md").write_text("two, longer\n")
    assert cache.parse(root, ".deepreview").rules[0].instructions == "two, longer\n"


def test_load_collects_problems_per_file_and_keeps_going(tmp_path: Path) -> None:
    root = tmp_path.resolve()
    (root / "a").mkdir()
    (root / "a" / ".deepreview").write_text("not: [valid\n")
    (root / "b").mkdir()
    (root / "b" / ".deepreview").write_text(PY_RULE)

    ruleset = RuleCache().load(root, ["a/.deepreview", "b/.deepreview", "gone/.deepreview"])

    assert [rule.source for rule in ruleset.rules] == ["b/.deepreview"]
    assert [str(problem.file) for problem in ruleset.problems] == ["a/.deepreview"]
    assert ruleset.sources == ("a/.deepreview", "b/.deepreview")


def test_symlinked_deepreview_leaving_the_project_is_ignored(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.write_text(PY_RULE)
    root = (tmp_path / "project").resolve()
    root.mkdir()
    (root / ".deepreview").symlink_to(outside)

    ruleset = RuleCache().load(root, [".deepreview"])

    assert ruleset.rules == ()
    assert [problem.code for problem in ruleset.problems] == ["review.config_outside_project"]
