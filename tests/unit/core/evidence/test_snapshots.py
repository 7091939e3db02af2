"""A step's snapshot from the change watch: what `git status` would note, without running git."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from deepwork_core.evidence import snapshots as module
from deepwork_core.evidence.scope import RepoSnapshot, take_snapshot
from deepwork_core.evidence.snapshots import Snapshots
from deepwork_core.evidence.watch import ChangeWatch

from tests.fixtures.git_repo import git, init_repo, live_watch

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="inotify is Linux's")


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    path = tmp_path / "repo"
    (path / "src").mkdir(parents=True)
    init_repo(path)
    (path / "src" / "a.txt").write_text("a\n")
    (path / ".gitignore").write_text("*.log\n")
    git(path, "add", ".")
    git(path, "commit", "-q", "-m", "first")
    return path.resolve()


@pytest.fixture
def watch(repo: Path, tmp_path: Path) -> Iterator[ChangeWatch]:
    with live_watch(repo, tmp_path) as started:
        yield started


@pytest.fixture
def by_git(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    calls: list[Path] = []

    def counted(root: Path, **options: object) -> RepoSnapshot | None:
        calls.append(root)
        return take_snapshot(root, **options)  # type: ignore[arg-type]

    monkeypatch.setattr(module, "take_snapshot", counted)
    return calls


def test_a_later_snapshot_comes_from_the_watch_and_matches_git(
    repo: Path, watch: ChangeWatch, by_git: list[Path]
) -> None:
    snapshots = Snapshots(repo, watch)
    first = snapshots.take()
    assert first is not None
    assert first.dirty == {}
    (repo / "src" / "a.txt").write_text("changed\n")
    (repo / "src" / "new.txt").write_text("new\n")
    (repo / "debug.log").write_text("ignored\n")
    later = snapshots.take()
    assert len(by_git) == 1  # the first one only
    truth = take_snapshot(repo)
    assert later is not None
    assert truth is not None
    assert (later.head, later.prefix, later.dirty) == (truth.head, truth.prefix, truth.dirty)


def test_git_is_asked_again_when_the_watch_cannot_vouch(
    repo: Path, watch: ChangeWatch, by_git: list[Path]
) -> None:
    snapshots = Snapshots(repo, watch)
    snapshots.take()
    (repo / "src" / "b.txt").write_text("b\n")
    git(repo, "add", "src/b.txt")
    git(repo, "commit", "-q", "-m", "second")  # HEAD moved: only git can tell
    later = snapshots.take()
    assert len(by_git) == 2
    truth = take_snapshot(repo)
    assert later is not None
    assert truth is not None
    assert later.head == truth.head


def test_without_a_watch_every_snapshot_is_git_s(repo: Path, by_git: list[Path]) -> None:
    snapshots = Snapshots(repo, None)
    assert snapshots.derived() is None
    snapshots.take()
    snapshots.take()
    assert len(by_git) == 2
