"""The job definition a receipt binds (docs/verify.md): which files make it, hashed, and how
they compare with the files as they are now.

A run's definition is its `job.yml`, the instruction file of each step of the workflow it ran,
the doc spec of each of those steps' outputs, and the `.deepreview` files (with their
instruction files) whose rules the gate applied. A project job's files are hashed inside the
project; a standard job's inside DeepWork's standard jobs (so `deepwork verify` compares them
with the DeepWork it runs); a job from an additional folder outside the project is named, and
cannot be checked (`verify.job_outside_project`).

The files that govern a step (job.yml, its instruction file, its outputs' doc specs) are also
hashed when the gate accepts it (`step_definition`, kept in the step's session record), and the
receipt says, per step, whether it ran under the definition the run completed with
(`ran_under`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from deepwork_core.base.layout import JOB_FILE
from deepwork_core.evidence.hashes import sha256_file
from deepwork_core.jobs.discovery import STANDARD_JOBS_DIR, LoadedJob, SourceKind
from deepwork_core.receipts.model import (
    DefinitionFile,
    DefinitionRoot,
    JobDefinitionHash,
    definition_digest,
)
from deepwork_core.state.session_model import DefinedFile

#: A file of a definition: its root and its path there.
_Key = tuple[DefinitionRoot, str]

_ROOTS: dict[SourceKind, DefinitionRoot] = {
    SourceKind.PROJECT: "project",
    SourceKind.STANDARD: "standard",
    SourceKind.ADDITIONAL: "additional",
}


def job_definition(
    project_root: Path, job: LoadedJob, workflow: str, sources: Iterable[str] = ()
) -> JobDefinitionHash:
    """The definition of `job`'s `workflow` as it is now, with the project files `sources`
    (the `.deepreview` files and their instruction files the gate applied) beside it."""
    files = _job_files(project_root, job, workflow)
    files.update({("project", path): None for path in sources})
    listed = [
        DefinitionFile(
            root=where, path=path, sha256=hash_definition_file(project_root, where, path)
        )
        for where, path in sorted(files)
    ]
    return JobDefinitionHash(files=listed, sha256=definition_digest(listed))


def step_definition(
    project_root: Path, job: LoadedJob, workflow: str, step_ids: Sequence[str]
) -> list[DefinedFile]:
    """The files that govern the steps `step_ids` of `workflow` (job.yml, their instruction
    files, their outputs' doc specs) with their SHA-256 now: what they are accepted under, kept
    in their session records for the receipt (`ran_under`). Only these steps' files are read,
    so a checkpoint costs the same in a workflow of 3 steps or of 50."""
    return [
        DefinedFile(root=where, path=path, sha256=hash_definition_file(project_root, where, path))
        for where, path in sorted(_job_files(project_root, job, workflow, step_ids))
    ]


def ran_under(
    recorded: Sequence[DefinedFile] | None,
    definition: JobDefinitionHash,
    applied: Mapping[str, str | None] | None = None,
) -> tuple[str | None, list[DefinitionFile]]:
    """The SHA-256 of the definition a step ran under, given the files its session recorded
    when the gate accepted it (`recorded`), the `.deepreview` files of its reviews as the gate
    planned them (`applied`: path -> SHA-256) and the run's `definition` at completion, and the
    files of it that differed then (as they were: `sha256` None when absent). The digest is
    `definition.sha256` when nothing differed; None when nothing was recorded."""
    if recorded is None:
        return None, []
    ran = {(item.root, item.path): item.sha256 for item in recorded}
    ran.update({("project", path): sha for path, sha in (applied or {}).items()})
    now = {(item.root, item.path): item for item in definition.files}
    differed = [
        DefinitionFile(root=root, path=path, sha256=sha)
        for (root, path), sha in sorted(ran.items())
        if (root, path) not in now or now[(root, path)].sha256 != sha
    ]
    if not differed:
        return definition.sha256, []
    as_ran = {(item.root, item.path): item for item in definition.files}
    as_ran.update({(item.root, item.path): item for item in differed})
    return definition_digest(list(as_ran.values())), differed


def _job_files(
    project_root: Path, job: LoadedJob, workflow: str, step_ids: Sequence[str] | None = None
) -> dict[_Key, None]:
    """The files of `job`'s `workflow` itself (of its steps `step_ids` only, when given), in
    the order they are found."""
    root = _ROOTS[job.source.kind]
    base = _root_folder(project_root, root, job.source.path)
    folder = _relative(job.job_dir, base)
    definition = job.definition
    files: dict[_Key, None] = {(root, f"{folder}{JOB_FILE}"): None}
    specs: dict[_Key, None] = {}
    steps = definition.workflows_by_name[workflow].step_ids if step_ids is None else step_ids
    for step_id in steps:
        step = definition.step(step_id)
        if step.instructions_file:
            files[(root, f"{folder}{step.instructions_file}")] = None
        for spec in step.outputs.values():
            if spec.doc_spec:
                specs[("project", spec.doc_spec)] = None
    return {**files, **specs}


def hash_definition_file(project_root: Path, root: DefinitionRoot, path: str) -> str | None:
    """The SHA-256 of one definition file as it is now; None when it is gone (or its root is
    not on this machine: an additional folder)."""
    if root == "additional":
        return None
    return sha256_file(_root_folder(project_root, root, None), path)


def changed_files(
    project_root: Path,
    recorded: JobDefinitionHash,
    known: dict[tuple[DefinitionRoot, str], str | None] | None = None,
) -> list[str]:
    """`path (what)` of each file of `recorded` that differs now or is gone; `known` keeps the
    hashes already taken (many receipts name one job.yml)."""
    changed = []
    hashes = {} if known is None else known
    for item in recorded.files:
        if item.root == "additional":
            continue
        key = (item.root, item.path)
        if key not in hashes:
            hashes[key] = hash_definition_file(project_root, item.root, item.path)
        now = hashes[key]
        if now != item.sha256:
            where = item.path if item.root == "project" else f"{item.path} (standard job)"
            changed.append(f"{where} ({'gone' if now is None else 'changed'})")
    return changed


def _root_folder(project_root: Path, root: DefinitionRoot, additional: Path | None) -> Path:
    if root == "standard":
        return STANDARD_JOBS_DIR
    if root == "additional" and additional is not None:
        return additional
    return project_root


def _relative(job_dir: Path, base: Path) -> str:
    """`job_dir` relative to `base` with a trailing `/` (`""` when they are one folder)."""
    try:
        relative = job_dir.resolve().relative_to(base.resolve()).as_posix()
    except ValueError:
        return f"{job_dir.name}/"
    return "" if relative == "." else f"{relative}/"
