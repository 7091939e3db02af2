"""Skill frontmatter is what both clients need: names match folders, Gemini names hyphenated."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path
from types import ModuleType
from typing import Any

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


#: The skills every plugin ships, by their Claude names: the three hand-written ones, then one
#: per entry point of the standard jobs.
CLAUDE_SKILLS = {
    "deepwork",
    "review",
    "configure_reviews",
    "new_job",
    "record",
    "repair",
    "learn",
    "discover_rules",
    "add_document_update_rule",
}
HYPHENATED = {name.replace("_", "-") for name in CLAUDE_SKILLS}
STANDARD_JOBS = REPO / "packages/deepwork-core/src/deepwork_core/jobs/standard_jobs"


@pytest.mark.parametrize(
    ("skills_dir", "names"),
    [
        ("plugins/claude/skills", CLAUDE_SKILLS),
        ("plugins/gemini/skills", HYPHENATED),
        ("plugins/codex/skills", HYPHENATED),
        ("plugins/copilot/skills", HYPHENATED),
        ("plugins/cursor/skills", HYPHENATED),
        ("plugins/opencode/.opencode/skills", HYPHENATED),
    ],
)
def test_skill_names_match_their_folders(skills_dir: str, names: set[str]) -> None:
    skills = sorted((REPO / skills_dir).glob("*/SKILL.md"))
    assert {s.parent.name for s in skills} == names
    for skill in skills:
        meta = _frontmatter(skill)
        assert meta["name"] == skill.parent.name
        assert 0 < len(meta["description"]) <= 1024


def test_gemini_skill_names_are_hyphenated() -> None:
    for skill in (REPO / "plugins/gemini/skills").glob("*/SKILL.md"):
        assert re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)*", _frontmatter(skill)["name"]), skill


def _plugin_toml() -> dict[str, Any]:
    return tomllib.loads((REPO / "platform/plugin.toml").read_text(encoding="utf-8"))


def _standard_workflows() -> set[tuple[str, str]]:
    found = set()
    for job_yml in STANDARD_JOBS.glob("*/job.yml"):
        job = yaml.safe_load(job_yml.read_text(encoding="utf-8"))
        found |= {(job["name"], w["name"]) for w in job["workflows"]}
    return found


def test_every_workflow_of_the_standard_jobs_has_an_entry_point_skill() -> None:
    entries = {(e["job"], e["workflow"]) for e in _plugin_toml()["entry_points"]}
    workflows = _standard_workflows()
    assert ("deepwork_jobs", "new_job") in workflows  # the job files were found
    assert workflows - entries == set(), (
        "add an [[entry_points]] line to platform/plugin.toml and run `nox -s render`"
    )
    assert entries - workflows == set(), "an entry point names a workflow that does not exist"


@pytest.mark.parametrize("entry", _plugin_toml()["entry_points"], ids=lambda e: e["name"])
def test_an_entry_point_skill_starts_its_workflow_and_hands_over_to_the_deepwork_skill(
    entry: dict[str, str],
) -> None:
    claude = (REPO / f"plugins/claude/skills/{entry['name']}/SKILL.md").read_text("utf-8")
    hyphenated = entry["name"].replace("_", "-")
    cursor = (REPO / f"plugins/cursor/skills/{hyphenated}/SKILL.md").read_text("utf-8")
    for text in (claude, cursor):
        assert f'`job_name: "{entry["job"]}"`' in text
        assert f'`workflow_name: "{entry["workflow"]}"`' in text
        assert "`start_workflow`" in text
    assert "mcp__plugin_deepwork_deepwork__<tool>" in claude
    assert "the `deepwork:deepwork` skill" in claude
    assert "the `deepwork` skill" in cursor
    assert _frontmatter(REPO / f"plugins/cursor/skills/{hyphenated}/SKILL.md")["name"] == (
        hyphenated
    )


def test_two_skills_with_one_name_are_refused(render_tool: ModuleType) -> None:
    plugin = _plugin_toml()
    twice = {**plugin, "entry_points": [*plugin["entry_points"], plugin["entry_points"][0]]}
    with pytest.raises(ValueError, match=plugin["entry_points"][0]["name"]):
        render_tool.all_skills(twice)


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


def test_one_line_in_plugin_toml_adds_the_skill_to_every_client(
    render_tool: ModuleType, repo_copy: Path
) -> None:
    toml = repo_copy / "platform" / "plugin.toml"
    toml.write_text(
        toml.read_text(encoding="utf-8")
        + '\n[[entry_points]]\nname = "do_it"\njob = "deepwork_jobs"\nworkflow = "do_it"\n'
        + 'description = "Do it."\n',
        encoding="utf-8",
    )
    missing = [line for line in render_tool.check(repo_copy) if "do" in line]
    assert [line.removeprefix("missing: ") for line in missing] == [
        "packages/deepwork-mcp/src/deepwork_mcp/platform_files/opencode/.opencode/skills/"
        "do-it/SKILL.md",
        "plugins/claude/skills/do_it/SKILL.md",
        "plugins/codex/skills/do-it/SKILL.md",
        "plugins/copilot/skills/do-it/SKILL.md",
        "plugins/cursor/skills/do-it/SKILL.md",
        "plugins/gemini/skills/do-it/SKILL.md",
        "plugins/opencode/.opencode/skills/do-it/SKILL.md",
    ]
    text = render_tool.render(repo_copy)[Path("plugins/gemini/skills/do-it/SKILL.md")]
    assert '`workflow_name: "do_it"`' in text
