"""Instruction files: one Markdown file per review task, in a fresh folder per run.

Runs go to `.deepwork/tmp/review_instructions/<run id>/`. A run never touches another run's
folder except to prune it once it is old (older than a day, or beyond the newest few runs and
older than ten minutes), so concurrent runs never delete each other's files.
"""

from __future__ import annotations

import os
import secrets
import shutil
import time
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from deepwork_core.runtime_dir import TMP_DIR, ensure_tmp_dir

from deepwork_review.tasks import ReviewTask

FOLDER = "review_instructions"
KEEP_RUNS = 20
MIN_AGE_SECONDS = 10 * 60
MAX_AGE_SECONDS = 24 * 60 * 60
#: Context lists longer than this go to a file of their own in the run folder.
INLINE_CONTEXT_LIMIT = 50


@dataclass(frozen=True, slots=True)
class WrittenRun:
    """The folder of one run and each task's instruction file (project-relative paths)."""

    folder: str
    files: tuple[str, ...]


def write_instruction_files(
    project_root: Path, tasks: Sequence[ReviewTask], *, now: float | None = None
) -> WrittenRun:
    """Write one instruction file per task into a new run folder; prune old run folders."""
    base = ensure_tmp_dir(project_root) / FOLDER
    base.mkdir(exist_ok=True)
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S%f")
    run_id = f"{stamp}-{os.getpid()}-{secrets.token_hex(3)}"
    run_folder = base / run_id
    run_folder.mkdir()
    _prune(base, keep=run_id, now=time.time() if now is None else now)

    relative_folder = f"{TMP_DIR}/{FOLDER}/{run_id}"
    written: list[str] = []
    lists = _ListCache(run_folder, relative_folder)
    for task in tasks:
        name = f"{task.review_id}.md"
        # The folder is new and ours alone: plain exclusive writes are enough.
        with (run_folder / name).open("x", encoding="utf-8") as handle:
            handle.write(render_instructions(task, project_root, lists))
        written.append(f"{relative_folder}/{name}")
    return WrittenRun(relative_folder, tuple(written))


def _prune(base: Path, *, keep: str, now: float) -> None:
    runs = sorted((entry for entry in base.iterdir() if entry.is_dir()), reverse=True)
    for position, folder in enumerate(runs):
        if folder.name == keep:
            continue
        try:
            age = now - folder.stat().st_mtime
        except FileNotFoundError:
            continue  # another run pruned it first
        if age > MAX_AGE_SECONDS or (position >= KEEP_RUNS and age > MIN_AGE_SECONDS):
            shutil.rmtree(folder, ignore_errors=True)


class _ListCache:
    """Context lists of one run, each rendered once.

    A rule's context lists are shared by all its tasks and can hold thousands of paths. A long
    one is written once to its own file in the run folder and the instruction files point to it,
    instead of repeating it in every file.
    """

    def __init__(self, run_folder: Path | None = None, relative_folder: str = "") -> None:
        self._run_folder = run_folder
        self._relative_folder = relative_folder
        self._rendered: dict[tuple[str, ...], str] = {}

    def context(self, paths: Sequence[str]) -> str:
        key = tuple(paths)  # equal lists share one rendering (C-speed hash and compare)
        cached = self._rendered.get(key)
        if cached is not None:
            return cached
        text = _bullets(paths)
        if self._run_folder is not None and len(paths) > INLINE_CONTEXT_LIMIT:
            name = f"context-{len(self._rendered) + 1}.md"
            (self._run_folder / name).write_text(text, encoding="utf-8")
            text = f"The {len(paths)} files are listed in `{self._relative_folder}/{name}`.\n"
        self._rendered[key] = text
        return text


def _bullets(paths: Sequence[str]) -> str:
    return "".join(f"- {path}\n" for path in paths) if paths else "(none)\n"


def render_instructions(
    task: ReviewTask, project_root: Path, lists: _ListCache | None = None
) -> str:
    """The Markdown a reviewer reads: what to review, how, with which context, and how to report
    a pass."""
    context = (lists or _ListCache()).context
    rule = task.rule
    parts = [
        f"# Review: {task.title}\n",
        f"Rule `{rule.name}` from `{rule.defining_file}`: {rule.description}\n",
        f"Review id: `{task.review_id}`\n",
        "## Project Root\n",
        f"Every path below is relative to `{project_root}`.\n",
        "## Review Instructions\n",
        rule.instructions.rstrip() + "\n",
        "## Files to Review\n",
        _bullets(task.files),
    ]
    if task.unchanged_matching_files is not None:
        parts += [
            "## Unchanged Matching Files\n",
            "These files match the rule but did not change; read them for context.\n",
            context(task.unchanged_matching_files),
        ]
    if task.all_changed_filenames is not None:
        parts += [
            "## All Changed Files\n",
            "Every file changed in this piece of work, for context.\n",
            context(task.all_changed_filenames),
        ]
    parts += [
        "## When You Are Done\n",
        "Report each issue with its file, line, what is wrong and a suggested fix.\n",
        "If the review found no issues, call the DeepWork MCP tool `mark_review_as_passed` with "
        f'`review_id: "{task.review_id}"`. This review is then not handed out again until the '
        "rule or one of the reviewed files changes. Do not mark a review with open issues as "
        "passed.\n",
    ]
    return "\n".join(parts)
