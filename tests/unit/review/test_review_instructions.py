"""Content-named instruction files: reuse, new text, concurrent runs and pruning by age."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

from deepwork_core.base.fsutil import file_lock
from deepwork_review.instructions import (
    FOLDER,
    LOCK_FILE,
    MAX_AGE_SECONDS,
    PRUNE_INTERVAL_SECONDS,
    TOUCH_AFTER_SECONDS,
    write_instruction_files,
)
from deepwork_review.pipeline import ReviewReport, run_review

DOCS_RULE = """\
prose:
  description: Prose
  match: {include: ['**/*.md']}
  review:
    strategy: individual
    instructions: Read.
    additional_context: {unchanged_matching_files: true}
"""


def _folder(root: Path) -> Path:
    return root / ".deepwork" / "tmp" / FOLDER


def _snapshot(root: Path) -> dict[str, tuple[int, int]]:
    """Each file of the folder with its inode and mtime: any write or new file changes it."""
    return {
        entry.name: (entry.stat().st_ino, entry.stat().st_mtime_ns)
        for entry in os.scandir(_folder(root))
        if entry.name != ".pruned"
    }


def _files_by_path(run: ReviewReport) -> dict[tuple[str, ...], str]:
    return {task.files: path for task, path in zip(run.tasks, run.instruction_files, strict=True)}


def _age(path: Path, seconds: float) -> None:
    then = time.time() - seconds
    os.utime(path, (then, then))


def test_a_repeated_run_on_unchanged_input_writes_nothing(repo) -> None:
    repo.write("a.py", "a\n")
    repo.write("b.py", "b\n")
    first = run_review(repo.root)
    before = _snapshot(repo.root)

    second = run_review(repo.root)

    assert second.instruction_files == first.instruction_files
    assert _snapshot(repo.root) == before
    for path in second.instruction_files:
        assert (repo.root / path).is_file()


def test_an_edited_file_or_rule_gets_a_new_file_at_once(repo) -> None:
    repo.write("a.py", "a\n")
    repo.write("b.py", "b\n")
    first = _files_by_path(run_review(repo.root))

    repo.write("a.py", "a, edited\n")
    second = _files_by_path(run_review(repo.root))
    assert second[("a.py",)] != first[("a.py",)]
    assert second[("b.py",)] == first[("b.py",)]
    assert (repo.root / second[("a.py",)]).is_file()

    rule = (repo.root / ".deepreview").read_text()
    repo.write(".deepreview", rule.replace("Check the Python file.", "Check it twice."))
    third = _files_by_path(run_review(repo.root))
    assert set(third.values()).isdisjoint(second.values())
    for path in third.values():
        assert "Check it twice." in (repo.root / path).read_text()


def test_changed_context_gives_a_new_file_for_the_same_review_id(repo) -> None:
    repo.write("docs/.deepreview", DOCS_RULE)
    repo.write("docs/old.md")
    repo.write("docs/new.md")
    (first,) = run_review(repo.root, files=["docs/new.md"]).tasks

    repo.write("docs/other.md")  # one more unchanged matching file: context, not reviewed
    runs = [run_review(repo.root, files=["docs/new.md"]) for _ in range(2)]

    (second,) = runs[0].tasks
    assert second.review_id == first.review_id
    (old_path,) = write_instruction_files(repo.root, [first])
    (new_path,) = runs[0].instruction_files
    assert new_path != old_path
    assert runs[1].instruction_files == (new_path,)
    assert "- docs/other.md" not in (repo.root / old_path).read_text()
    assert "- docs/other.md" in (repo.root / new_path).read_text()


def test_a_file_cut_short_is_written_again(repo) -> None:
    repo.write("a.py")
    (path,) = run_review(repo.root).instruction_files
    whole = (repo.root / path).read_text()
    (repo.root / path).write_text(whole[:10])

    assert run_review(repo.root).instruction_files == (path,)
    assert (repo.root / path).read_text() == whole


def test_concurrent_runs_on_different_input_keep_both_runs_files(repo) -> None:
    for index in range(20):
        repo.write(f"file_{index}.py", f"{index}\n")
    stale = _folder(repo.root) / "python--00000000000000000000-0000000000000000.md"
    stale.parent.mkdir(parents=True)
    stale.write_text("old")
    _age(stale, MAX_AGE_SECONDS + 60)
    runs: dict[int, ReviewReport] = {}
    barrier = threading.Barrier(2)

    def review(part: int) -> None:
        barrier.wait()
        runs[part] = run_review(repo.root, files=[f"file_{i}.py" for i in range(part, 20, 2)])

    threads = [threading.Thread(target=review, args=(part,)) for part in (0, 1)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert sorted(runs) == [0, 1]
    paths = runs[0].instruction_files + runs[1].instruction_files
    assert len(set(paths)) == 20
    for path in paths:
        assert (repo.root / path).is_file()
    assert not stale.exists()  # pruned by one of them, and nothing else was


def test_files_unused_for_a_day_are_pruned_and_used_ones_kept(repo) -> None:
    repo.write("a.py")
    (used,) = run_review(repo.root).instruction_files
    folder = _folder(repo.root)
    unused = folder / "python--11111111111111111111-1111111111111111.md"
    recent = folder / "python--22222222222222222222-2222222222222222.md"
    for path in (unused, recent):
        path.write_text("x")
    _age(unused, MAX_AGE_SECONDS + 60)
    _age(recent, MAX_AGE_SECONDS - 2 * PRUNE_INTERVAL_SECONDS)
    _age(repo.root / used, MAX_AGE_SECONDS + 60)  # in use again by the next run

    run_review(repo.root)  # pruned a moment ago: not yet again
    assert unused.exists()

    (task,) = run_review(repo.root).tasks
    assert write_instruction_files(
        repo.root, [task], now=time.time() + PRUNE_INTERVAL_SECONDS + 1
    ) == (used,)

    assert not unused.exists()
    assert recent.exists()
    assert (repo.root / used).is_file()
    assert time.time() - (repo.root / used).stat().st_mtime < TOUCH_AFTER_SECONDS


def test_pruning_waits_while_a_run_holds_the_folder(repo) -> None:
    repo.write("a.py")
    (task,) = run_review(repo.root).tasks
    folder = _folder(repo.root)
    unused = folder / "python--33333333333333333333-3333333333333333.md"
    unused.write_text("x")
    _age(unused, MAX_AGE_SECONDS + 60)
    later = time.time() + PRUNE_INTERVAL_SECONDS + 1

    with file_lock(folder / LOCK_FILE, shared=True):  # another run writing its files
        write_instruction_files(repo.root, [task], now=later)
        assert unused.exists()

    write_instruction_files(repo.root, [task], now=later)
    assert not unused.exists()
