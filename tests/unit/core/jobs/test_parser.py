"""deepwork_core.jobs.parser: every check of docs/job-format.md, reported with file, line, step,
key."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from deepwork_core.base.errors import Problem, Severity
from deepwork_core.jobs.errors import JobInvalidError
from deepwork_core.jobs.parser import (
    ParsedJob,
    check_job_files,
    format_problems,
    load_job,
    parse_job_dir,
    parse_job_source,
)

from tests.fixtures.corpus import SOURCES, corpus_root
from tests.fixtures.jobdata import (
    SEMANTIC_CASES,
    SHAPE_CASES,
    changed,
    valid_job,
    write_job,
)

# Expected verdicts, per source: folder -> (YAML name, steps, workflows) for valid files, or
# (YAML name's code, key) of the named reason for invalid ones. `compat` is the project's own set
# (tests/fixtures/compat/INDEX.md); `shared` the optional DeepWork 0.9.1 originals.
VALID: dict[str, dict[str, tuple[str, int, int]]] = {
    "compat": {
        "exposed_folder": ("exposed_demo", 2, 0),
        "one_report": ("one_report", 1, 0),
        "parallel_flow_job": ("parallel_flow", 5, 1),
        "recipes": ("recipes", 3, 1),
        "release_notes_job": ("release_notes", 4, 0),
        "rule_keeper": ("rule_keeper", 4, 2),
        "toolkit": ("toolkit", 6, 3),
    },
    "shared": {
        "complex_job": ("competitive_research", 4, 0),
        "concurrent_steps_job": ("concurrent_workflow", 6, 1),
        "deepwork_jobs": ("deepwork_jobs", 8, 3),
        "deepwork_reviews": ("deepwork_reviews", 6, 2),
        "exposed_step_job": ("exposed_job", 2, 0),
        "fruits": ("fruits", 2, 1),
        "job_with_doc_spec": ("job_with_doc_spec", 1, 0),
        "simple_job": ("simple_job", 1, 0),
        "test_job_flow": ("test_job_flow", 3, 1),
        "update_job_schema": ("update_job_schema", 8, 1),
    },
}
INVALID: dict[str, dict[str, tuple[str, str]]] = {
    "compat": {
        "broken_job": ("job.missing_key", "summary"),
        "legacy_criteria": ("job.missing_key", "steps[1].reviews"),
    },
    "shared": {
        "invalid_job": ("job.missing_key", "summary"),
        "spec_driven_development": ("job.missing_key", "steps[5].reviews"),
    },
}
VALID_CASES = [
    pytest.param(source, folder, id=f"{source}-{folder}")
    for source in SOURCES
    for folder in sorted(VALID[source])
]
INVALID_CASES = [
    pytest.param(source, folder, id=f"{source}-{folder}")
    for source in SOURCES
    for folder in sorted(INVALID[source])
]


def _parse(tmp_path: Path, data: dict[str, Any] | str | bytes) -> ParsedJob:
    return parse_job_dir(write_job(tmp_path, data))


def _find(parsed: ParsedJob, code: str, key: str) -> Problem:
    hits = [p for p in parsed.problems if p.code == code and p.key == key]
    assert hits, f"no {code} at {key}; got:\n{format_problems(parsed.problems)}"
    return hits[0]


# --- the corpus ------------------------------------------------------------------------------


@pytest.mark.parametrize("source", SOURCES)
def test_corpus_index_lists_every_job_folder(source: str) -> None:
    folders = {p.parent.name for p in (corpus_root(source) / "jobs").glob("*/job.yml")}
    assert folders == set(VALID[source]) | set(INVALID[source])


@pytest.mark.parametrize(("source", "folder"), VALID_CASES)
def test_corpus_valid_jobs_load(source: str, folder: str) -> None:
    yaml_name, steps, workflows = VALID[source][folder]
    job_dir = corpus_root(source) / "jobs" / folder
    # The file content is judged on its own: the folder-name rule is tested with discovery.
    parsed = parse_job_dir(job_dir, expected_name=yaml_name)
    assert parsed.errors == [], format_problems(parsed.errors)
    definition = parsed.require()
    assert definition.name == yaml_name
    assert (len(definition.steps), len(definition.workflows)) == (steps, workflows)
    reachable = {step_id for workflow in definition.workflows for step_id in workflow.step_ids}
    unreachable = {p.step for p in parsed.warnings if p.code == "job.unreachable_step"}
    assert unreachable == {step.id for step in definition.steps} - reachable


@pytest.mark.parametrize(("source", "folder"), INVALID_CASES)
def test_corpus_invalid_jobs_are_rejected_for_the_listed_reason(source: str, folder: str) -> None:
    code, key = INVALID[source][folder]
    job_dir = corpus_root(source) / "jobs" / folder
    raw = (job_dir / "job.yml").read_bytes()
    yaml_name = yaml.safe_load(raw)["name"]
    parsed = parse_job_source(raw, job_dir=job_dir, expected_name=yaml_name)
    assert parsed.definition is None
    problem = _find(parsed, code, key)
    assert problem.file == job_dir / "job.yml"
    assert problem.line is not None


@pytest.mark.parametrize(
    ("source", "folder", "name", "first", "group"),
    [
        pytest.param(
            "compat",
            "parallel_flow_job",
            "parallel_flow",
            "prepare",
            ("measure_cpu", "measure_disk", "measure_network"),
            id="compat",
        ),
        pytest.param(
            "shared",
            "concurrent_steps_job",
            "concurrent_workflow",
            "setup",
            ("research_web", "research_docs", "research_interviews"),
            id="shared",
        ),
    ],
)
def test_concurrent_groups_of_the_corpus_keep_their_shape(
    source: str, folder: str, name: str, first: str, group: tuple[str, ...]
) -> None:
    definition = load_job(corpus_root(source) / "jobs" / folder, expected_name=name)
    entries = definition.workflows[0].entries
    assert entries[0] == (first,)
    assert group in entries


def test_the_older_layout_reports_step_level_criteria_as_unknown() -> None:
    job_dir = corpus_root("compat") / "jobs" / "legacy_criteria"
    parsed = parse_job_dir(job_dir)
    keys = {(p.code, p.key) for p in parsed.errors}
    assert ("job.unknown_key", "steps[0].quality_criteria") in keys
    assert ("job.missing_key", "steps[0].reviews") in keys


# --- one failing input per check -------------------------------------------------------------


def test_the_valid_base_job_has_no_problem(tmp_path: Path) -> None:
    parsed = _parse(tmp_path, valid_job())
    assert parsed.problems == ()
    assert parsed.require().step("second").file_inputs[0].from_step == "first"


@pytest.mark.parametrize(
    ("data", "code", "key", "step"),
    [pytest.param(*case[1:], id=case[0]) for case in SHAPE_CASES + SEMANTIC_CASES],
)
def test_each_check_names_file_line_step_and_key(
    tmp_path: Path, data: dict[str, Any], code: str, key: str, step: str | None
) -> None:
    job_dir = write_job(tmp_path, data)
    parsed = parse_job_dir(job_dir)
    assert not parsed.ok
    with pytest.raises(JobInvalidError) as raised:
        parsed.require()
    assert raised.value.code == "job.invalid"
    problem = _find(parsed, code, key)
    assert problem.severity is Severity.ERROR
    assert problem.step == step
    assert problem.line is not None
    text = str(problem)
    assert text.startswith(f"{job_dir / 'job.yml'}:{problem.line}: {code}: ")
    assert key in text
    if step is not None:
        assert f"step {step!r}" in text


def test_lines_point_at_the_offending_key(tmp_path: Path) -> None:
    text = """\
name: demo
version: "1.0.0"
summary: A demo job
common_job_info_provided_to_all_steps_at_runtime: Shared context.
workflows:
  - name: main
    summary: The main flow
    steps: [first, ghost]
steps:
  - id: first
    name: First
    description: Gather notes
    instructions_file: steps/first.md
    outputs: {}
    reviews: []
    dependencies:
      - first
colour: red
"""
    parsed = _parse(tmp_path, text)
    assert _find(parsed, "job.unknown_key", "colour").line == 18
    assert _find(parsed, "job.dependency_cycle", "steps[0].dependencies[0]").line == 17
    assert _find(parsed, "job.unknown_workflow_step", "workflows[0].steps[1]").line == 8


def test_a_file_with_three_different_problems_reports_all_three(tmp_path: Path) -> None:
    data = changed(valid_job(), ("colour",), "red")  # shape error at the job level
    data = changed(data, ("steps", 1, "dependencies"), ["first", "ghost"])
    data = changed(data, ("steps", 1, "reviews", 0, "run_each"), "summary.md")
    parsed = _parse(tmp_path, data)
    codes = {p.code for p in parsed.errors}
    assert codes == {"job.unknown_key", "job.unknown_dependency", "job.invalid_run_each"}


def test_a_broken_step_does_not_hide_problems_of_the_others(tmp_path: Path) -> None:
    data = changed(valid_job(), ("steps", 0, "outputs", "notes.md", "type"), "folder")
    data = changed(data, ("steps", 1, "reviews", 0, "run_each"), "summary.md")
    data = changed(data, ("workflows", 0, "steps"), ["first", "second", "ghost"])
    parsed = _parse(tmp_path, data)
    assert {p.code for p in parsed.errors} == {
        "job.invalid_value",
        "job.invalid_run_each",
        "job.unknown_workflow_step",
    }


def test_dependency_on_a_step_with_a_shape_error_is_not_called_unknown(tmp_path: Path) -> None:
    data = changed(valid_job(), ("steps", 0, "outputs", "notes.md", "type"), "folder")
    parsed = _parse(tmp_path, data)
    assert [p.code for p in parsed.errors] == ["job.invalid_value"]


def test_unknown_key_suggests_the_close_spelling(tmp_path: Path) -> None:
    parsed = _parse(tmp_path, changed(valid_job(), ("steps", 0, "dependancies"), []))
    assert (
        "did you mean 'dependencies'"
        in _find(parsed, "job.unknown_key", "steps[0].dependancies").message
    )


def test_step_in_no_workflow_is_a_warning_not_an_error(tmp_path: Path) -> None:
    parsed = _parse(tmp_path, changed(valid_job(), ("workflows", 0, "steps"), ["first"]))
    assert parsed.ok
    assert parsed.errors == []
    (warning,) = parsed.warnings
    assert warning.code == "job.unreachable_step"
    assert (warning.step, warning.key, warning.severity) == (
        "second",
        "steps[1].id",
        Severity.WARNING,
    )


def test_name_must_equal_the_expected_folder_name(tmp_path: Path) -> None:
    job_dir = write_job(tmp_path, valid_job("demo"))
    assert parse_job_dir(job_dir, expected_name="demo").ok
    parsed = parse_job_dir(job_dir, expected_name="other")
    assert not parsed.ok
    assert _find(parsed, "job.name_mismatch", "name").line == 1


def test_concurrent_group_without_shared_outputs_is_fine(tmp_path: Path) -> None:
    data = changed(valid_job(), ("steps", 1, "dependencies"), [])
    data = changed(data, ("steps", 1, "inputs"), [])
    data = changed(data, ("workflows", 0, "steps"), [["first", "second"]])
    parsed = _parse(tmp_path, data)
    assert parsed.problems == ()
    assert parsed.require().workflows[0].entries == [("first", "second")]


def test_stop_hooks_are_read_as_after_agent(tmp_path: Path) -> None:
    data = changed(valid_job(), ("steps", 1, "stop_hooks"), [{"prompt": "Verify."}])
    step = _parse(tmp_path, data).require().step("second")
    assert [a.prompt for a in step.hook_actions("after_agent")] == ["Check the report.", "Verify."]
    assert step.hook_actions("before_tool") == []


# --- files the job refers to -----------------------------------------------------------------


def test_check_job_files_reports_missing_instruction_and_hook_files(tmp_path: Path) -> None:
    data = changed(valid_job(), ("steps", 1, "hooks", "after_agent"), [{"script": "hooks/x.sh"}])
    job_dir = write_job(tmp_path, data)
    (job_dir / "steps" / "first.md").unlink()
    parsed = parse_job_dir(job_dir)
    assert parsed.ok
    problems = check_job_files(parsed)
    assert {(p.code, p.key, p.step) for p in problems} == {
        ("job.file_missing", "steps[0].instructions_file", "first"),
        ("job.file_missing", "steps[1].hooks.after_agent[0].script", "second"),
    }
    assert all(p.line is not None and "does not exist" in p.message for p in problems)


def test_check_job_files_is_quiet_when_everything_exists(tmp_path: Path) -> None:
    assert check_job_files(parse_job_dir(write_job(tmp_path, valid_job()))) == []


def test_check_job_files_does_not_reread_job_yml(tmp_path: Path) -> None:
    job_dir = write_job(tmp_path, valid_job())
    parsed = parse_job_dir(job_dir)
    (job_dir / "job.yml").write_text("{{{ broken", encoding="utf-8")
    (job_dir / "steps" / "second.md").unlink()
    (problem,) = check_job_files(parsed)
    assert problem.key == "steps[1].instructions_file"


# --- reading the file ------------------------------------------------------------------------


def test_missing_job_yml_is_a_problem_not_a_crash(tmp_path: Path) -> None:
    parsed = parse_job_dir(tmp_path / "nowhere")
    assert [p.code for p in parsed.problems] == ["yaml.unreadable"]


@pytest.mark.parametrize(
    ("content", "code", "line"),
    [
        pytest.param(b"", "yaml.empty", None, id="empty"),
        pytest.param(b"# only a comment\n\n", "yaml.empty", None, id="comment-only"),
        pytest.param(b"- a\n- b\n", "yaml.not_mapping", 1, id="list-top-level"),
        pytest.param(b"just text\n", "yaml.not_mapping", 1, id="scalar-top-level"),
        pytest.param(b"name: demo\nsteps: [a, b\n", "yaml.syntax", 3, id="malformed"),
        pytest.param(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", "yaml.not_text", None, id="binary"),
        pytest.param(b"name: demo\nname: other\n", "yaml.duplicate_key", 2, id="duplicate-key"),
    ],
)
def test_unreadable_content_becomes_one_clear_problem(
    tmp_path: Path, content: bytes, code: str, line: int | None
) -> None:
    parsed = _parse(tmp_path, content)
    (problem,) = parsed.problems
    assert (problem.code, problem.line) == (code, line)
    assert problem.file == tmp_path / "demo" / "job.yml"
    with pytest.raises(JobInvalidError):
        parsed.require()


def test_load_job_raises_with_every_error(tmp_path: Path) -> None:
    job_dir = write_job(tmp_path, changed(valid_job(), ("version",), "one"))
    with pytest.raises(JobInvalidError) as raised:
        load_job(job_dir)
    assert [p.code for p in raised.value.problems] == ["job.pattern_mismatch"]
    assert "version" in raised.value.message
