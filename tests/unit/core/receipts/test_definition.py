"""The definition a step ran under (docs/verify.md, "The definition each step ran under"): the
job's own files hashed when the gate accepts the step, compared with the definition at
completion; and the step record that keeps them, which loads without them too."""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime
from pathlib import Path

from deepwork_core.jobs.discovery import JobCatalog
from deepwork_core.receipts.definition import job_definition, ran_under, step_definition
from deepwork_core.state.session_model import DefinedFile, StepRecord

from tests.fixtures.workflow_project import make_project

JOB = ".deepwork/jobs/three_step/"


def _project(tmp_path: Path) -> tuple[Path, JobCatalog]:
    root = make_project(tmp_path / "project")
    return root, JobCatalog.for_project(root)


def test_a_step_lists_the_files_that_govern_it_with_their_hashes(tmp_path: Path) -> None:
    root, catalog = _project(tmp_path)
    files = step_definition(root, catalog.get("three_step"), "main", ["draft"])
    assert [(f.root, f.path) for f in files] == [
        ("project", f"{JOB}job.yml"),
        ("project", f"{JOB}steps/draft.md"),
    ]  # not the other steps' instruction files: a checkpoint reads what governs its steps
    job_yml = (root / JOB / "job.yml").read_bytes()
    assert files[0].sha256 == hashlib.sha256(job_yml).hexdigest()
    every = step_definition(root, catalog.get("three_step"), "main", ["gather", "draft"])
    assert len(every) == 3
    speced = catalog.get("speced")
    all_steps = speced.definition.workflows_by_name["main"].step_ids
    spec_files = step_definition(root, speced, "main", all_steps)
    assert ("project", ".deepwork/doc_specs/report.md") in [(f.root, f.path) for f in spec_files]


def test_a_step_under_the_completed_definition_has_its_hash(tmp_path: Path) -> None:
    root, catalog = _project(tmp_path)
    job = catalog.get("three_step")
    recorded = step_definition(root, job, "main", ["gather", "draft", "publish"])
    completed = job_definition(root, job, "main")
    assert ran_under(recorded, completed) == (completed.sha256, [])
    assert ran_under(None, completed) == (None, [])


def test_a_step_under_another_definition_names_each_file_as_it_was(tmp_path: Path) -> None:
    root, catalog = _project(tmp_path)
    job = catalog.get("three_step")
    recorded = step_definition(root, job, "main", ["gather", "draft", "publish"])
    (root / JOB / "steps/draft.md").write_text("Draft anything at all.\n")
    gone = DefinedFile(root="project", path=f"{JOB}steps/old.md", sha256="0" * 64)
    completed = job_definition(root, job, "main")

    digest, changed = ran_under([*recorded, gone], completed)

    assert digest is not None
    assert digest != completed.sha256
    assert [(f.path, f.sha256) for f in changed] == [
        (f"{JOB}steps/draft.md", recorded[1].sha256),
        (f"{JOB}steps/old.md", "0" * 64),
    ]
    assert ran_under(recorded, completed)[0] != digest  # the hash is of what differed


def test_a_step_record_loads_with_and_without_its_definition() -> None:
    old = {"step_id": "draft", "started_at": datetime(2026, 1, 1, tzinfo=UTC).isoformat()}
    assert StepRecord.model_validate(old).definition is None
    file = DefinedFile(root="standard", path="x/job.yml", sha256=None)
    record = StepRecord.model_validate({**old, "definition": [file.model_dump()]})
    assert StepRecord.model_validate_json(record.model_dump_json()).definition == [file]
