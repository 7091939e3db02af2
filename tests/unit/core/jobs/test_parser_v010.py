"""Reading `job.yml` files in the 0.10 format onto the one job model; the 0.9 format kept strict."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml
from deepwork_core.base.errors import Severity
from deepwork_core.jobs.parser import (
    ParsedJob,
    check_job_files,
    format_problems,
    parse_job_dir,
    parse_job_source,
)
from deepwork_core.jobs.schema import JOB_SCHEMA_PATH
from deepwork_core.jobs.steps.parts import InputType, OutputType, ReviewStrategy, StepInput

from tests.fixtures.jobdata import changed, valid_job, write_job
from tests.fixtures.paths import FIXTURES as ALL_FIXTURES

FIXTURES = ALL_FIXTURES / "jobs_v010"
FIXTURE_DIRS = sorted(p.parent for p in FIXTURES.glob("*/job.yml"))


def _fixture(name: str) -> dict[str, Any]:
    data = yaml.safe_load((FIXTURES / name / "job.yml").read_text(encoding="utf-8"))
    assert isinstance(data, dict)
    return data


def _parse(tmp_path: Path, data: dict[str, Any]) -> ParsedJob:
    return parse_job_dir(write_job(tmp_path, data))


def _codes(parsed: ParsedJob) -> list[tuple[str, str | None, int | None]]:
    return [(p.code, p.key, p.line) for p in parsed.problems]


@pytest.mark.parametrize("job_dir", FIXTURE_DIRS, ids=lambda p: p.name)
def test_every_fixture_job_loads_without_problems(job_dir: Path) -> None:
    parsed = parse_job_dir(job_dir, expected_name=job_dir.name)
    assert parsed.problems == (), format_problems(parsed.problems)
    assert parsed.format == "0.10"
    assert parsed.definition is not None


@pytest.mark.parametrize("job_dir", FIXTURE_DIRS, ids=lambda p: p.name)
def test_the_shipped_schema_accepts_every_fixture_job(job_dir: Path) -> None:
    schema = json.loads(JOB_SCHEMA_PATH.read_text(encoding="utf-8"))
    data = yaml.safe_load((job_dir / "job.yml").read_text(encoding="utf-8"))
    assert list(jsonschema.Draft202012Validator(schema).iter_errors(data)) == []


def test_inputs_from_earlier_steps_become_file_inputs_and_dependencies() -> None:
    job = parse_job_dir(FIXTURES / "release_digest").require()
    collect, write = job.step("collect"), job.step("write")
    assert collect.inputs == [
        StepInput(name="version", description=_description(job, "version"), type=InputType.STRING)
    ]
    assert write.dependencies == ["collect"]
    assert StepInput(file="changes.json", from_step="collect") in write.inputs
    assert write.outputs["headline"].type is OutputType.STRING
    assert write.outputs["headline"].required is False
    assert write.outputs["notes.md"].type is OutputType.FILE_PATH
    assert collect.outputs["changes.json"].json_schema is not None
    assert write.process_requirements == {
        "user_facing": "The notes MUST be written for users of the software."
    }
    assert collect.instructions is not None
    assert collect.instructions_file is None
    assert collect.description == "Collect the changes"


def _description(job: Any, name: str) -> str:
    data = _fixture(job.name)
    return next(a["description"] for a in data["step_arguments"] if a["name"] == name)


def test_workflow_keys_reach_the_model() -> None:
    job = parse_job_dir(FIXTURES / "release_digest").require()
    workflow = job.workflows_by_name["draft"]
    assert workflow.post_workflow_instructions is not None
    assert "pull request" in workflow.post_workflow_instructions
    assert job.common_info("draft").startswith("Releases follow semantic versioning")
    audit = parse_job_dir(FIXTURES / "code_audit").require()
    assert audit.workflows_by_name["full_audit"].agent == "general-purpose"
    assert audit.common_info("audit_module") == ""
    assert audit.version is None


def test_argument_and_output_reviews_both_apply_to_the_producing_step() -> None:
    audit = parse_job_dir(FIXTURES / "code_audit").require()
    [findings] = audit.step("scan").reviews
    assert (findings.run_each, findings.strategy) == ("findings.md", ReviewStrategy.INDIVIDUAL)
    assert findings.agent == {"claude": "security-reviewer"}
    assert findings.quality_criteria == {}
    assert findings.additional_review_guidance == "Each finding MUST name a file and a line."
    [module] = audit.step("inspect").reviews
    assert module.strategy is ReviewStrategy.MATCHES_TOGETHER
    [summary] = audit.step("summarize").reviews
    assert summary.additional_context is not None
    assert summary.additional_context.all_changed_filenames is True


def test_a_review_of_an_argument_applies_to_every_step_that_produces_it(tmp_path: Path) -> None:
    data = _fixture("bug_triage")
    data["workflows"]["triage"]["steps"][1]["outputs"]["repro.md"] = {}
    job = _parse(tmp_path, data).require()
    assert [r.run_each for r in job.step("triage__reproduce").reviews] == ["repro.md"]
    assert [r.run_each for r in job.step("classify").reviews] == ["repro.md"]


def test_steps_sharing_a_name_are_qualified_only_when_they_differ() -> None:
    triage = parse_job_dir(FIXTURES / "bug_triage").require()
    assert triage.workflows_by_name["triage"].step_ids == ["triage__reproduce", "classify"]
    assert triage.workflows_by_name["quick"].step_ids == ["quick__reproduce", "plan_fix"]
    assert triage.step("plan_fix").dependencies == ["quick__reproduce"]
    optional = next(i for i in triage.step("plan_fix").inputs if i.name == "severity")
    assert optional.required is False
    digest = parse_job_dir(FIXTURES / "meeting_digest").require()
    assert digest.workflows_by_name["recap"].step_ids == ["extract"]
    assert [s.id for s in digest.steps] == ["extract", "publish"]


def test_sub_workflow_steps_keep_their_reference() -> None:
    plan = parse_job_dir(FIXTURES / "launch_plan").require()
    ref = plan.step("release_notes").sub_workflow
    assert ref is not None
    assert (ref.workflow_job, ref.workflow_name) == ("release_digest", "draft")
    assert plan.step("outline").instructions_file == "steps/outline.md"


def _broken(path: tuple[str | int, ...], value: Any, job: str = "release_digest") -> Any:
    return changed(_fixture(job), path, value)


def _without_key(data: dict[str, Any], *path: str | int) -> dict[str, Any]:
    data = copy.deepcopy(data)
    node: Any = data
    for part in path[:-1]:
        node = node[part]
    del node[path[-1]]
    return data


STEP = ("workflows", "draft", "steps", 1)

#: (id, job data, code, key): each must be reported with the line of the key.
ERROR_CASES = [
    (
        "unknown_argument",
        _broken((*STEP, "inputs", "nope"), {}),
        "job.unknown_argument",
        "workflows.draft.steps[1].inputs.nope",
    ),
    (
        "duplicate_step",
        _broken((*STEP, "name"), "collect"),
        "job.duplicate_workflow_step",
        "workflows.draft.steps[1].name",
    ),
    (
        "unknown_workflow",
        _broken(
            ("workflows", "full_audit", "steps", 1, "sub_workflow", "workflow_name"),
            "gone",
            "code_audit",
        ),
        "job.unknown_workflow",
        "workflows.full_audit.steps[1].sub_workflow.workflow_name",
    ),
    (
        "sub_workflow_cycle",
        _broken(
            ("workflows", "full_audit", "steps", 1, "sub_workflow", "workflow_name"),
            "full_audit",
            "code_audit",
        ),
        "job.sub_workflow_cycle",
        "workflows.full_audit",
    ),
    (
        "invalid_json_schema",
        _broken(("step_arguments", 1, "json_schema", "type"), "objekt"),
        "job.invalid_json_schema",
        "step_arguments[1].json_schema",
    ),
    (
        "no_step_body",
        _without_key(_fixture("release_digest"), *STEP, "instructions"),
        "job.invalid_step_body",
        "workflows.draft.steps[1]",
    ),
    (
        "two_step_bodies",
        _broken((*STEP, "sub_workflow"), {"workflow_name": "draft"}),
        "job.invalid_step_body",
        "workflows.draft.steps[1]",
    ),
    (
        "unknown_step_key",
        _broken((*STEP, "instruction"), "x"),
        "job.unknown_key",
        "workflows.draft.steps[1].instruction",
    ),
    (
        "bad_argument_type",
        _broken(("step_arguments", 0, "type"), "number"),
        "job.invalid_value",
        "step_arguments[0].type",
    ),
    (
        "bad_strategy",
        _broken(("step_arguments", 2, "review", "strategy"), "all_changed_files"),
        "job.invalid_value",
        "step_arguments[2].review.strategy",
    ),
    (
        "missing_arguments",
        _without_key(_fixture("release_digest"), "step_arguments"),
        "job.missing_key",
        "step_arguments",
    ),
]


@pytest.mark.parametrize(
    ("data", "code", "key"), [pytest.param(*c[1:], id=c[0]) for c in ERROR_CASES]
)
def test_errors_name_code_key_and_line(tmp_path: Path, data: Any, code: str, key: str) -> None:
    parsed = _parse(tmp_path, data)
    assert parsed.definition is None
    hits = [p for p in parsed.problems if p.code == code and p.key == key]
    assert hits, format_problems(parsed.problems)
    assert hits[0].line is not None
    assert str(hits[0]).startswith(f"{parsed.job_file}:{hits[0].line}: {code}: ")


@pytest.mark.parametrize("data", [pytest.param(c[1], id=c[0]) for c in ERROR_CASES[5:]])
def test_the_schema_rejects_the_shape_errors(data: Any) -> None:
    schema = json.loads(JOB_SCHEMA_PATH.read_text(encoding="utf-8"))
    assert not jsonschema.Draft202012Validator(schema).is_valid(data)


def test_unknown_key_hint_lists_the_keys_of_the_newer_format(tmp_path: Path) -> None:
    parsed = _parse(tmp_path, _broken((*STEP, "instruction"), "x"))
    [problem] = [p for p in parsed.problems if p.code == "job.unknown_key"]
    assert "did you mean 'instructions'?" in problem.message
    assert problem.step == "draft/write"


def test_repeated_argument_is_a_warning_and_the_first_wins(tmp_path: Path) -> None:
    data = _fixture("release_digest")
    data["step_arguments"].append({**data["step_arguments"][0], "description": "later"})
    parsed = _parse(tmp_path, data)
    assert [(p.code, p.severity) for p in parsed.problems] == [
        ("job.duplicate_argument", Severity.WARNING)
    ]
    assert parsed.require().step("collect").inputs[0].description.startswith("The version")


def test_json_schema_on_a_string_argument_is_ignored_with_a_warning(tmp_path: Path) -> None:
    parsed = _parse(tmp_path, _broken(("step_arguments", 0, "json_schema"), {"type": "string"}))
    assert [p.code for p in parsed.warnings] == ["job.json_schema_ignored"]
    assert parsed.require().step("collect").inputs[0].name == "version"


def test_instructions_file_outside_the_job_is_reported_at_its_step(tmp_path: Path) -> None:
    data = _broken(("workflows", "plan", "steps", 0, "instructions_file"), "../x.md", "launch_plan")
    parsed = _parse(tmp_path, data)
    [problem] = parsed.errors
    assert (problem.code, problem.key) == (
        "job.path_outside_job",
        "workflows.plan.steps[0].instructions_file",
    )
    assert problem.line is not None


def test_name_mismatch_applies_to_the_newer_format_too(tmp_path: Path) -> None:
    parsed = parse_job_dir(write_job(tmp_path, _fixture("bug_triage")), expected_name="other")
    assert [p.code for p in parsed.errors] == ["job.name_mismatch"]


# --- the 0.9 format stays as strict as it was -------------------------------------------


@pytest.mark.parametrize(
    ("path", "value", "key"),
    [
        (("steps", 0, "instructions"), "inline", "steps[0].instructions"),
        (("steps", 0, "process_requirements"), {"a": "b"}, "steps[0].process_requirements"),
        (
            ("workflows", 0, "post_workflow_instructions"),
            "x",
            "workflows[0].post_workflow_instructions",
        ),
        (
            ("steps", 0, "outputs", "notes.md", "json_schema"),
            {},
            "steps[0].outputs.notes.md.json_schema",
        ),
        (("steps", 1, "reviews", 0, "strategy"), "individual", "steps[1].reviews[0].strategy"),
    ],
)
def test_v010_keys_are_unknown_in_a_v09_job(
    tmp_path: Path, path: tuple[str | int, ...], value: Any, key: str
) -> None:
    parsed = _parse(tmp_path, changed(valid_job(), path, value))
    problems = [p for p in parsed.errors if p.key == key]
    assert [p.code for p in problems] == ["job.unknown_key"], format_problems(parsed.problems)
    assert "the 0.10 format" in problems[0].message
    assert parsed.format == "0.9"


def test_v010_output_types_are_invalid_in_a_v09_job(tmp_path: Path) -> None:
    parsed = _parse(
        tmp_path, changed(valid_job(), ("steps", 0, "outputs", "notes.md", "type"), "string")
    )
    assert ("job.invalid_value", "steps[0].outputs.notes.md.type") in [
        (p.code, p.key) for p in parsed.errors
    ]


@pytest.mark.parametrize("key", ["version", "common_job_info_provided_to_all_steps_at_runtime"])
def test_v09_jobs_still_need_version_and_common_info(tmp_path: Path, key: str) -> None:
    data = valid_job()
    del data[key]
    parsed = _parse(tmp_path, data)
    assert [(p.code, p.key) for p in parsed.errors] == [("job.missing_key", key)]


def test_the_format_is_told_by_shape() -> None:
    text = yaml.safe_dump(_fixture("meeting_digest"))
    assert parse_job_source(text, job_dir=Path("/nowhere")).format == "0.10"
    assert parse_job_source(yaml.safe_dump(valid_job()), job_dir=Path("/nowhere")).format == "0.9"


def test_a_missing_instructions_file_names_the_workflow_step(tmp_path: Path) -> None:
    job_dir = write_job(tmp_path, _fixture("launch_plan"))
    parsed = parse_job_dir(job_dir)
    [problem] = check_job_files(parsed)
    assert (problem.code, problem.step) == ("job.file_missing", "plan/outline")
    assert problem.key == "workflows.plan.steps[0].instructions_file"
    assert problem.line is not None
