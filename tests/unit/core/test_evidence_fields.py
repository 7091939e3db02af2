"""The job-format fields of docs/evidence.md: `may_change`, `approval` and `scope_guard`."""

from __future__ import annotations

from pathlib import Path

from deepwork_core.models import ScopeGuard
from deepwork_core.parser import parse_job_dir

from tests.unit.core.jobdata import changed, valid_job, write_job


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
