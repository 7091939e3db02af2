"""The review pipeline: the one entry point the CLI and the MCP tools call (docs/reviews.md).

discover `.deepreview` files → parse (problems collected per file) → changed files (git, or the
caller's list) → match and group by strategy → drop reviews that already passed → write one
instruction file per task → format for the platform.
"""

from __future__ import annotations

import os
import posixpath
import stat
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from enum import StrEnum
from pathlib import Path

from deepwork_core.base.error_codes import ErrorCode
from deepwork_core.base.errors import PathOutsideProjectError, Problem, ReviewError
from deepwork_core.base.identifiers import GIT_DIR
from pydantic import BaseModel, ConfigDict

from deepwork_review.changes import TrackedChanges, combine_changes, find_tracked_changes
from deepwork_review.formatters import check_platform, format_tasks
from deepwork_review.instructions import write_instruction_files
from deepwork_review.passes import ReviewPasses
from deepwork_review.rule_discovery import (
    DEFAULT_CACHE,
    ProjectFiles,
    RuleCache,
    RuleSet,
    is_runtime_file,
    list_project_files,
    project_rules,
)
from deepwork_review.tasks import DEFAULT_HASHER, ContentHasher, ReviewTask, build_tasks

NO_RULES = "No .deepreview configuration files found."
NO_VALID_RULES = "No valid .deepreview rules found."
NO_CHANGES = "No changed files detected."
NO_MATCHES = "No review rules matched the changed files."
ALL_PASSED = "Every review for the changed files has already passed; nothing to review."
PARSE_ERROR = "PARSE_ERROR"
PROBLEMS_HEADER = "Warning: some .deepreview files have problems (their other rules still apply):"


class ReviewStatus(StrEnum):
    TASKS = "tasks"
    NO_RULES = "no_rules"
    NO_CHANGES = "no_changes"
    NO_MATCHES = "no_matches"
    ALL_PASSED = "all_passed"


class ReviewReport(BaseModel):
    """What one `run_review` call found; `text` is what the agent reads."""

    model_config = ConfigDict(frozen=True)

    status: ReviewStatus
    text: str
    tasks: tuple[ReviewTask, ...] = ()
    instruction_files: tuple[str, ...] = ()
    already_passed: tuple[str, ...] = ()
    changed_files: tuple[str, ...] = ()
    problems: tuple[str, ...] = ()


class ConfiguredRule(BaseModel):
    """A rule as `get_configured_reviews` lists it."""

    name: str
    description: str
    defining_file: str


class RuleListing(BaseModel):
    rules: tuple[ConfiguredRule, ...]
    #: One entry per problem, named `PARSE_ERROR`, pointing at the file and line.
    parse_errors: tuple[ConfiguredRule, ...] = ()


def run_review(
    project_root: Path,
    *,
    platform: str = "claude",
    files: Sequence[str] | None = None,
    base_ref: str | None = None,
    cache: RuleCache = DEFAULT_CACHE,
    hasher: ContentHasher = DEFAULT_HASHER,
) -> ReviewReport:
    """Review the changed files (or `files`) of the project at `project_root`."""
    check_platform(platform)
    root = _project_root(project_root)
    listing, ruleset, tracked = _gather(root, files, base_ref, cache)
    if not ruleset.rules:
        return _informational(ruleset, ReviewStatus.NO_RULES, _no_rules_message(ruleset))
    changed, why_none = _changed_files(root, tracked, listing, files)
    if not changed:
        return _informational(ruleset, ReviewStatus.NO_CHANGES, why_none)
    tasks = build_tasks(
        ruleset.rules, changed, project_root=root, all_files=lambda: listing.all, hasher=hasher
    )
    if not tasks:
        return _informational(ruleset, ReviewStatus.NO_MATCHES, NO_MATCHES, changed_files=changed)
    return _issue(root, platform, ruleset, tasks, changed)


def _gather(
    root: Path, files: Sequence[str] | None, base_ref: str | None, cache: RuleCache
) -> tuple[ProjectFiles, RuleSet, TrackedChanges | None]:
    """The project's files, its rules and (unless `files` is given) git's tracked changes.

    git's view of tracked changes is gathered in a worker thread while this one lists the
    project's files and parses the rules: the two git calls are the slowest steps.
    """
    with ThreadPoolExecutor(max_workers=1) as pool:
        git_changes = (
            pool.submit(find_tracked_changes, root, base_ref=base_ref) if files is None else None
        )
        listing = list_project_files(root)
        ruleset = project_rules(root, cache, listing.all)
        if git_changes is not None and ruleset.rules:
            tracked: TrackedChanges | None = git_changes.result()
        else:
            tracked = None
    return listing, ruleset, tracked


def _changed_files(
    root: Path, tracked: TrackedChanges | None, listing: ProjectFiles, files: Sequence[str] | None
) -> tuple[tuple[str, ...], str]:
    """The files to review, and the message to give when there are none."""
    if tracked is not None:
        return combine_changes(root, tracked, listing).files, NO_CHANGES
    explicit = normalise_paths(root, files or ())
    changed = tuple(path for path in explicit if _is(stat.S_ISREG, root / path))
    if explicit and not changed:
        return changed, _no_given_files_message(root, explicit)
    return changed, NO_CHANGES


def _issue(
    root: Path,
    platform: str,
    ruleset: RuleSet,
    tasks: Sequence[ReviewTask],
    changed: tuple[str, ...],
) -> ReviewReport:
    """Drop the reviews that already passed; write and format the others."""
    passes = ReviewPasses(root)
    passed = passes.passed_ids()
    pending = [task for task in tasks if task.review_id not in passed]
    skipped = tuple(task.review_id for task in tasks if task.review_id in passed)
    if not pending:
        return _informational(
            ruleset,
            ReviewStatus.ALL_PASSED,
            ALL_PASSED,
            changed_files=changed,
            already_passed=skipped,
        )
    written = write_instruction_files(root, pending)
    passes.record_issued(task.review_id for task in pending)
    text = format_tasks(platform, pending, written, already_passed=len(skipped))
    return ReviewReport(
        status=ReviewStatus.TASKS,
        text=_with_problems(text, ruleset.problems),
        tasks=tuple(pending),
        instruction_files=written,
        already_passed=skipped,
        changed_files=changed,
        problems=tuple(str(problem) for problem in ruleset.problems),
    )


def _informational(
    ruleset: RuleSet, status: ReviewStatus, message: str, **fields: object
) -> ReviewReport:
    """A run without tasks: `message`, after the rule files' problems."""
    return ReviewReport.model_validate(
        {
            "status": status,
            "text": _with_problems(message, ruleset.problems),
            "problems": tuple(str(problem) for problem in ruleset.problems),
            **fields,
        }
    )


def configured_rules(
    project_root: Path,
    *,
    only_rules_matching_files: Sequence[str] | None = None,
    cache: RuleCache = DEFAULT_CACHE,
) -> RuleListing:
    """Every valid rule (optionally only those matching one of the given files)."""
    root = _project_root(project_root)
    ruleset = project_rules(root, cache)
    rules = ruleset.rules
    if only_rules_matching_files is not None:
        # Only names are matched here, nothing is read: no need to follow links.
        paths = normalise_paths(root, only_rules_matching_files, resolve_links=False)
        rules = tuple(rule for rule in rules if rule.scope.any_match(paths))
    return RuleListing(
        rules=tuple(
            ConfiguredRule(
                name=rule.name, description=rule.description, defining_file=rule.defining_file
            )
            for rule in rules
        ),
        parse_errors=tuple(
            ConfiguredRule(
                name=PARSE_ERROR,
                description=f"{problem.code}: {problem.message}",
                defining_file=problem.location(),
            )
            for problem in ruleset.problems
        ),
    )


def open_review_rules(project_root: Path, committed: Iterable[str]) -> tuple[str, ...]:
    """The rules with a review of some `committed` file that has not passed yet, sorted.

    Reviews are built the way `run_review` builds them by default (the branch's changes against
    the default branch, plus the committed files), so their ids match the passes recorded by an
    earlier review run. Empty when there are no rules or every matching review passed.
    """
    root = _project_root(project_root)
    listing = list_project_files(root)
    ruleset = project_rules(root, DEFAULT_CACHE, listing.all)
    if not ruleset.rules:
        return ()
    wanted = set(normalise_paths(root, committed))
    changed = set(combine_changes(root, find_tracked_changes(root), listing).files)
    changed.update(path for path in wanted if (root / path).is_file())
    tasks = build_tasks(
        ruleset.rules, sorted(changed), project_root=root, all_files=lambda: listing.all
    )
    passed = ReviewPasses(root).passed_ids()
    return tuple(
        sorted(
            {
                task.rule.display_name
                for task in tasks
                if task.review_id not in passed and wanted.intersection(task.files)
            }
        )
    )


def mark_review_passed(project_root: Path, review_id: str, reason: str | None = None) -> None:
    """Remember that the review `review_id` (issued by an earlier run) passed.

    `reason` records why findings the user declined do not block the pass.
    """
    ReviewPasses(_project_root(project_root)).mark_passed(review_id, reason)


def _no_given_files_message(root: Path, paths: Sequence[str]) -> str:
    """Why none of the caller's paths can be reviewed (deleted, mistyped, or a folder)."""
    described = [
        f"{path}/ (a folder: name the files in it)"
        if _is(stat.S_ISDIR, root / path)
        else f"{path} (not found)"
        for path in paths[:10]
    ]
    more = f", and {len(paths) - 10} more" if len(paths) > 10 else ""
    return f"None of the given paths is a file of the project: {', '.join(described)}{more}."


def normalise_paths(
    project_root: Path, paths: Iterable[str], *, resolve_links: bool = True
) -> tuple[str, ...]:
    """Project-relative POSIX paths, sorted and unique, without runtime files.

    Relative inputs are taken from the project root; absolute ones must lie inside it. A path
    that leaves the project raises `path.outside_project`, and with `resolve_links` (for paths
    whose files are read) so does one whose symbolic links lead out of it. Paths that are only
    matched by name may skip that file-system walk.
    """
    # Plain string work: this runs on thousands of paths per call and pathlib is slow at it.
    root = str(project_root).rstrip("/")
    prefix = root + "/"
    result: set[str] = set()
    folders: dict[str, str] = {}
    for raw in paths:
        text = raw.strip()
        if not text:
            continue
        if "\x00" in text or not _encodable(text):
            raise ReviewError(
                f"file {text[:200]!r} is not a valid path (NUL byte or lone surrogate)",
                code=ErrorCode.TEXT_INVALID,
            )
        # Lexical normalisation: a symlinked file keeps its own name.
        joined = posixpath.normpath(text if text.startswith("/") else prefix + text)
        if joined == root:
            continue
        if not joined.startswith(prefix):
            raise PathOutsideProjectError(f"file {text!r} is outside the project {project_root}")
        real = _resolved(joined, folders) if resolve_links else joined
        if real != root and not real.startswith(prefix):
            raise PathOutsideProjectError(
                f"file {text!r} is a symbolic link to {real}, outside the project {project_root}"
            )
        path = joined[len(prefix) :]
        if f"/{GIT_DIR}/" in f"/{path}/" or f"/{GIT_DIR}/" in f"/{real[len(prefix) :]}/":
            raise PathOutsideProjectError(
                f"file {text!r} is inside git's own folder {GIT_DIR}/",
                code=ErrorCode.PATH_GIT_INTERNAL,
            )
        if not is_runtime_file(path):
            result.add(path)
    return tuple(sorted(result))


def _resolved(joined: str, folders: dict[str, str]) -> str:
    """`os.path.realpath(joined)`, resolving each parent folder once per call.

    The paths of one call share a few folders; resolving every path from the root cost an
    `lstat` per path component (about 66,000 for 2,000 changed files).
    """
    parent, _, name = joined.rpartition("/")
    real_parent = folders.get(parent)
    if real_parent is None:
        real_parent = folders[parent] = os.path.realpath(parent or "/")
    candidate = f"{real_parent.rstrip('/')}/{name}"
    try:
        linked = stat.S_ISLNK(os.lstat(candidate).st_mode)
    except (OSError, ValueError):  # missing or unreadable: nothing to follow
        return candidate
    return os.path.realpath(candidate) if linked else candidate


def _encodable(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _is(kind: Callable[[int], bool], path: Path) -> bool:
    """`kind(mode)` of `path` (not following a final symlink's absence); False if unreadable."""
    try:
        return kind(path.stat().st_mode)
    except (OSError, ValueError):  # missing, name too long, …
        return False


def _project_root(project_root: Path) -> Path:
    root = project_root.resolve()
    if not root.is_dir():
        raise ReviewError(
            f"project folder {project_root} does not exist", code=ErrorCode.REVIEW_NO_PROJECT
        )
    return root


def _no_rules_message(ruleset: RuleSet) -> str:
    return NO_VALID_RULES if ruleset.sources else NO_RULES


def _with_problems(text: str, problems: Sequence[Problem]) -> str:
    if not problems:
        return text
    listed = "\n".join(f"- {problem}" for problem in problems)
    return f"{PROBLEMS_HEADER}\n{listed}\n\n{text}"
