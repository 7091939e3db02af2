"""What a client without the DeepWork skill learns from the server alone.

The server instructions and the tool descriptions carry the essentials of the skill in a
sentence each (their size is held by `test_tool_list_and_instructions_stay_small`).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from importlib.metadata import version
from pathlib import Path
from typing import Any

import pytest
from deepwork_mcp.server import create_server
from fastmcp import Client

from tests.fixtures.configs import config
from tests.fixtures.evidence_project import make_evidence_project
from tests.fixtures.tool_calls import call_error, call_ok


async def _guidance(tmp_path: Path) -> tuple[str, dict[str, str]]:
    (tmp_path / ".deepwork").mkdir()
    server = create_server(tmp_path, config())
    async with Client(server) as client:
        listed = await client.session.list_tools()
    text = server.instructions or ""
    descriptions = {
        tool.name: tool.model_dump_json(by_alias=True, exclude_none=True) for tool in listed.tools
    }
    return text, descriptions


async def test_the_instructions_carry_the_skill_in_a_sentence_each(tmp_path: Path) -> None:
    text, tools = await _guidance(tmp_path)

    assert "Checkpoint: finished_step" in text
    assert "concurrent group is one checkpoint" in text
    assert "quality_review_override_reason" in text
    assert "never to skip a criterion" in text
    assert "repair" in text
    assert "reason" in tools["mark_review_as_passed"]
    assert "Self-review" in tools["finished_step"]


# --- claims of issue 44, each held against the running server ------------------------------


async def test_the_instructions_teach_every_status_and_the_call_again_errors(
    tmp_path: Path,
) -> None:
    """A client without the skill learns each status `finished_step` can answer, that two errors
    mean "call again", and how to drive a fanned-out step's instances."""
    from typing import get_args

    from deepwork_mcp.responses import FinishStatusValue

    text, _ = await _guidance(tmp_path)
    for status in get_args(FinishStatusValue):
        if status != "dry_run":  # only an explicit dry run answers it
            assert f"{status}" in text, status
    assert "never approve yourself" in text
    for code in ("quality_gate.outputs_changed", "session.changed"):
        assert code in text
    assert "call again" in text.split("session.changed", 1)[1][:40]
    for word in ("fan_out", "abort_workflow", "parent session_id", "outputs {}"):
        assert word in text, word


async def test_every_finished_step_argument_is_described(tmp_path: Path) -> None:
    _, tools = await _guidance(tmp_path)
    schema = json.loads(tools["finished_step"])["inputSchema"]["properties"]
    assert "description" in schema["dry_run"]


async def test_the_approval_answer_says_the_agent_must_not_approve(tmp_path: Path) -> None:
    root = make_evidence_project(tmp_path / "project", with_git=False)
    async with Client(create_server(root, config())) as client:
        await call_ok(client, "start_workflow", goal="g", job_name="approved", workflow_name="main")
        (root / "plan.md").write_text("the plan\n")
        waiting = await call_ok(client, "finished_step", outputs={"plan": "plan.md"})
    assert waiting["status"] == "awaiting_approval"
    feedback = " ".join(waiting["feedback"].split())
    assert "must not approve it yourself" in feedback
    assert "cannot approve" not in feedback
    assert "dashboard" in feedback


RULED_JOB = """\
name: ruled
summary: "One reviewed step"
step_arguments:
  - name: notes.md
    description: "The notes"
    type: file_path
    review:
      strategy: individual
      instructions: |
        - The notes MUST name every change.
        - Breaking changes MUST come first.
workflows:
  main:
    summary: "Write the notes"
    steps:
      - name: write
        instructions: "Write notes.md."
        outputs: {notes.md: {}}
"""


async def test_a_010_reviews_rules_arrive_as_its_criterion(tmp_path: Path) -> None:
    """`step_reviews` holds what the reviewer judges: a 0.10 review's rules are its one
    criterion, not guidance (the skill calls step_reviews the criteria)."""
    root = tmp_path / "project"
    (root / ".deepwork" / "jobs" / "ruled").mkdir(parents=True)
    (root / ".deepwork" / "jobs" / "ruled" / "job.yml").write_text(RULED_JOB)
    async with Client(create_server(root, config())) as client:
        started = await call_ok(
            client, "start_workflow", goal="g", job_name="ruled", workflow_name="main"
        )
    [review] = started["begin_step"]["step_reviews"]
    [(name, rules)] = review["quality_criteria"].items()
    assert name == "Review instructions"
    assert "MUST name every change" in rules
    assert "Breaking changes MUST come first" in rules
    assert review.get("additional_review_guidance") is None


#: tools/list and the instructions together, at most 7,000 bytes with the JSON-RPC envelope
#: around the listing (34 bytes), as a host reads them before the first call.
LISTING_BUDGET = 7000 - 34


@pytest.mark.parametrize(
    "launch",
    [
        f"uvx deepwork=={version('deepwork-mcp')}",  # the plugins' pinned form
        "uvx --from /home/alexandra.kowalski/src/deepwork deepwork",  # served from a clone
    ],
)
async def test_the_listing_stays_within_its_budget_however_the_server_was_started(
    tmp_path: Path, launch: str
) -> None:
    """The `CLI:` line grows with the command that started the server: before the release is
    on PyPI that is `uvx --from <clone>`, so a fresh project's listing and instructions stay
    within budget with a clone's path of ordinary length too."""
    (tmp_path / ".deepwork").mkdir()
    server = create_server(tmp_path, config(external_runner="claude"), launch=launch)
    async with Client(server) as client:
        listing = await client.session.list_tools()
    instructions = server.instructions or ""
    assert f"CLI: `{launch} ...`." in instructions
    size = len(listing.model_dump_json(by_alias=True, exclude_none=True).encode())
    size += len(instructions.encode())
    assert size <= LISTING_BUDGET, size


VERDICTS_JOB = """\
name: verdicts
summary: "A verdict per item"
step_arguments:
  - {name: items, description: "The items", type: string}
  - {name: verdict, description: "One line on the item", type: string}
  - {name: summary, description: "All verdicts in one line", type: string}
workflows:
  main:
    summary: "Judge each item, then sum up"
    steps:
      - name: judge
        instructions: "Judge {{ item }}."
        inputs: {items: {}}
        outputs: {verdict: {}}
        for_each: items
      - name: sum_up
        instructions: "Sum up the verdicts."
        inputs: {verdict: {}}
        outputs: {summary: {}}
"""


async def test_a_list_of_texts_arrives_as_text_not_as_paths(tmp_path: Path) -> None:
    """The skill (and docs/runtime.md) say `step_inputs` carry files in `paths` and text in
    `value`: a list of texts given at start for a fan-out, and the texts of a fanned-out `string`
    output at fan-in, are text too, never files for the agent (or a reviewer) to open."""
    root = tmp_path / "project"
    (root / ".deepwork" / "jobs" / "verdicts").mkdir(parents=True)
    (root / ".deepwork" / "jobs" / "verdicts" / "job.yml").write_text(VERDICTS_JOB)
    async with Client(create_server(root, config(enabled=False))) as client:
        started = await call_ok(
            client, "start_workflow", goal="g", job_name="verdicts", workflow_name="main",
            inputs={"items": ["alpha", "beta"]},
        )  # fmt: skip
        fan = started["begin_step"]["fan_out"]
        [items] = started["begin_step"]["step_inputs"]
        for instance in fan["instances"]:
            outputs = {"verdict": f"{instance['item']} is fine"}
            sid = instance["session_id"]
            await call_ok(client, "finished_step", outputs=outputs, session_id=sid)
        fanned_in = await call_ok(
            client, "finished_step", outputs={}, session_id=fan["parent_session_id"]
        )
    [verdicts] = fanned_in["begin_step"]["step_inputs"]
    assert (items["value"], items["paths"]) == (["alpha", "beta"], [])
    assert (verdicts["value"], verdicts["paths"]) == (["alpha is fine", "beta is fine"], [])


@asynccontextmanager
async def _one_worktree_instance(
    tmp_path: Path, verdict_type: str
) -> AsyncIterator[tuple[Client[Any], dict[str, Any]]]:
    """The verdicts job in a git repository, its `judge` step in worktrees, started on one item:
    the client and that instance (`verdict_type`: the type of its output)."""
    from tests.fixtures.git_repo import commit_all

    root = tmp_path / "project"
    (root / ".deepwork" / "jobs" / "verdicts").mkdir(parents=True)
    isolated = "for_each: items\n        isolation: worktree\n"
    job = VERDICTS_JOB.replace("for_each: items\n", isolated)
    job = job.replace('item", type: string}', f'item", type: {verdict_type}}}')
    (root / ".deepwork" / "jobs" / "verdicts" / "job.yml").write_text(job)
    commit_all(root)
    async with Client(create_server(root, config(enabled=False))) as client:
        started = await call_ok(
            client, "start_workflow", goal="g", job_name="verdicts", workflow_name="main",
            inputs={"items": ["alpha"]},
        )  # fmt: skip
        [instance] = started["begin_step"]["fan_out"]["instances"]
        assert instance["worktree"]
        yield client, instance


async def test_a_worktree_instance_keeps_its_text_output_as_written(tmp_path: Path) -> None:
    """A worktree instance gives output paths relative to its worktree and the server puts the
    folder in front of each path; the text of a `string` output is no path and stays as
    written (it was kept, and reviewed, with the worktree's folder glued to its front)."""
    async with _one_worktree_instance(tmp_path, "string") as (client, instance):
        done = await call_ok(
            client, "finished_step", outputs={"verdict": "alpha is fine"},
            session_id=instance["session_id"],
        )  # fmt: skip
    assert done["all_outputs"] == {"verdict": "alpha is fine"}


async def test_a_worktree_instance_is_told_its_paths_are_relative_to_its_worktree(
    tmp_path: Path,
) -> None:
    """A missing output of a worktree instance is named as the agent gave it, relative to the
    instance's worktree, as its instructions and the skill say (the error said "relative to
    the project root" beside the path with the worktree's folder put in front)."""
    async with _one_worktree_instance(tmp_path, "file_path") as (client, instance):
        text = await call_error(
            client, "finished_step", "outputs.file_not_found",
            outputs={"verdict": "notes/alpha.md"}, session_id=instance["session_id"],
        )  # fmt: skip
    assert "file not found at 'notes/alpha.md'" in text
    assert f"relative to the instance's worktree {instance['worktree']}" in text
    assert "project root" not in text
