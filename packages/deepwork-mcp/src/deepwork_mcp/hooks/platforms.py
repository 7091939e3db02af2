"""Normalisation tables between each platform's hook vocabulary and DeepWork's.

One table per platform maps the platform's event and tool names to DeepWork's snake_case names;
the reverse direction (used to render plugin manifests and matchers) is derived from the same
tables, so the two directions cannot drift apart.
"""

from __future__ import annotations

import re
from typing import Final, Literal

Platform = Literal["claude", "gemini"]
PLATFORMS: Final[tuple[Platform, ...]] = ("claude", "gemini")

# Normalised event names.
AFTER_AGENT: Final = "after_agent"
BEFORE_TOOL: Final = "before_tool"
AFTER_TOOL: Final = "after_tool"
BEFORE_PROMPT: Final = "before_prompt"
SESSION_START: Final = "session_start"
SESSION_END: Final = "session_end"
EVENTS: Final[tuple[str, ...]] = (
    AFTER_AGENT,
    BEFORE_TOOL,
    AFTER_TOOL,
    BEFORE_PROMPT,
    SESSION_START,
    SESSION_END,
)

# Platform event name -> normalised event name. The first platform name listed for a normalised
# event is its primary name; every name is used when a manifest subscribes to the event.
EVENT_TABLES: Final[dict[Platform, dict[str, str]]] = {
    "claude": {
        "Stop": AFTER_AGENT,
        "SubagentStop": AFTER_AGENT,
        "PreToolUse": BEFORE_TOOL,
        "PostToolUse": AFTER_TOOL,
        "UserPromptSubmit": BEFORE_PROMPT,
        "SessionStart": SESSION_START,
        "SessionEnd": SESSION_END,
    },
    "gemini": {
        "AfterAgent": AFTER_AGENT,
        "BeforeTool": BEFORE_TOOL,
        "AfterTool": AFTER_TOOL,
        "BeforeAgent": BEFORE_PROMPT,
        "SessionStart": SESSION_START,
        "SessionEnd": SESSION_END,
    },
}

# Platform tool name -> normalised tool name (first listed = primary, as for events).
# Gemini names follow Gemini CLI 0.61's built-in tools; Claude's follow Claude Code 2.1.
TOOL_TABLES: Final[dict[Platform, dict[str, str]]] = {
    "claude": {
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
    },
    "gemini": {
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
    },
}

_CAMEL_BOUNDARY = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")


def normalise_event(platform: Platform, platform_event: str) -> str | None:
    """DeepWork's name for a platform event, or None for an event DeepWork does not handle."""
    return EVENT_TABLES[platform].get(platform_event)


def platform_events(platform: Platform, event: str) -> tuple[str, ...]:
    """Every platform event name that normalises to `event` (primary name first)."""
    names = tuple(name for name, norm in EVENT_TABLES[platform].items() if norm == event)
    if not names:
        raise KeyError(f"{platform} has no event for {event!r}")
    return names


def normalise_tool(platform: Platform, platform_tool: str) -> str:
    """DeepWork's snake_case name for a platform tool.

    MCP tools (`mcp__server__tool`) keep their name. Unknown tools are converted mechanically
    (`NotebookRead` -> `notebook_read`), so a new platform tool still gets a stable name.
    """
    known = TOOL_TABLES[platform].get(platform_tool)
    if known is not None:
        return known
    if platform_tool.startswith("mcp__"):
        return platform_tool
    return _CAMEL_BOUNDARY.sub("_", platform_tool).lower()


def platform_tools(platform: Platform, tool: str) -> tuple[str, ...]:
    """Every platform tool name that normalises to `tool` (primary name first).

    A name no table knows is returned unchanged (MCP tools, or a tool the platform shares).
    """
    names = tuple(name for name, norm in TOOL_TABLES[platform].items() if norm == tool)
    return names or (tool,)


def tool_matcher(platform: Platform, tools: list[str] | tuple[str, ...]) -> str:
    """A manifest `matcher` regex selecting the platform tools that normalise to `tools`."""
    names = [name for tool in tools for name in platform_tools(platform, tool)]
    return "|".join(dict.fromkeys(names))
