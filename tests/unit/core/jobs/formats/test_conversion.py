"""Converting jobs between the 0.9 and the 0.10 format, and back."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from deepwork_core.jobs.discovery import STANDARD_JOBS_DIR
from deepwork_core.jobs.formats.convert import ConversionError, convert_job, write_conversion
from deepwork_core.jobs.formats.to_v010 import review_text
from deepwork_core.jobs.formats.to_v09 import criteria_from_text
from deepwork_core.jobs.model import JobDefinition, ScopeGuard
from deepwork_core.jobs.parser import ParsedJob, parse_job_dir, parse_job_source
from deepwork_core.jobs.steps.approval import Approval
from deepwork_core.jobs.steps.parts import Review

from tests.fixtures.jobdata import changed, valid_job, write_job
from tests.fixtures.paths import REPO_ROOT

REPO = REPO_ROOT
LIBRARY_JOBS = sorted(p.parent for p in (REPO / "library" / "jobs").glob("*/job.yml"))
LIBRARY_V09 = [p for p in LIBRARY_JOBS if parse_job_dir(p).format == "0.9"]
LIBRARY_V010 = [p for p in LIBRARY_JOBS if parse_job_dir(p).format == "0.10"]
STANDARD_JOBS = sorted(p.parent for p in STANDARD_JOBS_DIR.glob("*/job.yml"))
FIXTURES = sorted(p.parent for p in (REPO / "tests" / "fixtures" / "jobs_v010").glob("*/job.yml"))


def _copy(job_dir: Path, tmp_path: Path) -> Path:
    target = tmp_path / job_dir.name
    shutil.copytree(job_dir, target)
    return target


def _origin(step_id: str, original: JobDefinition) -> str:
    """The original step of a round-tripped one. A step shared by workflows that feed it from
    different steps comes back from the 0.10 format (where steps live inside their workflow) as
    one copy per workflow, `<workflow>__<step>`, each with the inputs of its own workflow."""
    if step_id in original.steps_by_id:
        return step_id
    workflow, _, name = step_id.partition("__")
    assert workflow in original.workflows_by_name, step_id
    return name


def _instructions(job_dir: Path, definition: JobDefinition, step_id: str) -> str:
    step = definition.step(step_id)
    if step.instructions_file is not None:
        return (job_dir / step.instructions_file).read_text(encoding="utf-8").strip()
    return (step.instructions or "").strip()


def _round_trip(job_dir: Path, first: str, second: str) -> tuple[ParsedJob, list[str]]:
    """Convert `job_dir` to `first` in place, then back to `second`; the final job."""
    one = convert_job(parse_job_dir(job_dir), first)  # type: ignore[arg-type]
    write_conversion(job_dir, one, in_place=True)
    middle = parse_job_dir(job_dir)
    assert middle.ok, middle.errors
    (job_dir / "job.yml.0.9.bak").rename(job_dir / "original.bak")
    two = convert_job(middle, second)  # type: ignore[arg-type]
    write_conversion(job_dir, two, in_place=True)
    final = parse_job_dir(job_dir)
    assert final.ok, final.errors
    return final, one.warnings + two.warnings


@pytest.mark.parametrize("job_dir", LIBRARY_V09 + STANDARD_JOBS, ids=lambda p: p.name)
def test_v09_to_v010_to_v09_keeps_steps_outputs_reviews_and_instructions(
    tmp_path: Path, job_dir: Path
) -> None:
    original = parse_job_dir(job_dir).require()
    final_parsed, warnings = _round_trip(_copy(job_dir, tmp_path), "0.10", "0.9")
    final = final_parsed.require()
    listed = {s for w in original.workflows for s in w.step_ids}
    origin = {s.id: _origin(s.id, original) for s in final.steps}
    assert list(dict.fromkeys(origin.values())) == [s.id for s in original.steps if s.id in listed]
    for step in final.steps:
        before = original.step(origin[step.id])
        assert list(step.outputs) == list(before.outputs)
        assert (step.may_change, step.approval) == (before.may_change, before.approval)
        ran = {origin[i] for w in final.workflows if step.id in w.step_ids for i in w.step_ids}
        kept = [i.file or i.name for i in before.inputs if i.from_step in ran | {None}]
        assert [i.file or i.name for i in step.inputs] == kept
        assert _instructions(final_parsed.job_dir, final, step.id) == _instructions(
            job_dir, original, before.id
        )
        kept = {(r.run_each, tuple(r.quality_criteria.items())) for r in step.reviews}
        for review in before.reviews:
            moved = (
                review.run_each == "step"
                or sum(r.run_each == review.run_each for r in before.reviews) > 1
            )
            if moved:  # attached to an output or merged: each such move is named
                assert any(before.id in w and "review" in w for w in warnings), warnings
            else:
                criteria = tuple((k, v.strip()) for k, v in review.quality_criteria.items())
                assert (review.run_each, criteria) in {
                    (run_each, tuple((k, v.strip()) for k, v in items)) for run_each, items in kept
                }
    assert [w.name for w in final.workflows] == [w.name for w in original.workflows]
    assert final.scope_guard is original.scope_guard


@pytest.mark.parametrize("job_dir", FIXTURES + LIBRARY_V010, ids=lambda p: p.name)
def test_v010_to_v09_to_v010_keeps_steps_outputs_and_review_instructions(
    tmp_path: Path, job_dir: Path
) -> None:
    original = parse_job_dir(job_dir).require()
    copy = _copy(job_dir, tmp_path)
    to_v09 = convert_job(parse_job_dir(copy), "0.9")
    write_conversion(copy, to_v09, in_place=True)
    back = convert_job(parse_job_dir(copy), "0.10")
    final = parse_job_source(back.job_yml, job_dir=copy).require()
    assert [s.id for s in final.steps] == [s.id for s in original.steps]
    assert final.scope_guard is original.scope_guard
    for step in final.steps:
        before = original.step(step.id)
        assert list(step.outputs) == list(before.outputs)
        assert (step.may_change, step.approval) == (before.may_change, before.approval)
        if before.sub_workflow is None:  # a sub-workflow step gets generated instructions
            assert _instructions(copy, final, step.id) == _instructions(job_dir, original, step.id)
    # Each loss is named: process requirements, string outputs, sub-workflows ...
    lost = " ".join(to_v09.warnings)
    for step in original.steps:
        if step.process_requirements:
            assert f"step {step.id!r}: process_requirements" in lost
        if step.sub_workflow is not None:
            assert f"step {step.id!r}: its sub_workflow" in lost


def test_the_library_has_jobs_in_both_formats() -> None:
    assert len(LIBRARY_V09) >= 2
    assert len(LIBRARY_V010) >= 2


def test_the_evidence_fields_are_carried_both_ways(tmp_path: Path) -> None:
    data = changed(valid_job(), ("steps", 1, "may_change"), ["docs/**"])
    data = changed(data, ("steps", 1, "approval"), {"prompt": "Ship it?", "show": ["report.md"]})
    data["scope_guard"] = "off"
    job_dir = write_job(tmp_path / "older", data)
    newer = convert_job(parse_job_dir(job_dir), "0.10")
    assert newer.job_yml.count("may_change") == 1
    job = parse_job_source(newer.job_yml, job_dir=job_dir).require()
    assert job.scope_guard is ScopeGuard.OFF
    second = job.step("second")
    assert second.may_change == ["docs/**"]
    assert second.approval == Approval(prompt="Ship it?", show=["report.md"])
    signed = parse_job_dir(REPO / "tests" / "fixtures" / "jobs_v010" / "signed_change")
    older = convert_job(signed, "0.9")
    assert not any("may_change" in w or "approval" in w for w in older.warnings)
    back = parse_job_source(older.job_yml, job_dir=signed.job_dir).require()
    assert back.scope_guard is ScopeGuard.STRICT
    assert back.step("plan").approval == signed.require().step("plan").approval
    assert back.step("plan").may_change == ["notes/**"]


def test_criteria_survive_the_text_of_a_newer_review() -> None:
    review = Review(
        run_each="x",
        quality_criteria={"Clear": "Is it clear?", "Long": "line one\n\nline two"},
        additional_review_guidance="Read the spec first.",
    )
    assert criteria_from_text(review_text(review)) == (
        {"Clear": "Is it clear?", "Long": "line one\n\nline two"},
        "Read the spec first.",
    )
    assert criteria_from_text("Just check it.") == ({"Review instructions": "Just check it."}, None)


def test_converting_warns_about_each_construct_the_newer_format_lacks() -> None:
    parsed = parse_job_dir(STANDARD_JOBS_DIR / "deepwork_jobs")
    warnings = convert_job(parsed, "0.10").warnings
    assert any("concurrent groups" in w for w in warnings)
    assert any("version" in w for w in warnings)


def test_same_format_and_invalid_jobs_are_refused(tmp_path: Path) -> None:
    with pytest.raises(ConversionError) as same:
        convert_job(parse_job_dir(FIXTURES[0]), "0.10")
    assert same.value.code == "convert.same_format"
    (tmp_path / "job.yml").write_text("name: x\n", encoding="utf-8")
    with pytest.raises(ConversionError) as invalid:
        convert_job(parse_job_dir(tmp_path), "0.10")
    assert invalid.value.code == "convert.invalid_source"


def test_writing_never_overwrites(tmp_path: Path) -> None:
    job_dir = _copy(LIBRARY_V09[0], tmp_path)
    conversion = convert_job(parse_job_dir(job_dir), "0.10")
    [written] = write_conversion(job_dir, conversion, in_place=False)
    assert written.name == "job.converted-0.10.yml"
    with pytest.raises(ConversionError) as exists:
        write_conversion(job_dir, conversion, in_place=False)
    assert exists.value.code == "convert.file_exists"
    original = (job_dir / "job.yml").read_text(encoding="utf-8")
    write_conversion(job_dir, conversion, in_place=True)
    assert (job_dir / "job.yml.0.9.bak").read_text(encoding="utf-8") == original
    assert parse_job_dir(job_dir).format == "0.10"
