"""`.deepreview` rules applied at a workflow's quality gate (docs/quality-gate.md).

At `finished_step`, the step's output files are the change set: every rule whose scope matches
one of them becomes a review beside the step's own reviews, grouped by the rule's strategy as
`run_review` groups changed files. Rules are read through the same cache as `run_review`.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from deepwork_review.pipeline import normalise_paths
from deepwork_review.rule_discovery import (
    DEFAULT_CACHE,
    RuleCache,
    list_project_files,
    project_rules,
)
from deepwork_review.tasks import build_tasks


class GateRuleReview(BaseModel):
    """One rule's review of some of a step's output files."""

    model_config = ConfigDict(frozen=True)

    rule: str
    defining_file: str
    description: str
    instructions: str
    files: tuple[str, ...]
    #: Context the rule asked for: the step's other outputs, unchanged files it matches.
    all_changed_filenames: tuple[str, ...] | None = None
    unchanged_matching_files: tuple[str, ...] | None = None


def gate_rule_reviews(
    project_root: Path, output_files: Sequence[str], *, cache: RuleCache = DEFAULT_CACHE
) -> list[GateRuleReview]:
    """The rule reviews for a step's `output_files` (project-relative); [] when none applies."""
    root = project_root.resolve()
    paths = normalise_paths(root, output_files)
    if not paths:
        return []
    ruleset = project_rules(root, cache)
    if not ruleset.rules:
        return []
    tasks = build_tasks(
        ruleset.rules,
        paths,
        project_root=root,
        all_files=lambda: list_project_files(root).all,
    )
    return [
        GateRuleReview(
            rule=task.rule.display_name,
            defining_file=task.rule.defining_file,
            description=task.rule.description,
            instructions=task.rule.instructions,
            files=task.files,
            all_changed_filenames=task.all_changed_filenames,
            unchanged_matching_files=task.unchanged_matching_files,
        )
        for task in tasks
    ]
