"""Running one named hook on one event: parse, dispatch, render, never raise."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from deepwork_core import DeepWorkError
from deepwork_core.base.error_codes import ErrorCode
from deepwork_core.base.errors import HookError

from deepwork_mcp.hooks.event import HookEvent, parse_hook_event
from deepwork_mcp.hooks.output import dumps, render_hook_output
from deepwork_mcp.hooks.project import find_project_root
from deepwork_mcp.hooks.result import HookResult

#: Built-in hooks: name -> (module, function). Modules are imported only when their hook runs.
HOOKS: dict[str, tuple[str, str]] = {
    "post_commit_reminder": ("deepwork_mcp.hooks.post_commit_reminder", "post_commit_reminder"),
    "workflow": ("deepwork_mcp.hooks.workflow", "workflow"),
    "session_start": ("deepwork_mcp.hooks.session_start", "session_start"),
}

DEFAULT_SCRIPT_TIMEOUT = 30.0


@dataclass(frozen=True, slots=True)
class HookSettings:
    """Everything a hook may know besides the event; the CLI fills it from its environment."""

    platform_hint: str | None = None
    gemini_env: bool = False
    project_dir: Path | None = None
    fallback_cwd: Path | None = None
    additional_jobs_folders: str | None = None
    script_timeout: float = DEFAULT_SCRIPT_TIMEOUT
    #: `DEEPWORK_STORE_URL`: the store the hook reads the stack from (else the project's own).
    store_url: str | None = None


@dataclass(frozen=True, slots=True)
class HookContext:
    """What a hook function receives next to the event."""

    project_root: Path | None
    settings: HookSettings


HookFunction = Callable[[HookEvent, HookContext], HookResult]


@dataclass(frozen=True, slots=True)
class Answer:
    """What the process prints and how it exits."""

    stdout: str
    stderr: str
    exit_code: int


def check_hook_name(name: str) -> None:
    """`HookError` (`hook.unknown`) naming the known hooks when `name` is not one."""
    if name not in HOOKS:
        raise HookError(
            f"unknown hook {name!r}; the hooks are: {', '.join(sorted(HOOKS))}",
            code=ErrorCode.HOOK_UNKNOWN,
        )


def failure_answer(error: DeepWorkError) -> Answer:
    """The answer for input DeepWork cannot act on at all.

    Exit code 1 is a non-blocking error on both platforms: the message reaches the user and
    nothing the agent does is refused because DeepWork could not read its input (exit 2 would
    block a tool call or force a Stop to continue).
    """
    return Answer("", f"deepwork hook: {error.code}: {error.message}\n", 1)


def run_hook(name: str, text: str, settings: HookSettings) -> Answer:
    """Run hook `name` on the event in `text`; every outcome is an `Answer`, never an exception."""
    try:
        check_hook_name(name)
        event = parse_hook_event(
            text, platform_hint=settings.platform_hint, gemini_env=settings.gemini_env
        )
    except DeepWorkError as error:
        return failure_answer(error)
    try:
        result = _load(name)(event, HookContext(_project_root(event, settings), settings))
    except Exception as error:  # a hook must answer, whatever went wrong inside it
        result = _failed(name, error)
    return Answer(dumps(render_hook_output(event, result)), "", 0)


def _load(name: str) -> HookFunction:
    module_name, attribute = HOOKS[name]
    function: HookFunction = getattr(importlib.import_module(module_name), attribute)
    return function


def _project_root(event: HookEvent, settings: HookSettings) -> Path | None:
    start = settings.project_dir or (Path(event.cwd) if event.cwd else settings.fallback_cwd)
    return find_project_root(start) if start is not None else None


def _failed(name: str, error: Exception) -> HookResult:
    if isinstance(error, DeepWorkError):
        what = f"{error.code}: {error.message}"
    else:
        what = f"{type(error).__name__}: {error}"
    text = f"The DeepWork hook '{name}' failed and did nothing: {what}"
    return HookResult(context=text, system_message=text)
