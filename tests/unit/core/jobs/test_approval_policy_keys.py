"""A step's approval policy keys as `job.yml` gives them (docs/job-format.md#approval-policy):
read into the model, and a policy that cannot be met reported with file and line."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from deepwork_core.jobs.parser import parse_job_dir
from deepwork_core.jobs.steps.approval import parse_duration

from tests.fixtures.jobdata import changed, valid_job, write_job


def with_approval(tmp_path: Path, approval: dict[str, Any]) -> Any:
    data = changed(valid_job(), ("steps", 1, "approval"), {"prompt": "Ship it?", **approval})
    return parse_job_dir(write_job(tmp_path, data))


def test_the_policy_keys_are_read(tmp_path: Path) -> None:
    parsed = with_approval(
        tmp_path,
        {"required": 2, "approvers": ["alice", "bob", "carol"], "not_by_author": True,
         "expires_after": "24h"},
    )  # fmt: skip
    assert not parsed.problems
    approval = parsed.definition.step("second").approval
    assert (approval.required, approval.approvers, approval.not_by_author) == (
        2,
        ["alice", "bob", "carol"],
        True,
    )
    assert approval.expiry == timedelta(hours=24)


def test_required_beyond_the_approvers_is_reported_at_its_line(tmp_path: Path) -> None:
    parsed = with_approval(tmp_path, {"approvers": ["alice"], "required": 2})
    [problem] = parsed.problems
    assert problem.code == "job.invalid_approval"
    assert "names only 1" in problem.message
    assert problem.file is not None
    assert problem.line is not None
    text = problem.file.read_text().splitlines()
    assert "required" in text[problem.line - 1]


@pytest.mark.parametrize(
    ("approval", "says"),
    [
        ({"expires_after": "tomorrow"}, "not a duration"),
        ({"expires_after": "0h"}, "more than 0s"),
        ({"required": 0}, "greater than or equal to 1"),
        ({"approvers": ["alice", "alice"]}, "twice"),
        ({"approvers": ["not a name"]}, "pattern"),
    ],
)
def test_a_policy_that_cannot_be_read_is_a_coded_problem(
    tmp_path: Path, approval: dict[str, Any], says: str
) -> None:
    parsed = with_approval(tmp_path, approval)
    assert [p.code for p in parsed.problems] in (
        ["job.invalid_approval"],
        ["job.too_short"],
        ["job.pattern_mismatch"],
        ["job.invalid_value"],
    )
    assert says in parsed.problems[0].message


def test_durations() -> None:
    assert parse_duration("1h30m") == timedelta(minutes=90)
    assert parse_duration("7d") == timedelta(days=7)
    with pytest.raises(ValueError, match="at most"):
        parse_duration("400d")
