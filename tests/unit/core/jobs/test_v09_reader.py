"""The 0.9 reader keeps the 0.9.x step keys out of the job model and names them as files do."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from deepwork_core.jobs.formats.convert import convert_job
from deepwork_core.jobs.model import Step
from deepwork_core.jobs.parser import check_job_files, parse_job_dir, parse_job_source

from tests.fixtures.jobdata import changed, valid_job, write_job

FIXTURE = Path(__file__).resolve().parents[3] / "fixtures" / "jobs_v010" / "meeting_digest"


def _legacy_job() -> dict[str, Any]:
    data = changed(valid_job(), ("steps", 1, "stop_hooks"), [{"prompt_file": "hooks/verify.md"}])
    return changed(data, ("steps", 0, "exposed"), True)


def test_stop_hooks_join_after_agent_and_the_model_keeps_no_legacy_key(tmp_path: Path) -> None:
    definition = parse_job_dir(write_job(tmp_path, _legacy_job())).require()
    second = definition.step("second")
    assert second.hooks is not None
    assert [(a.prompt, a.prompt_file) for a in second.hooks.after_agent] == [
        ("Check the report.", None),
        (None, "hooks/verify.md"),
    ]
    legacy = {"stop_hooks", "exposed", "hidden"}
    for step in definition.steps:
        assert type(step) is Step
        assert not legacy & (step.__dict__.keys() | step.model_fields_set)
    assert not legacy & set(Step.model_fields)


def test_a_missing_stop_hooks_file_is_named_by_its_key_in_the_file(tmp_path: Path) -> None:
    job_dir = write_job(tmp_path, _legacy_job())
    problems = check_job_files(parse_job_dir(job_dir))
    assert [(p.code, p.key, p.step) for p in problems] == [
        ("job.file_missing", "steps[1].stop_hooks[0].prompt_file", "second")
    ]
    text = (job_dir / "job.yml").read_text(encoding="utf-8").splitlines()
    assert problems[0].line is not None
    assert "hooks/verify.md" in text[problems[0].line - 1]


def test_a_stop_hooks_path_outside_the_job_is_reported_at_its_key(tmp_path: Path) -> None:
    data = changed(valid_job(), ("steps", 1, "stop_hooks"), [{"script": "../x.sh"}])
    parsed = parse_job_source(
        write_job(tmp_path, data).joinpath("job.yml").read_text(), job_dir=tmp_path / "demo"
    )
    assert [(p.code, p.key) for p in parsed.errors] == [
        ("job.path_outside_job", "steps[1].stop_hooks[0].script")
    ]


def test_converting_still_names_exposed_and_hidden(tmp_path: Path) -> None:
    job_dir = write_job(tmp_path, changed(_legacy_job(), ("steps", 1, "hidden"), True))
    warnings = convert_job(parse_job_dir(job_dir), "0.10").warnings
    assert "step 'first': 'exposed' has no place in the 0.10 format" in warnings
    assert "step 'second': 'hidden' has no place in the 0.10 format" in warnings


@pytest.mark.parametrize("fmt", ["0.9", "0.10"])
def test_both_formats_reject_two_step_bodies_alike(tmp_path: Path, fmt: str) -> None:
    if fmt == "0.9":
        data: Any = changed(valid_job(), ("steps", 0, "instructions"), "Do it.")
        parsed = parse_job_source(_yaml(data), job_dir=tmp_path)
    else:
        text = (FIXTURE / "job.yml").read_text(encoding="utf-8")
        parsed = parse_job_source(text, job_dir=tmp_path)
        assert parsed.ok
        step = next(iter(parsed.origins.values()))
        data = _with_second_body(text, step)
        parsed = parse_job_source(_yaml(data), job_dir=tmp_path)
    bodies = [p for p in parsed.errors if p.code == "job.invalid_step_body"]
    assert len(bodies) == 1, parsed.problems
    assert (
        "exactly one of 'instructions_file', 'instructions' or 'sub_workflow'" in bodies[0].message
    )


def _yaml(data: Any) -> str:
    return yaml.safe_dump(data, sort_keys=False)


def _with_second_body(text: str, path: tuple[str | int, ...]) -> Any:
    data = yaml.safe_load(text)
    node = data
    for part in path:
        node = node[part]
    key = "instructions_file" if "instructions" in node else "instructions"
    node[key] = "steps/extra.md" if key == "instructions_file" else "Do it."
    return data
