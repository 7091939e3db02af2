"""The shipped standard jobs, the library jobs and the job scaffold.

Every job a user can run or copy must validate with no errors and no warnings, name only files
that exist, and speak of actions rather than one platform's tools.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import NamedTuple

import pytest
from deepwork_core.base.errors import DeepWorkError
from deepwork_core.base.yamlio import parse_yaml
from deepwork_core.jobs.discovery import STANDARD_JOBS_DIR
from deepwork_core.jobs.model import JobDefinition
from deepwork_core.jobs.parser import check_job_files, parse_job_dir, parse_job_document
from deepwork_core.jobs.scaffold import JOB_TEMPLATE, TEMPLATES_DIR, scaffold_job
from deepwork_core.jobs.steps.parts import OutputSpec

from tests.fixtures.paths import REPO_ROOT

REPO = REPO_ROOT
LIBRARY_DIR = REPO / "library" / "jobs"

STANDARD_JOBS = sorted(p.parent for p in STANDARD_JOBS_DIR.glob("*/job.yml"))
LIBRARY_JOBS = sorted(p.parent for p in LIBRARY_DIR.glob("*/job.yml"))
ALL_JOBS = STANDARD_JOBS + LIBRARY_JOBS
JOB_IDS = [f"{p.parent.name}/{p.name}" for p in ALL_JOBS]

# Tool names (and reference syntax) that exist on one agent platform only. Job text names the
# action ("ask a structured question", "run sub-agents in parallel"); the skill or the server
# supplies the platform's wording.
FORBIDDEN = {
    "AskUserQuestion": re.compile(r"AskUserQuestion"),
    "Task/Agent tool": re.compile(r"\b(Task|Agent)\s+tool\b|\b(Task|Agent)\("),
    "subagent_type": re.compile(r"subagent_type"),
    "mcp__ tool prefix": re.compile(r"mcp__"),
    "@file reference": re.compile(r"(?<![\w.@])@[\w./-]+\.(md|ya?ml|json|txt|py)\b"),
    "TodoWrite/WebSearch/WebFetch": re.compile(r"\b(TodoWrite|WebSearch|WebFetch)\b"),
    "$ARGUMENTS": re.compile(r"\$ARGUMENTS"),
}


class _FileStep(NamedTuple):
    id: str
    instructions_file: str
    outputs: dict[str, OutputSpec]


def _steps_with_files(definition: JobDefinition) -> list[_FileStep]:
    """Steps whose instructions are a file; a `sub_workflow` step's are generated."""
    steps = [s for s in definition.steps if s.sub_workflow is None]
    assert all(s.instructions_file for s in steps), "library steps keep their instructions in files"
    return [_FileStep(s.id, s.instructions_file or "", s.outputs) for s in steps]


def _text_files(job_dir: Path) -> list[Path]:
    return sorted(p for p in job_dir.rglob("*") if p.is_file())


def test_the_expected_jobs_are_shipped() -> None:
    assert [p.name for p in STANDARD_JOBS] == ["deepwork_jobs", "deepwork_reviews"]
    assert len(LIBRARY_JOBS) >= 10
    assert {
        "research_report",
        "spec_driven_development",
        "release_notes",
        "issue_to_pull_request",
        "repo_health_check",
        "incident_postmortem",
        "weekly_digest",
        "competitive_report",
        "data_quality_audit",
        "interview_synthesis",
    } <= {p.name for p in LIBRARY_JOBS}


@pytest.mark.parametrize("job_dir", ALL_JOBS, ids=JOB_IDS)
def test_job_validates_without_errors_or_warnings(job_dir: Path) -> None:
    parsed = parse_job_dir(job_dir, expected_name=job_dir.name)
    assert [str(p) for p in parsed.problems] == []
    assert [str(p) for p in check_job_files(parsed)] == []


@pytest.mark.parametrize("job_dir", ALL_JOBS, ids=JOB_IDS)
def test_every_step_is_reachable_and_reviewed(job_dir: Path) -> None:
    definition = parse_job_dir(job_dir).require()
    reachable = {s for w in definition.workflows for s in w.step_ids}
    for step in definition.steps:
        assert step.id in reachable, f"{step.id} is in no workflow"
        assert step.outputs, f"{step.id} declares no output"
        if step.sub_workflow is not None:  # its work is reviewed in the workflow it runs
            assert step.sub_workflow.workflow_name in definition.workflows_by_name
            continue
        assert step.reviews or step.process_requirements, f"{step.id} has no review"
        for review in step.reviews:
            # A 0.10 review is judged on its instructions: criteria written as questions there.
            assert review.quality_criteria or review.additional_review_guidance, step.id
            for name, question in review.quality_criteria.items():
                assert "?" in question, f"{step.id}/{name} is not a question"


@pytest.mark.parametrize("job_dir", ALL_JOBS, ids=JOB_IDS)
def test_files_mentioned_in_instructions_exist(job_dir: Path) -> None:
    """A step that points the agent at `templates/…` or `steps/…` of its own job gets a file."""
    mentioned = re.compile(r"`((?:templates|steps|scripts|reference)/[\w./-]+)`")
    for path in _text_files(job_dir):
        for ref in mentioned.findall(path.read_text(encoding="utf-8")):
            if "<" in ref or "{" in ref:
                continue  # a pattern such as steps/<step_id>.md, not a file
            assert (job_dir / ref).is_file(), f"{path.name} mentions missing {ref}"


@pytest.mark.parametrize("job_dir", ALL_JOBS, ids=JOB_IDS)
def test_job_text_names_no_platform_specific_tool(job_dir: Path) -> None:
    found = [
        f"{path.relative_to(job_dir)}:{number}: {label}"
        for path in _text_files(job_dir)
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        for label, pattern in FORBIDDEN.items()
        if pattern.search(line)
    ]
    assert found == []


@pytest.mark.parametrize(
    "sample",
    [
        "Use the AskUserQuestion tool",
        "call the Task tool",
        "run mcp__deepwork__start",
        "read @steps/define.md",
    ],
)
def test_the_platform_check_catches_tool_names(sample: str) -> None:
    assert any(p.search(sample) for p in FORBIDDEN.values())


def test_standard_workflows_are_the_documented_ones() -> None:
    workflows = {
        job_dir.name: [w.name for w in parse_job_dir(job_dir).require().workflows]
        for job_dir in STANDARD_JOBS
    }
    assert workflows == {
        "deepwork_jobs": ["new_job", "record", "repair", "learn"],
        "deepwork_reviews": ["discover_rules", "add_document_update_rule"],
    }


def test_record_replaces_define_and_keeps_its_checks() -> None:
    """`record` drafts the job like `define` and then shares the rest of `new_job`."""
    definition = parse_job_dir(STANDARD_JOBS_DIR / "deepwork_jobs").require()
    new_job = definition.workflows_by_name["new_job"].entries
    record = definition.workflows_by_name["record"].entries
    assert new_job[0] == ("define",)
    assert record[0] == ("record",)
    assert record[1:] == new_job[1:]
    define, recorded = definition.step("define"), definition.step("record")
    assert recorded.outputs.keys() == define.outputs.keys()
    assert recorded.reviews[0] == define.reviews[0]  # define's review of the job definition
    for step_id in {step_id for entry in new_job[1:] for step_id in entry}:
        step = definition.step(step_id)
        from_define = {i.file for i in step.file_inputs if i.from_step == "define"}
        from_record = {i.file for i in step.file_inputs if i.from_step == "record"}
        assert from_define == from_record, step_id


def test_repair_backs_up_before_any_change() -> None:
    definition = parse_job_dir(STANDARD_JOBS_DIR / "deepwork_jobs").require()
    repair = definition.workflows_by_name["repair"]
    assert repair.entries[0] == ("survey",)
    assert "backup_manifest" in definition.step("survey").outputs
    for step_id in repair.step_ids[1:]:
        assert "survey" in definition.step(step_id).dependencies


@pytest.mark.parametrize("job_dir", LIBRARY_JOBS, ids=[p.name for p in LIBRARY_JOBS])
def test_library_job_has_a_readme_with_use_and_install(job_dir: Path) -> None:
    readme = (job_dir / "README.md").read_text(encoding="utf-8")
    assert "## When to use it" in readme
    assert f"cp -r library/jobs/{job_dir.name} " in readme
    assert ".deepwork/jobs/" in readme


def test_job_yml_example_is_a_valid_job() -> None:
    example = TEMPLATES_DIR / "job.yml.example"
    parsed = parse_job_document(
        parse_yaml(example.read_text(encoding="utf-8")), job_dir=example.parent / "weekly_status"
    )
    assert [str(p) for p in parsed.problems] == []


# --- scaffold ---------------------------------------------------------------------------------


def test_scaffold_creates_a_job_that_validates(tmp_path: Path) -> None:
    jobs_dir = tmp_path / ".deepwork" / "jobs"
    job_dir = scaffold_job(jobs_dir, "demo", summary='Say "hi": in one line')

    assert job_dir == jobs_dir / "demo"
    parsed = parse_job_dir(job_dir, expected_name="demo")
    assert [str(p) for p in parsed.problems] == []
    assert check_job_files(parsed) == []
    definition = parsed.require()
    assert definition.summary == 'Say "hi": in one line'
    assert [w.name for w in definition.workflows] == ["demo"]
    assert [s.id for s in definition.steps] == ["first_step"]
    assert (job_dir / "steps" / "first_step.md").read_text().startswith("# First step")
    assert "{{" not in (job_dir / "job.yml").read_text()


def test_scaffold_refuses_to_overwrite(tmp_path: Path) -> None:
    existing = tmp_path / "demo"
    existing.mkdir()
    (existing / "job.yml").write_text("mine")

    with pytest.raises(DeepWorkError) as caught:
        scaffold_job(tmp_path, "demo")

    assert caught.value.code == "job.already_exists"
    assert (existing / "job.yml").read_text() == "mine"
    assert sorted(p.name for p in existing.iterdir()) == ["job.yml"]


@pytest.mark.parametrize("name", ["Demo", "1demo", "my-job", "", "demo/../x", "_demo"])
def test_scaffold_rejects_bad_names(tmp_path: Path, name: str) -> None:
    with pytest.raises(DeepWorkError) as caught:
        scaffold_job(tmp_path / "jobs", name)
    assert caught.value.code == "identifier.invalid"
    assert not (tmp_path / "jobs").exists()


def test_scaffold_rejects_an_invalid_summary_and_writes_nothing(tmp_path: Path) -> None:
    with pytest.raises(DeepWorkError) as caught:
        scaffold_job(tmp_path, "demo", summary="x" * 201)
    assert caught.value.code == "job.invalid"
    assert list(tmp_path.iterdir()) == []


def test_template_placeholders_are_all_filled() -> None:
    placeholders = set(re.findall(r"\{\{(\w+)\}\}", JOB_TEMPLATE.read_text()))
    assert placeholders == {"job_name", "summary", "step_id", "step_name"}


@pytest.mark.parametrize("job_dir", ALL_JOBS, ids=JOB_IDS)
def test_every_step_file_names_its_outputs(job_dir: Path) -> None:
    """A step's instructions tell the agent each output by the name `finished_step` expects."""
    definition = parse_job_dir(job_dir).require()
    missing = []
    for step in _steps_with_files(definition):
        text = (job_dir / step.instructions_file).read_text(encoding="utf-8")
        missing += [
            f"{step.id}: {name}"
            for name in step.outputs
            if not re.search(rf"(?<![\w-]){re.escape(name)}(?![\w-])", text)
        ]
    assert missing == []


@pytest.mark.parametrize("job_dir", ALL_JOBS, ids=JOB_IDS)
def test_every_step_file_ends_with_a_quality_checklist(job_dir: Path) -> None:
    """The agent checks its own work against the step's reviews before it checks in."""
    definition = parse_job_dir(job_dir).require()
    missing = [
        step.id
        for step in _steps_with_files(definition)
        if "## Before you finish" not in (job_dir / step.instructions_file).read_text("utf-8")
    ]
    assert missing == []
