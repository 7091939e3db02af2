"""A git branch per top-level workflow (docs/runtime.md).

`ensure_workflow_branch` puts HEAD on `deepwork/<job>-<instance or workflow>-<YYYY-MM-DD>`.
Uncommitted work is never at risk: only plain `git switch` / `git switch -c` are used, which
carry staged, unstaged and untracked changes along or refuse to run. Nothing is stashed, reset
or discarded. Any refusal or git problem becomes a note; the workflow starts anyway.
"""

from __future__ import annotations

import contextlib
import re
from datetime import date
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from deepwork_core.base.errors import GitError
from deepwork_core.base.git import repository_root, run_git

BRANCH_PREFIX = "deepwork/"
_MAX_LABEL = 60
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


class BranchOutcome(BaseModel):
    """The branch HEAD is on for the workflow, or None with the reason in `note`.

    `previous_branch` is the branch HEAD was on when DeepWork switched away from it (None when
    nothing was switched, or HEAD was detached); `note` then tells the user how to go back.
    """

    model_config = ConfigDict(frozen=True)

    branch_name: str | None
    note: str | None = None
    previous_branch: str | None = None


def switched_note(branch: str, previous: str | None) -> str:
    """What the user is told when DeepWork moved the repository to the workflow's branch."""
    back = f"`git switch {previous}`" if previous else "`git switch -`"
    origin = f" from `{previous}`" if previous else ""
    return (
        f"DeepWork switched this repository{origin} to the branch `{branch}` for this workflow "
        f"(uncommitted changes came along). To go back: {back}."
    )


def abandoned_note(branch: str, previous: str | None) -> str:
    """What the user is told when a workflow on its own branch is aborted."""
    back = f"`git switch {previous}`" if previous else "`git switch -`"
    return (
        f"The workflow branch `{branch}` still exists and may still be checked out. To return "
        f"to the branch you were on before: {back}. Delete the workflow branch with "
        f"`git branch -D {branch}` if its work is not needed."
    )


def completed_note(branch: str, previous: str | None, committed: bool = True) -> str:
    """What the user is told when a workflow on its own branch completes; `committed`: the
    branch has commits of the run (else its outputs are still uncommitted in the work tree)."""
    back = f"`git switch {previous}`" if previous else "`git switch -`"
    if not committed:
        merge = f" and merge it: `git switch {previous} && git merge {branch}`" if previous else ""
        return (
            f"Its outputs are not committed yet: the branch `{branch}` (still checked out) has "
            f"no commit of this run. Commit them first (`git add <the outputs> && git commit`)"
            f"{merge}; switching away now with {back} takes them along uncommitted."
        )
    if previous is None:
        return (
            f"Its work is on the branch `{branch}` (still checked out); merge it where it belongs, "
            "or go back with `git switch -`."
        )
    return (
        f"Its work is on the branch `{branch}` (still checked out), started from `{previous}`. "
        f"To merge it: `git switch {previous} && git merge {branch}`; to go back without "
        f"merging: {back}."
    )


def completed_summary(
    label: str,
    branch: str | None,
    previous: str | None,
    resume: tuple[str, str] | None,
    committed: bool = True,
) -> str:
    """What `finished_step` says when a workflow completes: where its work is (`branch`, for a
    top-level run on its own branch; `committed`: whether the run committed to it) and which
    parent workflow and step to resume, if any."""
    summary = f"Workflow '{label}' completed successfully!"
    if branch is not None:
        summary += " " + completed_note(branch, previous, committed)
    if resume is not None:
        summary += f" Resume the parent workflow '{resume[0]}' at step '{resume[1]}'."
    return summary


def undo_switch(project_root: Path, outcome: BranchOutcome) -> None:
    """Put HEAD back where it was before `outcome` switched it (a start that failed after the
    switch leaves the repository as it found it); nothing when it did not switch."""
    if outcome.branch_name is None or outcome.note is None:
        return  # no branch, or HEAD was already on it
    with contextlib.suppress(GitError):
        run_git(["switch", "-"], cwd=project_root, check=False)


def workflow_branch_name(job_name: str, label: str, today: date) -> str:
    """`deepwork/<job>-<label>-<YYYY-MM-DD>` with everything git dislikes replaced by `-`.

    `label` is free text (an instance id from the agent): runs of other characters become one
    `-`, dots cannot start, end or repeat, and the label is cut to 60 characters. An empty label
    is left out.
    """
    parts = [_clean(job_name), _clean(label)[:_MAX_LABEL].strip("-."), today.isoformat()]
    return BRANCH_PREFIX + "-".join(part for part in parts if part)


def _clean(text: str) -> str:
    cleaned = _UNSAFE.sub("-", text)
    cleaned = re.sub(r"\.{2,}", ".", cleaned)
    cleaned = re.sub(r"-{2,}", "-", cleaned)
    cleaned = cleaned.strip("-.")
    if cleaned.endswith(".lock"):
        cleaned = cleaned[: -len(".lock")] + "-lock"
    return cleaned


def ensure_workflow_branch(
    project_root: Path, *, job_name: str, label: str, today: date
) -> BranchOutcome:
    """Put HEAD on the workflow's branch: stay, switch to it, or create it from HEAD.

    Never raises for git trouble: outside a repository, without git, or when git refuses (for
    example because switching would overwrite uncommitted changes) the outcome has no branch and
    a note saying why, and the working tree is exactly as it was.
    """
    name = workflow_branch_name(job_name, label, today)
    try:
        if repository_root(project_root) is None:
            return BranchOutcome(
                branch_name=None, note="not a git repository, so no workflow branch was created"
            )
        valid = run_git(["check-ref-format", "--branch", name], cwd=project_root, check=False)
        if valid.returncode != 0:
            return BranchOutcome(
                branch_name=None, note=f"{name!r} is not a valid git branch name; stayed on HEAD"
            )
        current = run_git(
            ["symbolic-ref", "--quiet", "--short", "HEAD"], cwd=project_root, check=False
        )
        if current.returncode == 0 and current.stdout.strip() == name:
            return BranchOutcome(branch_name=name)
        exists = run_git(
            ["show-ref", "--verify", "--quiet", f"refs/heads/{name}"], cwd=project_root, check=False
        )
        unborn = (
            run_git(
                ["rev-parse", "--verify", "--quiet", "HEAD"], cwd=project_root, check=False
            ).returncode
            != 0
        )
        previous = current.stdout.strip() if current.returncode == 0 else None
        args = ["switch", name] if exists.returncode == 0 else ["switch", "-c", name]
        result = run_git(args, cwd=project_root, check=False)
    except GitError as exc:
        return BranchOutcome(branch_name=None, note=f"no workflow branch: {exc.message}")
    if result.returncode != 0:
        reason = " ".join((result.stderr.strip() or result.stdout.strip()).split()) or (
            f"git exited with code {result.returncode}"
        )
        return BranchOutcome(
            branch_name=None,
            note=(
                f"git refused to switch to {name!r}, so the workflow runs on the current branch; "
                f"your changes are untouched. git said: {reason}"
            ),
        )
    if unborn and exists.returncode != 0:
        return BranchOutcome(
            branch_name=name,
            note="the repository has no commits yet; the first commit starts this branch",
            previous_branch=previous,
        )
    return BranchOutcome(
        branch_name=name, note=switched_note(name, previous), previous_branch=previous
    )
