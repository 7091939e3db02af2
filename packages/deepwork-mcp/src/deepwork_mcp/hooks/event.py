"""One hook event as the platform sent it, normalised to DeepWork's vocabulary."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from deepwork_core.base.error_codes import ErrorCode
from deepwork_core.base.errors import HookError
from deepwork_core.base.fsutil import loads_json

from deepwork_mcp.hooks.platforms import (
    EVENT_TABLES,
    PLATFORMS,
    Platform,
    normalise_event,
    normalise_tool,
)

# Events only one platform sends: they give the platform away when no hint is set.
_ONLY_CLAUDE = frozenset(EVENT_TABLES["claude"]) - frozenset(EVENT_TABLES["gemini"]) | {
    "PostToolUseFailure",
    "Notification",
    "PreCompact",
    "PostCompact",
    "SubagentStart",
    "PermissionRequest",
}
_ONLY_GEMINI = frozenset(EVENT_TABLES["gemini"]) - frozenset(EVENT_TABLES["claude"]) | {
    "BeforeModel",
    "AfterModel",
    "BeforeToolSelection",
    "PreCompress",
}


@dataclass(frozen=True, slots=True)
class HookEvent:
    """A platform event in DeepWork's terms.

    `event` is the normalised event name (None for events DeepWork has no name for) and
    `tool_name` the normalised tool name; the platform's own names are kept next to them.
    """

    platform: Platform
    platform_event: str
    event: str | None
    session_id: str | None = None
    transcript_path: str | None = None
    cwd: str | None = None
    platform_tool_name: str | None = None
    tool_name: str | None = None
    tool_input: dict[str, Any] = field(default_factory=dict)
    tool_response: Any = None
    prompt: str | None = None
    last_message: str | None = None
    source: str | None = None
    stop_hook_active: bool = False
    raw: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        """The normalised event, as job hook scripts receive it on stdin."""
        return {
            "platform": self.platform,
            "event": self.event,
            "platform_event": self.platform_event,
            "session_id": self.session_id,
            "transcript_path": self.transcript_path,
            "cwd": self.cwd,
            "tool_name": self.tool_name,
            "platform_tool_name": self.platform_tool_name,
            "tool_input": self.tool_input,
            "tool_response": self.tool_response,
            "prompt": self.prompt,
            "last_message": self.last_message,
            "source": self.source,
            "stop_hook_active": self.stop_hook_active,
        }


def detect_platform(payload: dict[str, Any], *, gemini_env: bool) -> Platform:
    """The platform that sent `payload`, from its event name, then its shape.

    Gemini stamps every event with `timestamp` and runs hooks with `GEMINI_*` variables set
    (`gemini_env`); Claude does neither.
    """
    name = payload.get("hook_event_name")
    if name in _ONLY_CLAUDE:
        return "claude"
    if name in _ONLY_GEMINI:
        return "gemini"
    if "timestamp" in payload or gemini_env:
        return "gemini"
    return "claude"


def parse_hook_event(
    text: str, *, platform_hint: str | None, gemini_env: bool = False
) -> HookEvent:
    """Parse and normalise one event; `HookError` (`hook.bad_input`) when it is not one."""
    try:
        payload = loads_json(text)
    except json.JSONDecodeError as exc:
        raise HookError(
            f"the hook input is not JSON ({exc.msg} at line {exc.lineno} column {exc.colno})",
            code=ErrorCode.HOOK_BAD_INPUT,
        ) from None
    if not isinstance(payload, dict):
        raise HookError("the hook input must be a JSON object", code=ErrorCode.HOOK_BAD_INPUT)
    platform_event = payload.get("hook_event_name")
    if not isinstance(platform_event, str) or not platform_event:
        raise HookError("the hook input has no 'hook_event_name'", code=ErrorCode.HOOK_BAD_INPUT)
    platform = _platform(platform_hint) or detect_platform(payload, gemini_env=gemini_env)
    tool = payload.get("tool_name")
    tool_input = payload.get("tool_input")
    return HookEvent(
        platform=platform,
        platform_event=platform_event,
        event=normalise_event(platform, platform_event),
        session_id=_text(payload.get("session_id")),
        transcript_path=_text(payload.get("transcript_path")),
        cwd=_text(payload.get("cwd")),
        platform_tool_name=_text(tool),
        tool_name=normalise_tool(platform, tool) if isinstance(tool, str) and tool else None,
        tool_input=tool_input if isinstance(tool_input, dict) else {},
        tool_response=payload.get("tool_response"),
        prompt=_text(payload.get("prompt")),
        last_message=_text(payload.get("last_assistant_message") or payload.get("prompt_response")),
        source=_text(payload.get("source")),
        stop_hook_active=payload.get("stop_hook_active") is True,
        raw=payload,
    )


def _platform(hint: str | None) -> Platform | None:
    if not hint:
        return None
    for platform in PLATFORMS:
        if hint.strip().lower() == platform:
            return platform
    raise HookError(
        f"DEEPWORK_HOOK_PLATFORM is {hint!r}; expected one of {', '.join(PLATFORMS)}",
        code=ErrorCode.HOOK_BAD_PLATFORM,
    )


def _text(value: object) -> str | None:
    return value if isinstance(value, str) else None
