"""The change watch against real git repositories: a checkpoint answered from the files written
since its step began finds exactly what `git status` finds, and the watch steps aside whenever it
cannot vouch for the interval."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from deepwork_core.evidence.ignore_check import IgnoreChecker
from deepwork_core.evidence.scope import (
    RepoSnapshot,
    changed_between,
    take_snapshot,
    watched_snapshot,
)
from deepwork_core.evidence.watch import ChangeWatch

from tests.fixtures.git_repo import git, init_repo

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="inotify is Linux's")


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    path = tmp_path / "repo"
    path.mkdir()
    init_repo(path)
    for folder in ("src", "docs"):
        (path / folder).mkdir()
        for index in range(5):
            (path / folder / f"f{index}.txt").write_text(f"{folder} {index}\n")
    (path / ".gitignore").write_text("build/\n*.log\n")
    git(path, "add", ".")
    git(path, "commit", "-q", "-m", "first")
    return path


@pytest.fixture
def watch(repo: Path, tmp_path: Path) -> Iterator[ChangeWatch]:
    # With the user's ignore file known, new files that match no rule need no `git check-ignore`
    # (the watches without it ask git about every new file: both ways are tested).
    watch = ChangeWatch(repo, global_excludes=tmp_path / "no-user-ignore-file")
    assert watch.start()
    yield watch
    watch.close()


def begin(repo: Path, watch: ChangeWatch) -> RepoSnapshot:
    snapshot = take_snapshot(repo, watch=watch)
    assert snapshot is not None
    assert snapshot.watch is not None
    return snapshot


def by_git(repo: Path, before: RepoSnapshot) -> list[str]:
    now = take_snapshot(repo, prefix=before.prefix)
    assert now is not None
    return changed_between(repo, before, now)


def by_watch(repo: Path, before: RepoSnapshot, watch: ChangeWatch) -> list[str] | None:
    now = watched_snapshot(repo, before, watch)
    return None if now is None else changed_between(repo, before, now)


def test_a_checkpoint_finds_what_git_status_finds_without_running_it(
    repo: Path, watch: ChangeWatch
) -> None:
    (repo / "docs" / "f0.txt").write_text("changed before the step\n")
    (repo / "loose.md").write_text("untracked before the step\n")
    before = begin(repo, watch)
    (repo / "src" / "f0.txt").write_text("edited\n")  # tracked, changed
    (repo / "src" / "f1.txt").write_text("src 1\n")  # tracked, same bytes again
    (repo / "src" / "f2.txt").chmod(0o755)  # tracked, mode changed
    (repo / "src" / "f3.txt").unlink()  # tracked, deleted
    (repo / "src" / "new.txt").write_text("new\n")  # untracked, new
    (repo / "src" / "run.log").write_text("ignored by a pattern\n")
    (repo / "scratch.tmp").write_text("made and removed again\n")
    (repo / "scratch.tmp").unlink()
    (repo / "build").mkdir()
    (repo / "build" / "out.bin").write_text("in an ignored folder\n")
    (repo / "pkg" / "sub").mkdir(parents=True)
    (repo / "pkg" / "sub" / "mod.py").write_text("in a new folder\n")
    (repo / "docs" / "f0.txt").write_text("changed again during the step\n")
    expected = ["docs/f0.txt", "pkg/sub/mod.py", "src/f0.txt", "src/f2.txt", "src/f3.txt"]
    expected.append("src/new.txt")
    assert by_git(repo, before) == expected
    assert by_watch(repo, before, watch) == expected


def test_the_snapshot_it_answers_is_the_next_steps_start(repo: Path, watch: ChangeWatch) -> None:
    before = begin(repo, watch)
    (repo / "pkg").mkdir()
    (repo / "pkg" / "a.py").write_text("one\n")
    middle = watched_snapshot(repo, before, watch)
    assert middle is not None
    assert set(middle.dirty) == {"pkg/a.py"}
    (repo / "pkg" / "a.py").write_text("two\n")  # in the folder the watch began to follow
    (repo / "src" / "f4.txt").write_text("edited\n")
    assert by_watch(repo, middle, watch) == by_git(repo, middle) == ["pkg/a.py", "src/f4.txt"]
    assert by_watch(repo, middle, watch) == ["pkg/a.py", "src/f4.txt"]


def test_runtime_files_are_never_a_change(repo: Path, watch: ChangeWatch) -> None:
    (repo / ".deepwork" / "tmp").mkdir(parents=True)
    before = begin(repo, watch)
    (repo / ".deepwork" / "tmp" / "session.json").write_text("{}\n")
    assert by_watch(repo, before, watch) == by_git(repo, before) == []


def test_a_commit_sends_the_next_checkpoint_to_git(repo: Path, watch: ChangeWatch) -> None:
    before = begin(repo, watch)
    (repo / "src" / "f0.txt").write_text("edited\n")
    git(repo, "commit", "-q", "-am", "during the step")
    assert by_watch(repo, before, watch) is None
    assert by_git(repo, before) == ["src/f0.txt"]
    again = begin(repo, watch)  # a snapshot by git after it: the watch vouches again
    (repo / "src" / "f1.txt").write_text("edited\n")
    assert by_watch(repo, again, watch) == ["src/f1.txt"]


def test_staging_a_file_sends_the_checkpoint_to_git(repo: Path, watch: ChangeWatch) -> None:
    before = begin(repo, watch)
    (repo / "src" / "f0.txt").write_text("edited\n")
    git(repo, "add", "src/f0.txt")
    assert by_watch(repo, before, watch) is None


def test_a_changed_ignore_rule_sends_the_checkpoint_to_git(repo: Path, watch: ChangeWatch) -> None:
    (repo / "keep.log").write_text("ignored at first\n")
    before = begin(repo, watch)
    (repo / ".gitignore").write_text("build/\n")
    assert by_watch(repo, before, watch) is None
    assert by_git(repo, before) == [".gitignore", "keep.log"]


def test_a_renamed_folder_sends_the_checkpoint_to_git(repo: Path, watch: ChangeWatch) -> None:
    before = begin(repo, watch)
    (repo / "docs").rename(repo / "manual")
    assert by_watch(repo, before, watch) is None
    assert len(by_git(repo, before)) == 10


def test_the_watch_vouches_only_for_its_own_snapshots(repo: Path, watch: ChangeWatch) -> None:
    unwatched = take_snapshot(repo)
    assert unwatched is not None
    assert unwatched.watch is None
    assert watched_snapshot(repo, unwatched, watch) is None
    other = ChangeWatch(repo)
    assert other.start()
    try:
        assert watched_snapshot(repo, begin(repo, other), watch) is None
    finally:
        other.close()
    before = begin(repo, watch)
    watch.close()
    assert watched_snapshot(repo, before, watch) is None


def test_a_nested_repository_keeps_the_watch_off(repo: Path) -> None:
    (repo / "vendor").mkdir()
    init_repo(repo / "vendor")
    watch = ChangeWatch(repo)
    assert not watch.start()
    assert watch.mark() is None


def test_outside_git_the_watch_does_not_start(tmp_path: Path) -> None:
    watch = ChangeWatch(tmp_path)
    assert not watch.start()


def test_a_project_inside_a_repository(repo: Path) -> None:
    project = repo / "src"
    watch = ChangeWatch(project)
    assert watch.start()
    try:
        before = begin(project, watch)
        (project / "f0.txt").write_text("edited\n")
        (project / "fresh.txt").write_text("new\n")
        (repo / "docs" / "f0.txt").write_text("outside the project\n")
        assert by_watch(project, before, watch) == by_git(project, before)
        assert by_watch(project, before, watch) == ["f0.txt", "fresh.txt"]
    finally:
        watch.close()


def test_a_file_replaced_by_a_rename_is_seen(repo: Path, watch: ChangeWatch) -> None:
    before = begin(repo, watch)
    temporary = repo / "src" / ".f0.txt.tmp"
    temporary.write_text("written atomically\n")
    temporary.replace(repo / "src" / "f0.txt")
    assert by_watch(repo, before, watch) == by_git(repo, before) == ["src/f0.txt"]


def test_a_new_exclude_rule_of_git_is_read_again(repo: Path, watch: ChangeWatch) -> None:
    before = begin(repo, watch)
    (repo / "notes.md").write_text("new\n")
    assert by_watch(repo, before, watch) == ["notes.md"]  # no rule could match it
    (repo / ".git" / "info").mkdir(exist_ok=True)
    (repo / ".git" / "info" / "exclude").write_text("*.md\n")
    assert by_watch(repo, before, watch) is None
    again = begin(repo, watch)
    (repo / "more.md").write_text("ignored now\n")
    (repo / "src" / "f0.txt").write_text("edited\n")
    assert by_watch(repo, again, watch) == by_git(repo, again) == ["src/f0.txt"]


def test_a_folder_git_stops_ignoring_is_watched_from_then_on(repo: Path, tmp_path: Path) -> None:
    (repo / "build" / "deep").mkdir(parents=True)
    (repo / "build" / "deep" / "old.bin").write_text("built before the watch\n")
    watch = ChangeWatch(repo, global_excludes=tmp_path / "no-user-ignore-file")
    assert watch.start()  # `build/` is ignored: not watched
    try:
        (repo / ".gitignore").write_text("*.log\n")  # and now it is not
        before = begin(repo, watch)
        (repo / "build" / "deep" / "new.bin").write_text("written during the step\n")
        (repo / "build" / "top.bin").write_text("and here\n")
        expected = ["build/deep/new.bin", "build/top.bin"]
        assert by_git(repo, before) == expected
        assert by_watch(repo, before, watch) == expected
    finally:
        watch.close()


def test_a_folder_left_alone_is_asked_about_again_when_git_cannot_say(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (repo / "build").mkdir()
    watch = ChangeWatch(repo, global_excludes=tmp_path / "no-user-ignore-file")
    assert watch.start()
    try:
        (repo / ".gitignore").write_text("")
        (repo / "fresh").mkdir()  # a new folder git cannot be asked about either
        monkeypatch.setattr(IgnoreChecker, "check", lambda self, paths: None)
        assert watch.mark() is None  # whether to watch `build/` is unknown: no vouching
        assert watch.mark() is None  # nor later, until git can say
        monkeypatch.undo()
        before = begin(repo, watch)
        (repo / "build" / "new.bin").write_text("seen\n")
        (repo / "fresh" / "new.txt").write_text("seen too\n")
        expected = ["build/new.bin", "fresh/new.txt"]
        assert by_watch(repo, before, watch) == by_git(repo, before) == expected
    finally:
        watch.close()


def test_an_ignore_file_above_the_project_is_a_rule_change(repo: Path) -> None:
    (repo / "src" / "gen").mkdir()
    (repo / ".gitignore").write_text("gen/\n")
    git(repo, "commit", "-q", "-am", "ignore gen")
    project = repo / "src"
    watch = ChangeWatch(project)
    assert watch.start()
    try:
        before = begin(project, watch)
        (repo / ".gitignore").write_text("")
        assert by_watch(project, before, watch) is None  # the rules moved: git decides
        again = begin(project, watch)
        (project / "gen" / "out.py").write_text("generated\n")
        assert by_watch(project, again, watch) == by_git(project, again) == ["gen/out.py"]
    finally:
        watch.close()
