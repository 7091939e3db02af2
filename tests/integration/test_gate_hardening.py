"""The quality gate through the real server: a broken `.deepreview` is named in a coded warning
of the answer, and a reviewer's `feedback: null` is accepted (docs/quality-gate.md)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from deepwork_mcp.server import create_server
from fastmcp import Client

from tests.fixtures.configs import config
from tests.fixtures.reviewer import ScriptedReviewer
from tests.fixtures.tool_calls import call_ok
from tests.fixtures.workflow_project import MARKDOWN_RULE, make_project, write_files

GOOD_RULE = MARKDOWN_RULE
#: A rule without `match`: the file loads, this rule does not.
BROKEN_RULE = """\
no_scope:
  description: Lost its match
  review:
    strategy: individual
    instructions: Check everything.
"""
WARNING = "quality_gate.deepreview_invalid"


@pytest.fixture
def root(tmp_path: Path) -> Path:
    root = make_project(tmp_path / "project")
    subprocess.run(["git", "init", "-q", str(root)], check=True, timeout=60)
    return root


async def _finish_gather(root: Path, external: bool = False) -> dict[str, object]:
    settings = config(external_runner="claude") if external else config()
    async with Client(create_server(root, settings)) as client:
        await call_ok(
            client, "start_workflow", goal="g", job_name="three_step", workflow_name="main"
        )
        write_files(root, "notes.md")
        return await call_ok(client, "finished_step", outputs={"notes": "notes.md"})


async def test_a_broken_rule_file_is_named_when_nothing_else_applies(root: Path) -> None:
    (root / "docs").mkdir()
    (root / "docs" / ".deepreview").write_text(BROKEN_RULE, encoding="utf-8")
    answer = await _finish_gather(root)
    assert answer["status"] == "next_step"  # nothing could be reviewed, as before
    [warning] = answer["warnings"]  # type: ignore[misc]
    assert warning.startswith(f"{WARNING}: docs/.deepreview:1: review.config_invalid: ")
    assert "no_scope" in warning


async def test_the_warning_rides_on_a_self_review_request(root: Path) -> None:
    (root / ".deepreview").write_text(GOOD_RULE + BROKEN_RULE, encoding="utf-8")
    answer = await _finish_gather(root)
    assert answer["status"] == "needs_work"  # the good rule still applies
    [warning] = answer["warnings"]  # type: ignore[misc]
    assert warning.startswith(f"{WARNING}: .deepreview:")


async def test_without_problems_the_answer_has_no_warnings(root: Path) -> None:
    (root / ".deepreview").write_text(GOOD_RULE, encoding="utf-8")
    answer = await _finish_gather(root)
    assert "warnings" not in answer


async def test_an_external_review_names_the_broken_file_too(
    root: Path, reviewer_on_path: ScriptedReviewer
) -> None:
    (root / ".deepreview").write_text(GOOD_RULE + BROKEN_RULE, encoding="utf-8")
    answer = await _finish_gather(root, external=True)
    assert answer["status"] == "next_step"
    assert [w.split(": ")[0] for w in answer["warnings"]] == [WARNING]  # type: ignore[attr-defined]


async def test_a_reviewer_answering_null_feedback_passes(
    root: Path, reviewer_on_path: ScriptedReviewer
) -> None:
    reviewer_on_path.answer("pass_null")
    (root / ".deepreview").write_text(GOOD_RULE, encoding="utf-8")
    answer = await _finish_gather(root, external=True)
    assert answer["status"] == "next_step"
    assert reviewer_on_path.calls()  # the reviewer did run
