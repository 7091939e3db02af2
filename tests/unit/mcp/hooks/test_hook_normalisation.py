"""Golden tests: platform events in (as the platforms document them), normalised events out,
and normalised names back to the platform names the manifests use."""

from __future__ import annotations

import json
from typing import Any

import pytest
from deepwork_core.base.errors import HookError
from deepwork_mcp.hooks.event import parse_hook_event
from deepwork_mcp.hooks.platforms import (
    EVENTS,
    PLATFORMS,
    Platform,
    normalise_tool,
    platform_events,
    platform_tools,
    tool_matcher,
)

_CLAUDE_BASE = {
    "session_id": "0b9c6f1e-claude",
    "transcript_path": "/home/u/.claude/projects/p/0b9c6f1e.jsonl",
    "cwd": "/work/project",
    "permission_mode": "default",
}
_GEMINI_BASE = {
    "session_id": "gemini-session-7",
    "transcript_path": "/home/u/.gemini/tmp/p/chats/session.json",
    "cwd": "/work/project",
    "timestamp": "2026-11-02T10:00:00.000Z",
}

# (platform, event JSON as the platform sends it, expected normalised fields)
GOLDEN_EVENTS: list[tuple[Platform, dict[str, Any], dict[str, Any]]] = [
    (
        "claude",
        {
            **_CLAUDE_BASE,
            "hook_event_name": "Stop",
            "stop_hook_active": False,
            "last_assistant_message": "Done.",
        },
        {"event": "after_agent", "stop_hook_active": False, "last_message": "Done."},
    ),
    (
        "claude",
        {
            **_CLAUDE_BASE,
            "hook_event_name": "SubagentStop",
            "stop_hook_active": True,
            "agent_id": "a1",
            "agent_type": "general-purpose",
            "agent_transcript_path": "/home/u/.claude/projects/p/a1.jsonl",
        },
        {"event": "after_agent", "stop_hook_active": True},
    ),
    (
        "claude",
        {
            **_CLAUDE_BASE,
            "hook_event_name": "PreToolUse",
            "tool_name": "Write",
            "tool_input": {"file_path": "/work/project/a.md", "content": "x"},
            "tool_use_id": "toolu_1",
        },
        {
            "event": "before_tool",
            "tool_name": "write_file",
            "platform_tool_name": "Write",
            "tool_input": {"file_path": "/work/project/a.md", "content": "x"},
        },
    ),
    (
        "claude",
        {
            **_CLAUDE_BASE,
            "hook_event_name": "PostToolUse",
            "tool_name": "Bash",
            "tool_input": {"command": "git commit -m x", "description": "commit"},
            "tool_response": {"stdout": "[main 1a2b3c] x", "stderr": "", "interrupted": False},
            "tool_use_id": "toolu_2",
            "duration_ms": 120,
        },
        {
            "event": "after_tool",
            "tool_name": "shell",
            "tool_response": {"stdout": "[main 1a2b3c] x", "stderr": "", "interrupted": False},
        },
    ),
    (
        "claude",
        {**_CLAUDE_BASE, "hook_event_name": "UserPromptSubmit", "prompt": "carry on"},
        {"event": "before_prompt", "prompt": "carry on"},
    ),
    (
        "claude",
        {**_CLAUDE_BASE, "hook_event_name": "SessionStart", "source": "compact"},
        {"event": "session_start", "source": "compact"},
    ),
    (
        "claude",
        {**_CLAUDE_BASE, "hook_event_name": "SessionEnd", "reason": "exit"},
        {"event": "session_end"},
    ),
    (
        "claude",
        {**_CLAUDE_BASE, "hook_event_name": "PreCompact", "trigger": "auto"},
        {"event": None},
    ),
    (
        "gemini",
        {
            **_GEMINI_BASE,
            "hook_event_name": "AfterAgent",
            "prompt": "write the report",
            "prompt_response": "Here it is.",
            "stop_hook_active": False,
        },
        {"event": "after_agent", "prompt": "write the report", "last_message": "Here it is."},
    ),
    (
        "gemini",
        {
            **_GEMINI_BASE,
            "hook_event_name": "BeforeTool",
            "tool_name": "replace",
            "tool_input": {"file_path": "a.py", "old_string": "a", "new_string": "b"},
        },
        {"event": "before_tool", "tool_name": "edit_file", "platform_tool_name": "replace"},
    ),
    (
        "gemini",
        {
            **_GEMINI_BASE,
            "hook_event_name": "AfterTool",
            "tool_name": "run_shell_command",
            "tool_input": {"command": "git commit -m x"},
            "tool_response": {"llmContent": "ok", "returnDisplay": "ok"},
        },
        {"event": "after_tool", "tool_name": "shell"},
    ),
    (
        "gemini",
        {**_GEMINI_BASE, "hook_event_name": "BeforeAgent", "prompt": "go on"},
        {"event": "before_prompt", "prompt": "go on"},
    ),
    (
        "gemini",
        {**_GEMINI_BASE, "hook_event_name": "SessionStart", "source": "resume"},
        {"event": "session_start", "source": "resume"},
    ),
    (
        "gemini",
        {**_GEMINI_BASE, "hook_event_name": "SessionEnd", "reason": "exit"},
        {"event": "session_end"},
    ),
    (
        "gemini",
        {**_GEMINI_BASE, "hook_event_name": "BeforeModel", "llm_request": {}},
        {"event": None},
    ),
]


@pytest.mark.parametrize(
    ("platform", "payload", "expected"),
    GOLDEN_EVENTS,
    ids=[f"{p}-{e['hook_event_name']}" for p, e, _ in GOLDEN_EVENTS],
)
def test_event_normalises_with_the_hint_and_from_its_shape(
    platform: Platform, payload: dict[str, Any], expected: dict[str, Any]
) -> None:
    text = json.dumps(payload)
    for hint in (platform, None):
        event = parse_hook_event(text, platform_hint=hint)
        assert event.platform == platform
        assert event.platform_event == payload["hook_event_name"]
        assert event.session_id == payload["session_id"]
        assert event.cwd == "/work/project"
        normalised = event.to_json()
        for key, value in expected.items():
            assert normalised[key] == value, key


CLAUDE_TOOLS = {
    "Write": "write_file",
    "Edit": "edit_file",
    "MultiEdit": "edit_file",
    "Read": "read_file",
    "Bash": "shell",
    "Glob": "glob",
    "Grep": "grep",
    "LS": "list_directory",
    "WebFetch": "web_fetch",
    "WebSearch": "web_search",
    "Task": "task",
    "Agent": "task",
    "NotebookEdit": "notebook_edit",
    "TodoWrite": "write_todos",
    "AskUserQuestion": "ask_user",
    "Skill": "activate_skill",
    "mcp__plugin_deepwork_deepwork__finished_step": "mcp__plugin_deepwork_deepwork__finished_step",
}
GEMINI_TOOLS = {
    "write_file": "write_file",
    "replace": "edit_file",
    "read_file": "read_file",
    "read_many_files": "read_many_files",
    "run_shell_command": "shell",
    "glob": "glob",
    "grep_search": "grep",
    "search_file_content": "grep",
    "list_directory": "list_directory",
    "web_fetch": "web_fetch",
    "google_web_search": "web_search",
    "write_todos": "write_todos",
    "ask_user": "ask_user",
    "activate_skill": "activate_skill",
    "invoke_agent": "task",
    "mcp__deepwork__finished_step": "mcp__deepwork__finished_step",
}


@pytest.mark.parametrize(
    ("platform", "name", "normalised"),
    [("claude", k, v) for k, v in CLAUDE_TOOLS.items()]
    + [("gemini", k, v) for k, v in GEMINI_TOOLS.items()],
)
def test_tool_names_normalise_and_map_back(platform: Platform, name: str, normalised: str) -> None:
    assert normalise_tool(platform, name) == normalised
    assert name in platform_tools(platform, normalised)
    # The primary platform name normalises back to the same tool: the round trip is stable.
    assert normalise_tool(platform, platform_tools(platform, normalised)[0]) == normalised


def test_unknown_tools_get_a_mechanical_snake_case_name() -> None:
    assert normalise_tool("claude", "NotebookRead") == "notebook_read"
    assert normalise_tool("claude", "KillShell") == "kill_shell"
    assert normalise_tool("gemini", "some_new_tool") == "some_new_tool"
    assert platform_tools("claude", "kill_shell") == ("kill_shell",)


@pytest.mark.parametrize(
    ("platform", "tool", "primary"),
    [
        ("claude", "write_file", "Write"),
        ("claude", "edit_file", "Edit"),
        ("claude", "read_file", "Read"),
        ("claude", "shell", "Bash"),
        ("claude", "task", "Task"),
        ("gemini", "shell", "run_shell_command"),
        ("gemini", "edit_file", "replace"),
        ("gemini", "grep", "grep_search"),
        ("gemini", "web_search", "google_web_search"),
        ("gemini", "task", "invoke_agent"),
    ],
)
def test_primary_platform_tool_names(platform: Platform, tool: str, primary: str) -> None:
    assert platform_tools(platform, tool)[0] == primary


EVENT_NAMES = {
    "claude": {
        "after_agent": ("Stop", "SubagentStop"),
        "before_tool": ("PreToolUse",),
        "after_tool": ("PostToolUse",),
        "before_prompt": ("UserPromptSubmit",),
        "session_start": ("SessionStart",),
        "session_end": ("SessionEnd",),
    },
    "gemini": {
        "after_agent": ("AfterAgent",),
        "before_tool": ("BeforeTool",),
        "after_tool": ("AfterTool",),
        "before_prompt": ("BeforeAgent",),
        "session_start": ("SessionStart",),
        "session_end": ("SessionEnd",),
    },
}


@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("event", EVENTS)
def test_normalised_events_map_back_to_platform_events(platform: Platform, event: str) -> None:
    assert platform_events(platform, event) == EVENT_NAMES[platform][event]


def test_matchers_cover_every_alias() -> None:
    assert tool_matcher("claude", ["write_file", "edit_file"]) == "Write|Edit|MultiEdit"
    assert tool_matcher("claude", ["shell"]) == "Bash"
    assert tool_matcher("gemini", ["write_file", "edit_file"]) == "write_file|replace"
    assert tool_matcher("gemini", ["shell"]) == "run_shell_command"


def test_shared_session_events_default_to_claude_without_gemini_signs() -> None:
    payload = {**_CLAUDE_BASE, "hook_event_name": "SessionStart", "source": "startup"}
    assert parse_hook_event(json.dumps(payload), platform_hint=None).platform == "claude"
    assert parse_hook_event(json.dumps(payload), platform_hint=None, gemini_env=True).platform == (
        "gemini"
    )


@pytest.mark.parametrize(
    ("text", "code"),
    [
        ("not json", "hook.bad_input"),
        ("[1, 2]", "hook.bad_input"),
        ('{"cwd": "/x"}', "hook.bad_input"),
        ('{"hook_event_name": ""}', "hook.bad_input"),
    ],
)
def test_malformed_input_is_a_clear_error(text: str, code: str) -> None:
    with pytest.raises(HookError) as caught:
        parse_hook_event(text, platform_hint="claude")
    assert caught.value.code == code


def test_unknown_platform_hint_is_an_error() -> None:
    with pytest.raises(HookError) as caught:
        parse_hook_event('{"hook_event_name": "Stop"}', platform_hint="cursor")
    assert caught.value.code == "hook.bad_platform"
