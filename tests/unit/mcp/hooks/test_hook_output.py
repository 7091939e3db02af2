"""Golden tests: a DeepWork hook answer written in each platform's own output format."""

from __future__ import annotations

import json
from typing import Any

import pytest
from deepwork_mcp.hooks.event import HookEvent, parse_hook_event
from deepwork_mcp.hooks.output import render_hook_output
from deepwork_mcp.hooks.platforms import Platform
from deepwork_mcp.hooks.result import HookResult, combine

BLOCK = HookResult(block=True, reason="Finish the report first.")
CONTEXT = HookResult(context="Remember the style guide.")
STOP = HookResult(stop=True, stop_reason="Budget exhausted.")


def _event(platform: Platform, name: str) -> HookEvent:
    return parse_hook_event(json.dumps({"hook_event_name": name}), platform_hint=platform)


GOLDEN: list[tuple[Platform, str, HookResult, dict[str, Any]]] = [
    ("claude", "Stop", BLOCK, {"decision": "block", "reason": "Finish the report first."}),
    ("claude", "SubagentStop", BLOCK, {"decision": "block", "reason": "Finish the report first."}),
    (
        "claude",
        "Stop",
        CONTEXT,
        {
            "hookSpecificOutput": {
                "hookEventName": "Stop",
                "additionalContext": "Remember the style guide.",
            }
        },
    ),
    (
        "claude",
        "PreToolUse",
        BLOCK,
        {
            "hookSpecificOutput": {
                "hookEventName": "PreToolUse",
                "permissionDecision": "deny",
                "permissionDecisionReason": "Finish the report first.",
            }
        },
    ),
    (
        "claude",
        "PreToolUse",
        CONTEXT,
        {
            "hookSpecificOutput": {
                "hookEventName": "PreToolUse",
                "additionalContext": "Remember the style guide.",
            }
        },
    ),
    ("claude", "PostToolUse", BLOCK, {"decision": "block", "reason": "Finish the report first."}),
    (
        "claude",
        "PostToolUse",
        CONTEXT,
        {
            "hookSpecificOutput": {
                "hookEventName": "PostToolUse",
                "additionalContext": "Remember the style guide.",
            }
        },
    ),
    (
        "claude",
        "UserPromptSubmit",
        CONTEXT,
        {
            "hookSpecificOutput": {
                "hookEventName": "UserPromptSubmit",
                "additionalContext": "Remember the style guide.",
            }
        },
    ),
    (
        "claude",
        "UserPromptSubmit",
        BLOCK,
        {"decision": "block", "reason": "Finish the report first."},
    ),
    (
        "claude",
        "SessionStart",
        CONTEXT,
        {
            "hookSpecificOutput": {
                "hookEventName": "SessionStart",
                "additionalContext": "Remember the style guide.",
            }
        },
    ),
    ("claude", "SessionEnd", CONTEXT, {"systemMessage": "Remember the style guide."}),
    ("claude", "Stop", STOP, {"continue": False, "stopReason": "Budget exhausted."}),
    ("claude", "Stop", HookResult(), {}),
    ("gemini", "AfterAgent", BLOCK, {"decision": "deny", "reason": "Finish the report first."}),
    ("gemini", "AfterAgent", CONTEXT, {"systemMessage": "Remember the style guide."}),
    ("gemini", "BeforeTool", BLOCK, {"decision": "deny", "reason": "Finish the report first."}),
    ("gemini", "BeforeTool", CONTEXT, {"systemMessage": "Remember the style guide."}),
    (
        "gemini",
        "AfterTool",
        CONTEXT,
        {
            "hookSpecificOutput": {
                "hookEventName": "AfterTool",
                "additionalContext": "Remember the style guide.",
            }
        },
    ),
    (
        "gemini",
        "AfterTool",
        BLOCK,
        {
            "hookSpecificOutput": {
                "hookEventName": "AfterTool",
                "additionalContext": "Finish the report first.",
            }
        },
    ),
    (
        "gemini",
        "BeforeAgent",
        CONTEXT,
        {
            "hookSpecificOutput": {
                "hookEventName": "BeforeAgent",
                "additionalContext": "Remember the style guide.",
            }
        },
    ),
    ("gemini", "BeforeAgent", BLOCK, {"decision": "deny", "reason": "Finish the report first."}),
    (
        "gemini",
        "SessionStart",
        CONTEXT,
        {
            "hookSpecificOutput": {
                "hookEventName": "SessionStart",
                "additionalContext": "Remember the style guide.",
            }
        },
    ),
    ("gemini", "SessionEnd", CONTEXT, {"systemMessage": "Remember the style guide."}),
    ("gemini", "AfterAgent", STOP, {"continue": False, "stopReason": "Budget exhausted."}),
]


@pytest.mark.parametrize(
    ("platform", "name", "result", "expected"),
    GOLDEN,
    ids=[f"{p}-{n}-{i}" for i, (p, n, _, _) in enumerate(GOLDEN)],
)
def test_answer_in_platform_format(
    platform: Platform, name: str, result: HookResult, expected: dict[str, Any]
) -> None:
    assert render_hook_output(_event(platform, name), result) == expected


def test_combine_blocks_when_any_blocks_and_keeps_every_text() -> None:
    merged = combine([CONTEXT, BLOCK, HookResult(block=True, reason="Also this.")])
    assert merged.block
    assert merged.reason == "Finish the report first.\n\nAlso this."
    assert merged.context == "Remember the style guide."
    assert combine([]).empty
