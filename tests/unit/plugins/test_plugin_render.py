"""The checked-in plugin files are exactly what tools/render.py produces from platform/."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path
from types import ModuleType

import jinja2
import pytest
import yaml

REPO = Path(__file__).resolve().parents[3]


def test_checked_in_files_equal_the_render(render_tool: ModuleType) -> None:
    assert render_tool.check(REPO) == [], "run `nox -s render` and commit the result"


def test_editing_the_skill_body_without_rendering_is_caught(
    render_tool: ModuleType, repo_copy: Path
) -> None:
    body = repo_copy / "platform" / "skill-body.md"
    body.write_text(body.read_text(encoding="utf-8") + "\nOne more rule.\n", encoding="utf-8")

    assert render_tool.check(repo_copy) == [
        "stale:   packages/deepwork-mcp/src/deepwork_mcp/platform_files/opencode/.opencode/skills/"
        "deepwork/SKILL.md",
        "stale:   plugins/claude/skills/deepwork/SKILL.md",
        "stale:   plugins/codex/skills/deepwork/SKILL.md",
        "stale:   plugins/copilot/skills/deepwork/SKILL.md",
        "stale:   plugins/cursor/skills/deepwork/SKILL.md",
        "stale:   plugins/gemini/skills/deepwork/SKILL.md",
        "stale:   plugins/opencode/.opencode/skills/deepwork/SKILL.md",
    ]
    render_tool.write(repo_copy)
    assert render_tool.check(repo_copy) == []
    assert "One more rule." in (repo_copy / "plugins/gemini/skills/deepwork/SKILL.md").read_text(
        encoding="utf-8"
    )


def test_missing_and_extra_files_are_listed_and_write_repairs_them(
    render_tool: ModuleType, repo_copy: Path
) -> None:
    (repo_copy / "plugins/gemini/GEMINI.md").unlink()
    (repo_copy / "plugins/claude/skills/stray").mkdir()
    (repo_copy / "plugins/claude/skills/stray/SKILL.md").write_text("x", encoding="utf-8")

    assert render_tool.check(repo_copy) == [
        "extra:   plugins/claude/skills/stray/SKILL.md (not produced by the renderer)",
        "missing: plugins/gemini/GEMINI.md",
    ]
    render_tool.write(repo_copy)
    assert render_tool.check(repo_copy) == []
    assert not (repo_copy / "plugins/claude/skills/stray/SKILL.md").exists()


def test_an_undefined_template_variable_is_an_error(
    render_tool: ModuleType, repo_copy: Path
) -> None:
    body = repo_copy / "platform" / "skills" / "review.md"
    body.write_text("Use {{ p.no_such_variable }}.\n", encoding="utf-8")
    with pytest.raises(jinja2.UndefinedError, match="no_such_variable"):
        render_tool.render(repo_copy)


def test_every_rendered_file_is_valid_and_carries_the_generated_note(
    render_tool: ModuleType,
) -> None:
    note = render_tool.NOTE
    # Manifests whose readers refuse or would keep an unknown `$comment` key.
    no_note = {
        Path(".claude-plugin/marketplace.json"),
        Path(".agents/plugins/marketplace.json"),
        Path(".cursor-plugin/marketplace.json"),
        Path(".github/plugin/marketplace.json"),
        Path("plugins/claude/.claude-plugin/plugin.json"),
        Path("plugins/codex/.codex-plugin/plugin.json"),
        Path("plugins/codex/hooks/hooks.json"),
        Path("plugins/copilot/plugin.json"),
        Path("plugins/cursor/.cursor-plugin/plugin.json"),
        Path("plugins/cursor/mcp.json"),
        Path("plugins/opencode/opencode.json"),
        render_tool.OPENCODE_PACKAGE_DATA / "opencode.json",
    }
    for path, text in render_tool.render(REPO).items():
        assert text.endswith("\n"), path
        assert not text.endswith("\n\n"), path
        if path.suffix == ".json":
            data = json.loads(text)
            assert (data.get("$comment") == note) is (path not in no_note), path
        elif path.name == "SKILL.md" or path.parent.name == "agents":
            assert text.splitlines()[:2] == ["---", f"# {note}"], path
        else:
            assert text.splitlines()[0] == f"<!-- {note} -->", path


def _hooks(path: Path) -> dict[str, list[dict[str, object]]]:
    data: dict[str, dict[str, list[dict[str, object]]]] = json.loads(path.read_text("utf-8"))
    return data["hooks"]


def test_the_post_commit_reminder_hook_in_both_formats() -> None:
    claude = _hooks(REPO / "plugins/claude/hooks/hooks.json")
    gemini = _hooks(REPO / "plugins/gemini/hooks/hooks.json")
    version = tomllib.loads((REPO / "pyproject.toml").read_text("utf-8"))["project"]["version"]

    assert claude["PostToolUse"][0]["matcher"] == "Bash"
    assert claude["PostToolUse"][0]["hooks"] == [
        {
            "type": "command",
            "command": 'e=$(cat); case "$e" in *commit*) printf \'%s\\n\' "$e" | '
            f"DEEPWORK_HOOK_PLATFORM=claude uvx deepwork=={version}"
            " hook post_commit_reminder;; esac",
            "timeout": 30,
        }
    ]
    assert gemini["AfterTool"][0]["matcher"] == "run_shell_command"
    assert gemini["AfterTool"][0]["hooks"] == [
        {
            "type": "command",
            "command": 'e=$(cat); case "$e" in *commit*) printf \'%s\\n\' "$e" | '
            f"uvx deepwork=={version} hook post_commit_reminder;; esac",
            "env": {"DEEPWORK_HOOK_PLATFORM": "gemini"},
            "name": "deepwork-post-commit-reminder",
            "timeout": 30_000,
        }
    ]


def test_adding_a_hook_is_one_line_of_data_for_both_platforms(
    render_tool: ModuleType, repo_copy: Path
) -> None:
    table = repo_copy / "platform" / "plugin.toml"
    text = table.read_text(encoding="utf-8")
    line = '  { name = "extra", events = ["after_agent", "before_tool"], timeout = 60 },\n'
    table.write_text(text.replace("hooks = [\n", "hooks = [\n" + line), encoding="utf-8")
    render_tool.write(repo_copy)

    def extra(hooks: dict[str, list[dict[str, object]]]) -> dict[str, dict[str, object]]:
        """client event -> the group running the new hook."""
        return {
            event: group
            for event, groups in hooks.items()
            for group in groups
            if str(group["hooks"][0]["command"]).endswith(" hook extra")  # type: ignore[index]
        }

    claude = extra(_hooks(repo_copy / "plugins/claude/hooks/hooks.json"))
    gemini = extra(_hooks(repo_copy / "plugins/gemini/hooks/hooks.json"))
    assert set(claude) == {"Stop", "SubagentStop", "PreToolUse"}
    assert set(gemini) == {"AfterAgent", "BeforeTool"}
    assert "matcher" not in claude["Stop"]
    assert claude["Stop"]["hooks"][0]["timeout"] == 60  # type: ignore[index]
    assert gemini["BeforeTool"]["hooks"][0]["timeout"] == 60_000  # type: ignore[index]


def _frontmatter(path: Path) -> dict[str, object]:
    text = path.read_text(encoding="utf-8")
    assert text.startswith("---\n"), path
    data: dict[str, object] = yaml.safe_load(text.split("---\n")[1])
    return data


@pytest.mark.parametrize(
    ("path", "name", "read_tools", "pass_tool"),
    [
        (
            "plugins/claude/agents/reviewer.md",
            "reviewer",
            {"Read", "Grep", "Glob"},
            "mcp__plugin_deepwork_deepwork__mark_review_as_passed",
        ),
        (
            "plugins/gemini/agents/deepwork-reviewer.md",
            "deepwork-reviewer",
            {"read_file", "grep_search", "glob"},
            "mcp_deepwork_mark_review_as_passed",
        ),
    ],
)
def test_the_reviewer_agent_can_read_and_record_but_not_edit(
    path: str, name: str, read_tools: set[str], pass_tool: str
) -> None:
    front = _frontmatter(REPO / path)
    assert front["name"] == name
    tools = front["tools"]
    assert isinstance(tools, list)
    assert read_tools | {pass_tool} <= set(tools)
    editing = {"Edit", "Write", "MultiEdit", "NotebookEdit", "Bash", "write_file", "replace"}
    editing |= {"run_shell_command", "*", "mcp_*"}
    assert not editing & set(tools)
    assert "mark_review_as_passed" in (REPO / path).read_text(encoding="utf-8")


def test_the_claude_skills_name_the_sub_agent_tool_as_claude_code_does() -> None:
    for skill in ("deepwork", "review"):
        text = (REPO / f"plugins/claude/skills/{skill}/SKILL.md").read_text(encoding="utf-8")
        assert "the `Agent` tool" in text, skill
        assert "the `Task` tool" not in text, skill
