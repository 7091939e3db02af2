"""Writing a `HookResult` in the output format each platform reads.

Claude Code (hooks reference, 2.1): top-level `decision: "block"` + `reason` for Stop,
SubagentStop, PostToolUse and UserPromptSubmit; PreToolUse refuses through
`hookSpecificOutput.permissionDecision: "deny"`; context for the agent goes to
`hookSpecificOutput.additionalContext` with a matching `hookEventName`.
Gemini CLI (hooks reference, 0.61): `decision: "deny"` + `reason`; `additionalContext` only for
AfterTool, BeforeAgent and SessionStart. Where a platform has no channel to the agent for an
event, the text goes to the user as `systemMessage` instead of being dropped.
"""

from __future__ import annotations

import json
from collections.abc import Container
from typing import Any

from deepwork_mcp.hooks.event import HookEvent
from deepwork_mcp.hooks.platforms import (
    AFTER_AGENT,
    AFTER_TOOL,
    BEFORE_PROMPT,
    BEFORE_TOOL,
    SESSION_START,
)
from deepwork_mcp.hooks.result import HookResult, join_texts

# Events whose refusal the platform honours (others are advisory).
_BLOCKABLE = {AFTER_AGENT, BEFORE_TOOL, AFTER_TOOL, BEFORE_PROMPT}
_CLAUDE_CONTEXT = {AFTER_AGENT, BEFORE_TOOL, AFTER_TOOL, BEFORE_PROMPT, SESSION_START}
_GEMINI_CONTEXT = {AFTER_TOOL, BEFORE_PROMPT, SESSION_START}


def render_hook_output(event: HookEvent, result: HookResult) -> dict[str, Any]:
    """The JSON object to print for `result` in `event`'s platform format."""
    if event.platform == "claude":
        return _claude(event, result)
    return _gemini(event, result)


def dumps(answer: dict[str, Any]) -> str:
    return json.dumps(answer, ensure_ascii=False)


def _claude(event: HookEvent, result: HookResult) -> dict[str, Any]:
    out: dict[str, Any] = {}
    specific: dict[str, Any] = {}
    context = result.context
    if result.block and event.event in _BLOCKABLE:
        reason = result.reason or "Blocked by a DeepWork hook."
        if event.event == BEFORE_TOOL:
            specific["permissionDecision"] = "deny"
            specific["permissionDecisionReason"] = reason
        else:
            out["decision"] = "block"
            out["reason"] = reason
    elif result.block:
        context = join_texts([result.reason, context])
    return _finish(out, specific, event, result, context, _CLAUDE_CONTEXT)


def _gemini(event: HookEvent, result: HookResult) -> dict[str, Any]:
    out: dict[str, Any] = {}
    specific: dict[str, Any] = {}
    context = result.context
    # On AfterTool a Gemini "deny" replaces the tool's output; DeepWork only adds to it.
    if result.block and event.event in _BLOCKABLE and event.event != AFTER_TOOL:
        out["decision"] = "deny"
        out["reason"] = result.reason or "Blocked by a DeepWork hook."
    elif result.block:
        context = join_texts([result.reason, context])
    return _finish(out, specific, event, result, context, _GEMINI_CONTEXT)


def _finish(
    out: dict[str, Any],
    specific: dict[str, Any],
    event: HookEvent,
    result: HookResult,
    context: str | None,
    context_events: Container[str],
) -> dict[str, Any]:
    """Route `context` to the agent where the platform allows it, else to the user."""
    system = result.system_message
    if context:
        if event.event in context_events:
            specific["additionalContext"] = context
        else:
            system = join_texts([system, context])
    _common(out, result, system)
    if specific:
        out["hookSpecificOutput"] = {"hookEventName": event.platform_event, **specific}
    return out


def _common(out: dict[str, Any], result: HookResult, system: str | None) -> None:
    if system:
        out["systemMessage"] = system
    if result.stop:
        out["continue"] = False
        out["stopReason"] = result.stop_reason or "Stopped by a DeepWork hook."
