"""The fan-out keys in both job formats (docs/fan-out.md)."""

from __future__ import annotations

from pathlib import Path

import yaml
from deepwork_core.base.errors import Severity
from deepwork_core.jobs.formats.convert import convert_job
from deepwork_core.jobs.parser import parse_job_dir, parse_job_source

from tests.integration.test_fan_out_stdio import fan_job


def _parse(tmp_path: Path, **step: object) -> list[tuple[str, Severity]]:
    root = fan_job(tmp_path / "p")
    job_file = root / ".deepwork" / "jobs" / "fan" / "job.yml"
    data = yaml.safe_load(job_file.read_text())
    data["workflows"]["write"]["steps"][0].update(step)
    parsed = parse_job_source(yaml.safe_dump(data), job_dir=job_file.parent)
    return [(str(p.code), p.severity) for p in parsed.problems]


def test_for_each_is_a_supported_key_without_a_warning(tmp_path: Path) -> None:
    assert _parse(tmp_path) == []


def test_for_each_must_name_an_input_of_the_step(tmp_path: Path) -> None:
    assert ("job.invalid_for_each", Severity.ERROR) in _parse(tmp_path, for_each="nothing")


def test_fan_out_keys_need_for_each(tmp_path: Path) -> None:
    problems = _parse(tmp_path, for_each=None, isolation="worktree")
    assert ("job.invalid_for_each", Severity.ERROR) in problems


def test_the_keys_survive_a_round_trip_through_the_09_format(tmp_path: Path) -> None:
    root = fan_job(tmp_path / "p", isolation="worktree", allow_partial=True)
    converted = convert_job(parse_job_dir(root / ".deepwork" / "jobs" / "fan"), "0.9")
    step = yaml.safe_load(converted.job_yml)["steps"][0]
    assert step["for_each"] == "topics"
    assert step["isolation"] == "worktree"
    assert step["allow_partial"] is True
    assert step["max_parallel"] == 4
