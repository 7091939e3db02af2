"""`isolation: worktree` on a concurrent group, in both job formats (docs/fan-out.md)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from deepwork_core.base.errors import Severity
from deepwork_core.jobs.formats.convert import convert_job
from deepwork_core.jobs.parser import parse_job_dir, parse_job_source

from tests.integration.test_worktree_groups_stdio import GROUP, group_job_v010, group_job_v09


def _job_file(root: Path) -> Path:
    return root / ".deepwork" / "jobs" / "grp" / "job.yml"


def _problems(job_file: Path, data: dict[str, Any]) -> list[tuple[str, Severity, str]]:
    parsed = parse_job_source(yaml.safe_dump(data, sort_keys=False), job_dir=job_file.parent)
    return [(str(p.code), p.severity, p.message) for p in parsed.problems]


def _codes(problems: list[tuple[str, Severity, str]]) -> list[tuple[str, Severity]]:
    return [(code, severity) for code, severity, _ in problems]


def test_the_09_format_accepts_a_group_in_worktrees_without_a_warning(tmp_path: Path) -> None:
    """A supported feature is no problem: nothing for `deepwork jobs validate` or the checkpoint
    of a `deepwork_jobs` step to refuse (issue 44)."""
    job_file = _job_file(group_job_v09(tmp_path))
    problems = _problems(job_file, yaml.safe_load(job_file.read_text()))
    assert problems == []
    definition = parse_job_dir(job_file.parent).definition
    assert definition is not None
    assert definition.workflows[0].entries[0] == tuple(GROUP)


def test_the_010_format_accepts_a_concurrent_group_in_worktrees(tmp_path: Path) -> None:
    job_file = _job_file(group_job_v010(tmp_path))
    problems = _problems(job_file, yaml.safe_load(job_file.read_text()))
    assert problems == []
    definition = parse_job_dir(job_file.parent).definition
    assert definition is not None
    assert definition.workflows[0].entries == [tuple(GROUP), ("join",)]


def test_every_step_of_a_group_gives_the_same_isolation(tmp_path: Path) -> None:
    job_file = _job_file(group_job_v09(tmp_path))
    data = yaml.safe_load(job_file.read_text())
    del data["steps"][1]["isolation"]
    problems = _codes(_problems(job_file, data))
    assert ("job.invalid_for_each", Severity.ERROR) in problems


def test_worktree_isolation_without_for_each_needs_a_group(tmp_path: Path) -> None:
    job_file = _job_file(group_job_v09(tmp_path))
    data = yaml.safe_load(job_file.read_text())
    data["workflows"][0]["steps"] = [*GROUP, "join"]  # no group any more
    problems = _problems(job_file, data)
    assert ("job.invalid_for_each", Severity.ERROR) in _codes(problems)
    assert any("needs for_each, or a concurrent group" in m for _, _, m in problems)


def test_the_steps_of_a_concurrent_group_stand_next_to_each_other(tmp_path: Path) -> None:
    job_file = _job_file(group_job_v010(tmp_path))
    data = yaml.safe_load(job_file.read_text())
    steps = data["workflows"]["build"]["steps"]
    steps[1], steps[3] = steps[3], steps[1]  # `join` splits the group
    steps[1]["inputs"] = {}
    problems = _problems(job_file, data)
    assert any("must stand next to each other" in m for _, _, m in problems)


def test_a_group_in_worktrees_survives_conversion_both_ways(tmp_path: Path) -> None:
    job_dir = _job_file(group_job_v010(tmp_path)).parent
    to_09 = convert_job(parse_job_dir(job_dir), "0.9")
    data = yaml.safe_load(to_09.job_yml)
    assert data["workflows"][0]["steps"][0] == GROUP
    assert all(step["isolation"] == "worktree" for step in data["steps"] if step["id"] in GROUP)

    job_dir = _job_file(group_job_v09(tmp_path / "other")).parent
    to_010 = convert_job(parse_job_dir(job_dir), "0.10")
    steps = yaml.safe_load(to_010.job_yml)["workflows"]["build"]["steps"]
    assert [step.get("concurrent_group") for step in steps] == ["backend"] * 3 + [None]
    assert [step.get("isolation") for step in steps] == ["worktree"] * 3 + [None]
    assert not any("run one step after another" in note for note in to_010.warnings)
