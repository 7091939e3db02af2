"""The job-format fields of docs/evidence.md: `may_change`, `approval` and `scope_guard`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml
from deepwork_core.jobs.model import ScopeGuard
from deepwork_core.jobs.parser import parse_job_dir
from deepwork_core.jobs.schema import JOB_SCHEMA_PATH

from tests.fixtures.jobdata import changed, valid_job, write_job
from tests.fixtures.paths import FIXTURES as ALL_FIXTURES


def test_the_fields_are_optional_and_default_to_a_noting_guard(tmp_path: Path) -> None:
    parsed = parse_job_dir(write_job(tmp_path, valid_job()))
    assert not parsed.problems
    assert parsed.definition is not None
    assert parsed.definition.scope_guard is ScopeGuard.NOTE
    first = parsed.definition.step("first")
    assert first.may_change == []
    assert first.approval is None


def test_may_change_approval_and_scope_guard_are_read(tmp_path: Path) -> None:
    data = changed(valid_job(), ("steps", 1, "may_change"), ["docs/**", "CHANGELOG.md"])
    data = changed(data, ("steps", 1, "approval"), {"prompt": "Ship it?", "show": ["report.md"]})
    data["scope_guard"] = "strict"
    parsed = parse_job_dir(write_job(tmp_path, data))
    assert not parsed.problems
    assert parsed.definition is not None
    second = parsed.definition.step("second")
    assert second.may_change == ["docs/**", "CHANGELOG.md"]
    assert second.approval is not None
    assert (second.approval.prompt, second.approval.show) == ("Ship it?", ["report.md"])
    assert parsed.definition.scope_guard is ScopeGuard.STRICT


def test_an_approval_may_only_show_outputs_of_its_step(tmp_path: Path) -> None:
    data = changed(valid_job(), ("steps", 1, "approval"), {"prompt": "Ok?", "show": ["notes.md"]})
    parsed = parse_job_dir(write_job(tmp_path, data))
    assert [p.code for p in parsed.problems] == ["job.invalid_approval"]


def test_may_change_globs_stay_inside_the_project(tmp_path: Path) -> None:
    for bad in ("/etc/**", "../other/*", "docs/../../x"):
        data = changed(valid_job(), ("steps", 0, "may_change"), [bad])
        parsed = parse_job_dir(write_job(tmp_path / bad.replace("/", "_"), data))
        assert [p.code for p in parsed.problems] == ["job.invalid_may_change"], bad


def test_an_unknown_scope_guard_is_a_problem(tmp_path: Path) -> None:
    data = {**valid_job(), "scope_guard": "sometimes"}
    parsed = parse_job_dir(write_job(tmp_path, data))
    assert len(parsed.problems) == 1
    assert parsed.problems[0].key == "scope_guard"


# --- the 0.10 format ----------------------------------------------------------------------------

FIXTURES = ALL_FIXTURES / "jobs_v010"
PLAN_STEP = ("workflows", "change", "steps", 0)


def _signed_change() -> dict[str, Any]:
    text = (FIXTURES / "signed_change" / "job.yml").read_text(encoding="utf-8")
    data = yaml.safe_load(text)
    assert isinstance(data, dict)
    return data


def test_a_newer_job_declares_the_fields_on_its_workflow_steps() -> None:
    parsed = parse_job_dir(FIXTURES / "signed_change")
    assert parsed.format == "0.10"
    job = parsed.require()
    assert job.scope_guard is ScopeGuard.STRICT
    plan, apply = job.step("plan"), job.step("apply")
    assert plan.may_change == ["notes/**"]
    assert plan.approval is not None
    assert (plan.approval.prompt, plan.approval.show) == ("Is this plan good to go?", ["plan.md"])
    assert (apply.may_change, apply.approval) == ([], None)


def test_a_newer_job_without_the_fields_gets_the_defaults(tmp_path: Path) -> None:
    data = _signed_change()
    del data["scope_guard"]
    del data["workflows"]["change"]["steps"][0]["may_change"]
    del data["workflows"]["change"]["steps"][0]["approval"]
    job = parse_job_dir(write_job(tmp_path, data)).require()
    assert job.scope_guard is ScopeGuard.NOTE
    assert (job.step("plan").may_change, job.step("plan").approval) == ([], None)


@pytest.mark.parametrize(
    ("path", "value", "code", "key"),
    [
        pytest.param(
            (*PLAN_STEP, "approval", "show"),
            ["applied.md"],
            "job.invalid_approval",
            "workflows.change.steps[0].approval.show",  # its own line (issue 43, item 22)
            id="show_names_another_steps_output",
        ),
        pytest.param(
            (*PLAN_STEP, "may_change"),
            ["../elsewhere/**"],
            "job.invalid_may_change",
            "workflows.change.steps[0].may_change[0]",
            id="may_change_leaves_the_project",
        ),
        pytest.param(
            ("scope_guard",), "sometimes", "job.invalid_value", "scope_guard", id="scope_guard"
        ),
        pytest.param(
            (*PLAN_STEP, "approval", "title"),
            "x",
            "job.unknown_key",
            "workflows.change.steps[0].approval.title",
            id="unknown_approval_key",
        ),
        pytest.param(
            (*PLAN_STEP, "approval", "prompt"),
            "",
            "job.too_short",
            "workflows.change.steps[0].approval.prompt",
            id="empty_prompt",
        ),
    ],
)
def test_a_v010_job_reports_bad_fields_like_a_v09_job(
    tmp_path: Path, path: tuple[str | int, ...], value: Any, code: str, key: str
) -> None:
    parsed = parse_job_dir(write_job(tmp_path, changed(_signed_change(), path, value)))
    assert parsed.definition is None
    assert [(p.code, p.key) for p in parsed.problems] == [(code, key)]
    [problem] = parsed.problems
    assert problem.line is not None
    assert str(problem).startswith(f"{parsed.job_file}:{problem.line}: {code}: ")


def test_an_unknown_approval_key_hints_at_prompt_and_show(tmp_path: Path) -> None:
    data = changed(_signed_change(), (*PLAN_STEP, "approval", "promt"), "x")
    [problem] = parse_job_dir(write_job(tmp_path, data)).problems
    assert "prompt" in problem.message
    assert "show" in problem.message


@pytest.mark.parametrize("newer", [False, True], ids=["0.9", "0.10"])
def test_the_shipped_schema_covers_the_fields_in_both_formats(newer: bool) -> None:
    validator = jsonschema.Draft202012Validator(
        json.loads(JOB_SCHEMA_PATH.read_text(encoding="utf-8"))
    )
    step: tuple[str | int, ...] = PLAN_STEP if newer else ("steps", 1)
    data = _signed_change() if newer else valid_job()
    good = changed(data, (*step, "may_change"), ["docs/**"])
    good = changed(good, (*step, "approval"), {"prompt": "Ok?", "show": []})
    good = changed(good, ("scope_guard",), "off")
    assert validator.is_valid(good)
    assert not validator.is_valid(changed(good, ("scope_guard",), "sometimes"))
    assert not validator.is_valid(changed(good, (*step, "approval", "title"), "x"))
    assert not validator.is_valid(changed(good, (*step, "may_change"), "docs/**"))


@pytest.mark.parametrize("fmt", ["0.9", "0.10"])
def test_an_unquoted_scope_guard_off_is_the_mode_off(tmp_path: Path, fmt: str) -> None:
    if fmt == "0.9":
        job_dir = write_job(tmp_path, valid_job())
    else:
        job_dir = tmp_path / "signed_change"
        job_dir.mkdir()
        for item in (FIXTURES / "signed_change").iterdir():
            if item.is_file():
                (job_dir / item.name).write_bytes(item.read_bytes())
    job_yml = job_dir / "job.yml"
    lines = job_yml.read_text(encoding="utf-8").splitlines()
    kept = [line for line in lines if not line.startswith("scope_guard:")]
    kept.append("scope_guard: off")  # unquoted, as the docs write it: YAML 1.1 reads false
    job_yml.write_text("\n".join(kept) + "\n", encoding="utf-8")
    parsed = parse_job_dir(job_dir)
    assert not parsed.problems, parsed.problems
    assert parsed.definition is not None
    assert parsed.definition.scope_guard is ScopeGuard.OFF
