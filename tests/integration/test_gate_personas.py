"""What a review asks for beyond its criteria reaches the reviewer (docs/quality-gate.md).

A review's `agent` (persona) reaches each runner its own way (claude `--agent`, codex's
developer instructions, gemini's prompt), its `additional_context` is a section of the brief,
and a dry run shows both. A doc spec on an output that no review covers is a review of its own.
Each runner's double is a real subprocess first on PATH.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from deepwork_mcp.server import create_server
from fastmcp import Client

from tests.fixtures.configs import config
from tests.fixtures.reviewer import ScriptedReviewer
from tests.fixtures.stdio_server import serve
from tests.fixtures.tool_calls import call_ok
from tests.fixtures.workflow_project import make_project, write_files, write_job
from tests.integration.test_quality_gate import review_brief

PERSONA_JOB = """
name: persona_job
summary: "A review with a persona and extra context"
step_arguments:
  - name: notes.md
    description: "The notes"
    type: file_path
    review:
      strategy: individual
      instructions: "The notes MUST be short."
      agent:
        claude: security-reviewer
        codex: "a security auditor who checks every claim"
        gemini: "a terse copy editor"
      additional_context:
        all_changed_filenames: true
        unchanged_matching_files: true
  - name: extra.md
    description: "Something else"
    type: file_path
workflows:
  main:
    summary: "Write notes"
    common_job_info_provided_to_all_steps_at_runtime: "Notes."
    steps:
      - name: write
        instructions: "Write the notes and the extra file."
        outputs:
          notes.md: {}
          extra.md: {}
"""
OUTPUTS = {"notes.md": ["n1.md", "n2.md"], "extra.md": "extra.md"}
PERSONAS = {
    "claude": "security-reviewer",
    "codex": "a security auditor who checks every claim",
    "gemini": "a terse copy editor",
}


def persona_seen(runner: str, argv: list[str]) -> bool:
    """Whether `argv` hands the runner its persona where that runner takes one."""
    persona = PERSONAS[runner]
    if runner == "claude":
        return argv[argv.index("--agent") + 1] == persona
    if runner == "codex":
        return any(a.startswith("developer_instructions=") and persona in a for a in argv)
    return persona in argv[argv.index("--prompt") + 1]


async def test_a_persona_and_the_asked_context_reach_each_runner(
    tmp_path: Path, reviewer_on_path: ScriptedReviewer, runner: str
) -> None:
    root = make_project(tmp_path / "project")
    write_job(root, "persona_job", PERSONA_JOB)
    write_files(root, "n1.md", "n2.md", "extra.md")
    agent = "---\nname: security-reviewer\ndescription: Reviews for security\n---\nBe strict.\n"
    write_files(root, ".claude/agents/security-reviewer.md", text=agent)
    server = create_server(root, config(external_runner=runner))
    async with Client(server) as client:
        await call_ok(
            client, "start_workflow", goal="g", job_name="persona_job", workflow_name="main"
        )
        dry = await call_ok(client, "finished_step", outputs=OUTPUTS, dry_run=True)
        done = await call_ok(client, "finished_step", outputs=OUTPUTS)
    assert done["status"] == "workflow_complete"
    first = dry["review_tasks"][0]
    assert first["agent"] == PERSONAS
    assert first["context"] == [
        "All files submitted at this checkpoint (context): extra.md, n1.md, n2.md",
        "Other files of the reviewed output, not under review here: n2.md",
    ]
    calls = reviewer_on_path.calls()
    assert len(calls) == 2  # one per notes file
    for call in calls:
        assert persona_seen(runner, call["argv"])
        brief = review_brief(call)
        assert "All files submitted at this checkpoint (context): extra.md, n1.md, n2.md" in brief
    assert any("not under review here: n1.md" in review_brief(call) for call in calls)


def speced_without_reviews(root: Path) -> None:
    job = root / ".deepwork" / "jobs" / "speced" / "job.yml"
    text = job.read_text()
    head = text[: text.index("    reviews:")]
    job.write_text(head + "    reviews: []\n")


async def test_a_doc_spec_alone_is_a_review_task(
    tmp_path: Path, reviewer_on_path: ScriptedReviewer
) -> None:
    root = make_project(tmp_path / "project")
    speced_without_reviews(root)
    write_files(root, "report.md")
    server = create_server(root, config(external_runner="codex"))
    async with Client(server) as client:
        await call_ok(client, "start_workflow", goal="g", job_name="speced", workflow_name="main")
        dry = await call_ok(client, "finished_step", outputs={"report": "report.md"}, dry_run=True)
        reviewer_on_path.answer("fail")
        failed = await call_ok(client, "finished_step", outputs={"report": "report.md"})
    [task] = dry["review_tasks"]
    assert (task["run_each"], task["criteria"], task["files"]) == (
        "report",
        ["Monthly report: Has summary"],
        ["report.md"],
    )
    assert failed["status"] == "needs_work"
    [review] = failed["failed_reviews"]
    assert review["criteria_results"][0]["criterion"] == "Monthly report: Has summary"
    [call] = reviewer_on_path.calls()
    assert "one-paragraph summary" in review_brief(call)


async def test_a_doc_spec_alone_is_in_the_self_review_file(tmp_path: Path) -> None:
    root = make_project(tmp_path / "project")
    speced_without_reviews(root)
    write_files(root, "report.md")
    async with Client(create_server(root, config())) as client:
        await call_ok(client, "start_workflow", goal="g", job_name="speced", workflow_name="main")
        result: dict[str, Any] = await call_ok(
            client, "finished_step", outputs={"report": "report.md"}
        )
    assert result["status"] == "needs_work"
    [review_file] = (root / ".deepwork" / "tmp").glob("quality_review_*.md")
    text = review_file.read_text()
    assert "**Monthly report: Has summary**" in text
    assert "`report.md`" in text


@pytest.mark.slow
async def test_each_runner_judges_through_the_real_server_over_stdio(
    tmp_path: Path, scripted_reviewer: ScriptedReviewer, runner: str
) -> None:
    root = make_project(tmp_path / "project")
    write_files(root, "report.md")
    env = {**scripted_reviewer.env, "PYTHONUNBUFFERED": "1"}
    scripted_reviewer.answer("fail")
    async with serve(root, "server", "--external-runner", runner, env=env) as agent:
        await agent.ok("start_workflow", goal="g", job_name="reviewed", workflow_name="main")
        failed = await agent.ok("finished_step", outputs={"report": "report.md"})
        scripted_reviewer.answer("pass")
        passed = await agent.ok("finished_step", outputs={"report": "report.md"})
        active = await agent.ok("get_active_workflow")
    assert failed["status"] == "needs_work"
    assert "Complete failed" in failed["feedback"]
    assert passed["status"] == "next_step"
    assert [call["program"] for call in scripted_reviewer.calls()] == [runner, runner]
    assert active["review_usage"]["calls"] == 2
    assert active["review_usage"]["unpriced_calls"] == (0 if runner == "claude" else 2)


async def test_self_review_names_the_persona_and_lists_the_context(tmp_path: Path) -> None:
    root = make_project(tmp_path / "project")
    write_job(root, "persona_job", PERSONA_JOB)
    write_files(root, "n1.md", "n2.md", "extra.md")
    async with Client(create_server(root, config())) as client:
        await call_ok(
            client, "start_workflow", goal="g", job_name="persona_job", workflow_name="main"
        )
        result = await call_ok(client, "finished_step", outputs=OUTPUTS)
    assert result["status"] == "needs_work"
    [review_file] = (root / ".deepwork" / "tmp").glob("quality_review_*.md")
    text = review_file.read_text()
    assert "Reviewer persona, by platform: claude: `security-reviewer`" in text
    assert "### Context" in text
    assert "- Other files of the reviewed output, not under review here: n2.md" in text
