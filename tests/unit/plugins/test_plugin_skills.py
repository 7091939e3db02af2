"""Skill frontmatter is what both clients need: names match folders, Gemini names hyphenated."""

from __future__ import annotations

import re
from pathlib import Path
from types import ModuleType

import pytest
import yaml
from deepwork_mcp.responses import (
    ActiveStepInfo,
    StackEntry,
)
from deepwork_review.formatters import GEMINI_HEADER
from deepwork_review.pipeline import PARSE_ERROR
from pydantic import BaseModel

REPO = Path(__file__).resolve().parents[3]


def _frontmatter(skill: Path) -> dict[str, str]:
    text = skill.read_text(encoding="utf-8")
    match = re.match(r"---\n(.*?)\n---\n", text, re.DOTALL)
    assert match, f"{skill}: no YAML frontmatter at the top"
    data: dict[str, str] = yaml.safe_load(match.group(1))
    return data


@pytest.mark.parametrize(
    ("plugin", "names"),
    [
        ("claude", {"deepwork", "review", "configure_reviews"}),
        ("gemini", {"deepwork", "review", "configure-reviews"}),
    ],
)
def test_skill_names_match_their_folders(plugin: str, names: set[str]) -> None:
    skills = sorted((REPO / "plugins" / plugin / "skills").glob("*/SKILL.md"))
    assert {s.parent.name for s in skills} == names
    for skill in skills:
        meta = _frontmatter(skill)
        assert meta["name"] == skill.parent.name
        assert 0 < len(meta["description"]) <= 1024


def test_gemini_skill_names_are_hyphenated() -> None:
    for skill in (REPO / "plugins/gemini/skills").glob("*/SKILL.md"):
        assert re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)*", _frontmatter(skill)["name"]), skill


def test_skills_name_the_tools_as_each_client_does() -> None:
    claude = (REPO / "plugins/claude/skills/deepwork/SKILL.md").read_text(encoding="utf-8")
    gemini = (REPO / "plugins/gemini/skills/deepwork/SKILL.md").read_text(encoding="utf-8")
    assert "mcp__plugin_deepwork_deepwork__get_workflows" in claude
    assert "mcp_deepwork_get_workflows" in gemini
    assert "mcp__plugin" not in gemini
    for text in (claude, gemini):
        for tool in (
            "get_workflows",
            "start_workflow",
            "finished_step",
            "abort_workflow",
            "quality_review_override_reason",
            "session_id",
            "new_job",
        ):
            assert tool in text


def _fields(model: type[BaseModel]) -> set[str]:
    return set(model.model_fields)


def test_the_skill_body_names_the_fields_where_the_server_returns_them() -> None:
    """The agent reads the skill, then the answers: every field the skill places somewhere
    must be there in the response models the server sends."""
    body = (REPO / "platform/skill-body.md").read_text(encoding="utf-8")
    begin = re.search(r"The answer's `begin_step` holds:\n((?:   - .*\n|     .*\n)+)", body)
    assert begin, "the start section no longer lists what begin_step holds"
    claimed = re.findall(r"^   - `(\w+)`", begin.group(1), re.MULTILINE)
    assert claimed
    assert set(claimed) <= _fields(ActiveStepInfo), set(claimed) - _fields(ActiveStepInfo)
    stack = re.search(r"every answer carries\s+`stack` \(([^)]*)\)", body)
    assert stack, "the nested-workflow section no longer describes stack entries"
    assert set(re.findall(r"`(\w+)`", stack.group(1))) == _fields(StackEntry)


def test_the_review_skill_describes_parse_errors_as_the_tool_returns_them() -> None:
    text = (REPO / "platform/skills/review.md").read_text(encoding="utf-8")
    # get_configured_reviews lists a broken file as name PARSE_ERROR, defining_file path:line.
    assert f"`{PARSE_ERROR}`" in text
    assert "PARSE_ERROR:" not in text
    assert "defining_file" in text


def test_gemini_task_list_and_skill_name_the_same_sub_agent_mechanism(
    render_tool: ModuleType,
) -> None:
    # The review skill tells the agent how to start sub-agents; the task list the server returns
    # must not tell it a different way.
    tool = re.search(r"the `(\w+)` tool", render_tool.GEMINI.subagents)
    assert tool, render_tool.GEMINI.subagents
    skill = (REPO / "plugins/gemini/skills/review/SKILL.md").read_text(encoding="utf-8")
    assert f"`{tool.group(1)}`" in skill
    assert f"`{tool.group(1)}`" in GEMINI_HEADER
