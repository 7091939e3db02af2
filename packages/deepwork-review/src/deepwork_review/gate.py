"""`.deepreview` rules as review tasks of the quality gate (docs/quality-gate.md).

At a checkpoint, the step's output files stand in for the change set: every rule whose scope
matches one of them becomes a `QualityReviewTask` beside the step's own reviews, grouped by the
rule's strategy as `run_review` groups changed files, with one criterion (the rule's
instructions), so its verdict lands in the same audit trail. Rules are read through the same
cache as `run_review`.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from deepwork_core.base.error_codes import ErrorCode
from deepwork_core.base.errors import GitError, Problem, ReviewError
from deepwork_core.base.escaping import printable, quote_name
from deepwork_core.gate.checkpoint import Checkpoint
from deepwork_core.gate.process_review import RULE_PREFIX
from deepwork_core.gate.tasks import QualityReviewTask

from deepwork_review.pipeline import normalise_paths
from deepwork_review.rule_discovery import (
    DEFAULT_CACHE,
    RuleCache,
    RuleFiles,
    list_project_files,
    project_rules,
    rule_file_problems,
)
from deepwork_review.tasks import ReviewTask, build_tasks


def rule_review_tasks(
    checkpoint: Checkpoint, rule_files: RuleFiles | None = None
) -> list[QualityReviewTask]:
    """The rule reviews of the checkpoint's output files (its `string` outputs left out);
    `rule_files` keeps the project's `.deepreview` files between checkpoints."""
    files = _output_files(checkpoint)
    if not files:
        return []
    try:
        sources = _sources(checkpoint, rule_files)
        return gate_rule_tasks(checkpoint.project_root, files, checkpoint.step_ids[0], sources)
    except (GitError, ReviewError):
        return []  # no git, or not a repository: rules cannot be found, the step's own apply


def _output_files(checkpoint: Checkpoint) -> list[str]:
    """The checkpoint's output files (project-relative), its `string` outputs left out."""
    files: list[str] = []
    for step_id in checkpoint.step_ids:
        declared = checkpoint.job.step(step_id).outputs
        for name, value in checkpoint.outputs.items():
            if name in declared and declared[name].type.is_file:
                files.extend([value] if isinstance(value, str) else value)
    return files


def gate_rule_tasks(
    project_root: Path,
    output_files: Sequence[str],
    step_id: str,
    sources: Sequence[str] | None = None,
    *,
    cache: RuleCache = DEFAULT_CACHE,
) -> list[QualityReviewTask]:
    """The rule reviews of step `step_id`'s `output_files` (project-relative); [] when none
    applies. `sources`: the project's `.deepreview` files when known (else git lists them)."""
    root = project_root.resolve()
    paths = normalise_paths(root, output_files)
    if not paths:
        return []
    ruleset = project_rules(root, cache, sources)
    if not ruleset.rules:
        return []
    tasks = build_tasks(
        ruleset.rules,
        paths,
        project_root=root,
        all_files=lambda: list_project_files(root).all,
    )
    return [_gate_task(step_id, task) for task in tasks]


def _sources(checkpoint: Checkpoint, rule_files: RuleFiles | None) -> tuple[str, ...] | None:
    if rule_files is None:
        return None
    return rule_files.sources(checkpoint.project_root, checkpoint.watch)


def _gate_task(step_id: str, task: ReviewTask) -> QualityReviewTask:
    """`task` as the gate runs it: the rule's instructions are its one criterion."""
    rule = task.rule
    context = []
    if task.all_changed_filenames is not None:
        context.append("All outputs of the step: " + ", ".join(task.all_changed_filenames))
    if task.unchanged_matching_files is not None:
        listed = ", ".join(task.unchanged_matching_files) or "none"
        context.append(f"Unchanged files the rule matches (read for context): {listed}")
    return QualityReviewTask(
        step_id=step_id,
        run_each=f"{RULE_PREFIX}{rule.display_name}",
        files=list(task.files),
        criteria={rule.display_name: f"{rule.description}\n\n{rule.instructions.strip()}"},
        guidance="\n".join(context) or None,
        sources=[rule.source, *([rule.instructions_file] if rule.instructions_file else [])],
    )


class GateRules:
    """The `.deepreview` rules as the quality gate's `RuleSource` (docs/quality-gate.md): the
    rule files of each project are listed once and kept fresh by its change watch."""

    def __init__(self) -> None:
        self._files = RuleFiles()

    def tasks(self, checkpoint: Checkpoint) -> list[QualityReviewTask]:
        return rule_review_tasks(checkpoint, self._files)

    def settled(self, checkpoint: Checkpoint) -> tuple[str, ...] | None:
        """The warnings of `checkpoint` when no rule applies to it and the rule files are known
        and still fresh (nothing is run: no git); None when `tasks` must be asked."""
        sources = self._files.kept(checkpoint.project_root, checkpoint.watch)
        if sources is None:
            return None
        if not sources:
            return ()  # the project has no rule file: none applies, none failed to load
        files = _output_files(checkpoint)
        try:
            if files and gate_rule_tasks(
                checkpoint.project_root, files, checkpoint.step_ids[0], sources
            ):
                return None
        except (GitError, ReviewError):
            pass  # as `tasks`: no rule can be found, the step's own reviews apply
        return self._warnings(checkpoint.project_root, sources)

    def warnings(self, checkpoint: Checkpoint) -> tuple[str, ...]:
        """One `quality_gate.deepreview_invalid` warning per rule file or rule that failed to
        load (the rules it concerns were not applied)."""
        try:
            sources = _sources(checkpoint, self._files)
        except (GitError, ReviewError):
            return ()  # no rules can be found at all: the step's own reviews apply
        return self._warnings(checkpoint.project_root, sources)

    @staticmethod
    def _warnings(project_root: Path, sources: tuple[str, ...] | None) -> tuple[str, ...]:
        try:
            problems = rule_file_problems(project_root, files=sources)
        except (GitError, ReviewError):
            return ()
        return tuple(
            printable(
                f"{ErrorCode.QUALITY_GATE_DEEPREVIEW_INVALID}: {_where(problem)}: {problem.code}: "
                f"{problem.message} (the rules this concerns were not applied; fix the file)"
            )
            for problem in problems
        )


def _where(problem: Problem) -> str:
    """`file:line` of a problem, the file's name quoted when it is not plain."""
    where = "<unknown>" if problem.file is None else quote_name(problem.file.as_posix())
    return where if problem.line is None else f"{where}:{problem.line}"
