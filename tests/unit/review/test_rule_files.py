"""The gate's `.deepreview` files: listed by git once per project, then kept fresh by the
project's change watch, so a checkpoint with no rule to apply runs no git."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from deepwork_core.evidence.watch import ChangeWatch
from deepwork_review import rule_discovery
from deepwork_review.rule_discovery import RuleFiles

from tests.fixtures.git_repo import git, init_repo, live_watch

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="inotify is Linux's")

RULE = "rules: {}\n"  # listed, never parsed here


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    path = tmp_path / "repo"
    (path / "src").mkdir(parents=True)
    init_repo(path)
    (path / "src" / "a.py").write_text("a = 1\n")
    git(path, "add", ".")
    git(path, "commit", "-q", "-m", "first")
    return path.resolve()


@pytest.fixture
def watch(repo: Path, tmp_path: Path) -> Iterator[ChangeWatch]:
    with live_watch(repo, tmp_path) as started:
        yield started


@pytest.fixture
def listings(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    """Every `git ls-files` the rule files run (each still runs)."""
    calls: list[Path] = []
    real = rule_discovery.list_project_files

    def counted(root: Path, *, only_name: str | None = None) -> rule_discovery.ProjectFiles:
        calls.append(root)
        return real(root, only_name=only_name)

    monkeypatch.setattr(rule_discovery, "list_project_files", counted)
    return calls


def test_the_rule_files_are_listed_once_while_none_is_written(
    repo: Path, watch: ChangeWatch, listings: list[Path]
) -> None:
    files = RuleFiles()
    assert files.sources(repo, watch) == ()
    (repo / "src" / "b.py").write_text("b = 2\n")  # not a rule file: the list stands
    assert files.sources(repo, watch) == ()
    assert files.sources(repo, watch) == ()
    assert len(listings) == 1


def test_a_rule_file_written_created_or_deleted_is_seen_at_the_next_call(
    repo: Path, watch: ChangeWatch, listings: list[Path]
) -> None:
    files = RuleFiles()
    assert files.sources(repo, watch) == ()
    (repo / "src" / ".deepreview").write_text(RULE)
    assert files.sources(repo, watch) == ("src/.deepreview",)
    (repo / "docs" / "deep").mkdir(parents=True)  # a folder made after the watch started
    (repo / "docs" / "deep" / ".deepreview").write_text(RULE)
    assert files.sources(repo, watch) == ("docs/deep/.deepreview", "src/.deepreview")
    (repo / "src" / ".deepreview").unlink()
    assert files.sources(repo, watch) == ("docs/deep/.deepreview",)
    assert files.sources(repo, watch) == ("docs/deep/.deepreview",)
    assert len(listings) == 4


def test_git_moving_its_index_lists_them_again(
    repo: Path, watch: ChangeWatch, listings: list[Path]
) -> None:
    files = RuleFiles()
    files.sources(repo, watch)
    (repo / "src" / "b.py").write_text("b = 2\n")
    git(repo, "add", "src/b.py")  # the watch cannot vouch across a change of git's files
    files.sources(repo, watch)
    assert len(listings) == 2


def test_without_a_watch_every_call_lists(repo: Path, listings: list[Path]) -> None:
    files = RuleFiles()
    (repo / ".deepreview").write_text(RULE)
    assert files.sources(repo, None) == (".deepreview",)
    assert files.sources(repo, None) == (".deepreview",)
    assert len(listings) == 2


def test_a_watch_that_is_not_live_lists_every_time(
    repo: Path, tmp_path: Path, listings: list[Path]
) -> None:
    idle = ChangeWatch(repo, global_excludes=tmp_path / "none")  # never started
    files = RuleFiles()
    files.sources(repo, idle)
    files.sources(repo, idle)
    assert len(listings) == 2
