""".deepreview rules at the quality gate: matching a step's outputs, beside its own reviews."""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from deepwork_core.state.store.port import Store
from deepwork_mcp.server import create_server
from fastmcp import Client

from tests.fixtures.configs import config
from tests.fixtures.reviewer import ScriptedReviewer
from tests.fixtures.state_rows import session_json
from tests.fixtures.tool_calls import call_ok
from tests.fixtures.workflow_project import MARKDOWN_RULE, make_project, write_files

RULES = MARKDOWN_RULE


@pytest.fixture
def root(tmp_path: Path) -> Path:
    root = make_project(tmp_path / "project")
    (root / ".deepreview").write_text(RULES, encoding="utf-8")
    subprocess.run(["git", "init", "-q", str(root)], check=True, timeout=60)
    return root


async def test_rules_matching_the_outputs_join_the_self_review(root: Path) -> None:
    async with Client(create_server(root, config())) as client:
        started = await call_ok(
            client, "start_workflow", goal="g", job_name="three_step", workflow_name="main"
        )
        session_id = started["begin_step"]["session_id"]
        write_files(root, "notes.md")
        answer = await call_ok(client, "finished_step", outputs={"notes": "notes.md"})
        # three_step has no reviews of its own: the rule alone sends it to the gate.
        assert answer["status"] == "needs_work"
        text = (root / ".deepwork/tmp" / f"quality_review_{session_id}_gather.md").read_text()
        assert "rule 'markdown_style'" in text
        assert "Every heading MUST be in sentence case." in text
        assert "`notes.md`" in text


async def test_the_config_switch_turns_rules_off(root: Path) -> None:
    async with Client(create_server(root, config(deepreview_rules=False))) as client:
        await call_ok(
            client, "start_workflow", goal="g", job_name="three_step", workflow_name="main"
        )
        write_files(root, "notes.md")
        answer = await call_ok(client, "finished_step", outputs={"notes": "notes.md"})
        assert answer["status"] == "next_step"


async def test_external_verdicts_of_rules_land_in_the_audit_trail(
    root: Path, reviewer_on_path: ScriptedReviewer, make_store: Callable[..., Store]
) -> None:
    server = create_server(root, config(external_runner="claude"))
    async with Client(server) as client:
        started = await call_ok(
            client, "start_workflow", goal="g", job_name="reviewed", workflow_name="main"
        )
        session_id = started["begin_step"]["session_id"]
        write_files(root, "report.md")
        answer = await call_ok(client, "finished_step", outputs={"report": "report.md"})
        assert answer["status"] == "next_step"
    prompts = [call["argv"] for call in reviewer_on_path.calls()]
    assert len(prompts) == 2  # the step's own review and the rule
    data: dict[str, Any] = session_json(make_store(root), session_id)
    [event] = [e for e in data["quality_log"] if e["kind"] == "review"]
    runs = sorted(review["review_run_each"] for review in event["reviews"])
    assert runs == [".deepreview:markdown_style", "step"]


async def test_a_rule_file_written_during_a_run_applies_at_the_next_checkpoint(
    tmp_path: Path,
) -> None:
    # The rule files are listed once and kept while the change watch sees none written.
    root = make_project(tmp_path / "project")
    subprocess.run(["git", "init", "-q", str(root)], check=True, timeout=60)
    async with Client(create_server(root, config())) as client:
        await call_ok(
            client, "start_workflow", goal="g", job_name="three_step", workflow_name="main"
        )
        write_files(root, "notes.md", "d1.md")
        answer = await call_ok(client, "finished_step", outputs={"notes": "notes.md"})
        assert answer["status"] == "next_step"  # no rule, no review of its own
        (root / ".deepreview").write_text(RULES, encoding="utf-8")
        answer = await call_ok(client, "finished_step", outputs={"drafts": ["d1.md"]})
        assert answer["status"] == "needs_work"
        [review_file] = (root / ".deepwork/tmp").glob("quality_review_*_draft.md")
        assert "rule 'markdown_style'" in review_file.read_text()
