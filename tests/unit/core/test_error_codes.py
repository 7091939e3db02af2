"""`ErrorCode` members are the codes users see: plain text on the wire, each with its meaning."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from deepwork_core.base.error_codes import ErrorCode
from deepwork_core.base.errors import DeepWorkError, GitError, Problem
from deepwork_core.jobs.errors import JobCode
from deepwork_core.receipts.codes import ReceiptCode


def test_a_code_reads_as_its_plain_text_everywhere_it_is_shown() -> None:
    code = ErrorCode.SESSION_NONE_ACTIVE
    assert str(code) == "session.none_active"
    assert f"{code}: no workflow" == "session.none_active: no workflow"
    assert f"{code:>20}" == " session.none_active"
    assert "%s" % code == "session.none_active"  # noqa: UP031 (logging formats this way)
    assert json.dumps({"code": code}) == '{"code": "session.none_active"}'
    assert code == "session.none_active"
    assert {"session.none_active": 1}[code] == 1


def test_errors_and_findings_show_the_plain_code() -> None:
    error = GitError("git failed", code=ErrorCode.GIT_TIMEOUT)
    assert error.code == "git.timeout"
    assert f"{error.code}: {error}" == "git.timeout: git failed"
    assert DeepWorkError("x").code == "deepwork.error"
    problem = Problem(JobCode.JOB_NOT_FOUND, "no job", Path("job.yml"), 3)
    assert str(problem) == "job.yml:3: job.not_found: no job"


def test_a_code_text_finds_its_member() -> None:
    assert ErrorCode("yaml.syntax") is ErrorCode.YAML_SYNTAX
    with pytest.raises(ValueError, match=r"yaml\.nonsense"):
        ErrorCode("yaml.nonsense")


@pytest.mark.parametrize("code", [*ErrorCode, *JobCode, *ReceiptCode], ids=str)
def test_every_code_is_named_after_its_text_and_has_a_meaning(code: ErrorCode) -> None:
    assert code.name == code.value.upper().replace(".", "_")
    assert code.meaning
    assert code.meaning == " ".join(code.meaning.split()), "wrapped lines join with one space"
    assert code.meaning.endswith("."), code.meaning


def test_a_family_beside_error_code_reads_its_own_meanings() -> None:
    assert ReceiptCode.VERIFY_RUN_INCOMPLETE.meaning == (
        "The receipt is of a run that did not complete (aborted or unfinished)."
    )
    assert str(ReceiptCode.VERIFY_RUN_INCOMPLETE) == "verify.run_incomplete"
    error = DeepWorkError("x", code=ReceiptCode.VERIFY_BASE_MISSING)
    assert f"{error.code}: {error}" == "verify.base_missing: x"


def test_meanings_are_read_from_the_string_under_each_member() -> None:
    assert ErrorCode.SESSION_NONE_ACTIVE.meaning == (
        "No workflow is active (and no `session_id` was given)."
    )
    assert ErrorCode.APPROVAL_CORRUPT.meaning == (
        "An approval in the store (or an old file under `.deepwork/tmp/approvals/` being "
        "imported) cannot be read; have the agent call `finished_step` again, which opens a new "
        "request."
    )
