"""The Codex, Copilot, Cursor and OpenCode files: pinned server, formats, the Cursor schema."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path
from types import ModuleType

import jsonschema
import pytest

REPO = Path(__file__).resolve().parents[3]
VERSION = tomllib.loads((REPO / "pyproject.toml").read_text("utf-8"))["project"]["version"]
PINNED = [f"deepwork=={VERSION}", "serve"]


def _json(relative: str) -> dict[str, object]:
    data: dict[str, object] = json.loads((REPO / relative).read_text(encoding="utf-8"))
    return data


def _schema(name: str) -> jsonschema.Draft7Validator:
    schema = json.loads((REPO / "tools" / "schemas" / f"{name}.schema.json").read_text("utf-8"))
    jsonschema.Draft7Validator.check_schema(schema)
    return jsonschema.Draft7Validator(schema)


def test_every_new_client_starts_the_pinned_server() -> None:
    servers = {
        "codex": _json("plugins/codex/.mcp.json")["mcpServers"],
        "copilot": _json("plugins/copilot/.mcp.json")["mcpServers"],
        "cursor": _json("plugins/cursor/mcp.json")["mcpServers"],
    }
    for client, entries in servers.items():
        assert entries == {"deepwork": {"command": "uvx", "args": PINNED}}, client
    opencode = _json("plugins/opencode/opencode.json")["mcp"]
    assert opencode == {"deepwork": {"type": "local", "command": ["uvx", *PINNED]}}


@pytest.mark.parametrize(
    ("schema", "relative"),
    [
        ("cursor-plugin", "plugins/cursor/.cursor-plugin/plugin.json"),
        ("cursor-mcp", "plugins/cursor/mcp.json"),
        ("cursor-marketplace", ".cursor-plugin/marketplace.json"),
    ],
)
def test_the_cursor_files_match_the_documented_schema(schema: str, relative: str) -> None:
    assert list(_schema(schema).iter_errors(_json(relative))) == []


def test_the_cursor_schema_refuses_the_comment_key_other_files_carry() -> None:
    manifest = {**_json("plugins/cursor/.cursor-plugin/plugin.json"), "$comment": "x"}
    assert [e.validator for e in _schema("cursor-plugin").iter_errors(manifest)] == [
        "additionalProperties"
    ]
    assert list(_schema("cursor-plugin").iter_errors({"name": "Deep Work"}))


def test_codex_hooks_have_only_the_keys_codex_accepts_and_run_claude_dialect() -> None:
    hooks = _json("plugins/codex/hooks/hooks.json")
    assert set(hooks) == {"description", "hooks"}
    assert hooks["hooks"] == _json("plugins/claude/hooks/hooks.json")["hooks"]


def test_each_marketplace_lists_its_clients_plugin() -> None:
    codex = _json(".agents/plugins/marketplace.json")["plugins"]
    cursor = _json(".cursor-plugin/marketplace.json")["plugins"]
    copilot = _json(".github/plugin/marketplace.json")["plugins"]
    claude = _json(".claude-plugin/marketplace.json")["plugins"]
    assert [p["source"] for p in codex] == [{"source": "local", "path": "./plugins/codex"}]  # type: ignore[index]
    assert [p["source"] for p in cursor] == ["plugins/cursor"]  # type: ignore[index]
    assert [p["source"] for p in copilot] == ["./plugins/copilot"]  # type: ignore[index]
    assert [p["source"] for p in claude] == ["./plugins/claude"]  # type: ignore[index]
    assert _json("plugins/codex/.codex-plugin/plugin.json")["version"] == VERSION
    assert _json("plugins/copilot/plugin.json")["version"] == VERSION


@pytest.mark.parametrize("client", ["copilot", "cursor", "opencode"])
def test_clients_without_our_hooks_are_told_to_ask_for_the_active_workflow(client: str) -> None:
    skills = REPO / "plugins" / client
    if client == "opencode":
        skills = skills / ".opencode"
    text = (skills / "skills" / "deepwork" / "SKILL.md").read_text("utf-8")
    assert "runs no DeepWork hooks" in text
    assert "`get_active_workflow` before anything else" in text
    assert not (REPO / "plugins" / client / "hooks").exists()


def test_an_unpinned_deepwork_anywhere_fails_the_render_check(
    render_tool: ModuleType, repo_copy: Path
) -> None:
    template = repo_copy / "platform" / "templates" / "opencode" / "opencode.json.j2"
    text = template.read_text("utf-8").replace('["uvx", {% for', '["uvx", "deepwork", {% for')
    template.write_text(text, encoding="utf-8")

    assert render_tool.check(repo_copy)[:2] == [
        "unpinned: packages/deepwork-mcp/src/deepwork_mcp/platform_files/opencode/opencode.json"
        " runs `uvx deepwork`",
        "unpinned: plugins/opencode/opencode.json runs `uvx deepwork`",
    ]
    assert render_tool.unpinned({Path("x.json"): '"uvx deepwork==0.1 serve"'}, VERSION) == [
        "unpinned: x.json runs `uvx deepwork==0.1`"
    ]
    assert render_tool.unpinned({Path("a"): f"uvx deepwork=={VERSION} hook x"}, VERSION) == []
