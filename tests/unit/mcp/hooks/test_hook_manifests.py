"""The rendered plugin manifests run the built-in hooks on the events those hooks handle."""

from __future__ import annotations

import json
import shlex
from pathlib import Path
from typing import Any

import pytest
from deepwork_mcp.hooks.platforms import normalise_event, normalise_tool
from deepwork_mcp.hooks.runner import HOOKS

ROOT = Path(__file__).resolve().parents[4]

# hook -> the normalised events it must receive, and the tools it is limited to (None = all)
EXPECTED: dict[str, tuple[set[str], set[str] | None]] = {
    "post_commit_reminder": ({"after_tool"}, {"shell"}),
    "workflow": ({"after_agent", "before_tool", "before_prompt"}, None),
    "session_start": ({"session_start"}, None),
}


def _subscriptions(platform: str) -> dict[str, dict[str, Any]]:
    """hook name -> {platform events, normalised events, tools, handlers} from hooks.json."""
    manifest = json.loads((ROOT / "plugins" / platform / "hooks" / "hooks.json").read_text())
    found: dict[str, dict[str, Any]] = {}
    for client_event, groups in manifest["hooks"].items():
        for group in groups:
            tools = (
                {normalise_tool(platform, t) for t in group["matcher"].split("|")}  # type: ignore[arg-type]
                if "matcher" in group
                else None
            )
            for handler in group["hooks"]:
                words = shlex.split(handler["command"])
                name = words[words.index("hook") + 1].removesuffix(";;")  # guarded commands
                entry = found.setdefault(
                    name, {"client_events": set(), "events": set(), "tools": tools, "handlers": []}
                )
                entry["client_events"].add(client_event)
                entry["events"].add(normalise_event(platform, client_event))  # type: ignore[arg-type]
                entry["handlers"].append(handler)
    return found


@pytest.mark.parametrize("platform", ["claude", "gemini"])
def test_manifest_runs_every_built_in_hook_on_its_events(platform: str) -> None:
    found = _subscriptions(platform)
    assert set(found) == set(HOOKS) == set(EXPECTED)
    for name, (events, tools) in EXPECTED.items():
        assert found[name]["events"] == events, name
        assert found[name]["tools"] == tools, name


def test_claude_manifest_names_the_platform_and_covers_subagents() -> None:
    found = _subscriptions("claude")
    assert found["workflow"]["client_events"] == {
        "Stop",
        "SubagentStop",
        "PreToolUse",
        "UserPromptSubmit",
    }
    for entry in found.values():
        for handler in entry["handlers"]:
            assert "DEEPWORK_HOOK_PLATFORM=claude uvx deepwork==" in handler["command"]
            assert handler["timeout"] <= 600  # seconds


def test_gemini_manifest_names_the_platform_and_uses_milliseconds() -> None:
    found = _subscriptions("gemini")
    assert found["workflow"]["client_events"] == {"AfterAgent", "BeforeTool", "BeforeAgent"}
    for entry in found.values():
        for handler in entry["handlers"]:
            assert handler["env"] == {"DEEPWORK_HOOK_PLATFORM": "gemini"}
            assert handler["timeout"] >= 1000  # milliseconds
