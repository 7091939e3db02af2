"""The process side of `deepwork hook NAME`: environment, stdin, stdout and the exit code.

`deepwork_mcp.cli.main` calls `run_hook_command` directly for `deepwork hook NAME`, without
click, because the hook runs on every tool call; the click command
`deepwork_mcp.cli.hook.hook` calls it too.
"""

from __future__ import annotations

import math
import os
import sys
from collections.abc import Mapping
from pathlib import Path

from deepwork_core import DeepWorkError
from deepwork_core.base.error_codes import ErrorCode
from deepwork_core.base.errors import HookError

from deepwork_mcp.hooks.runner import (
    DEFAULT_SCRIPT_TIMEOUT,
    HookSettings,
    check_hook_name,
    failure_answer,
    run_hook,
)
from deepwork_mcp.hooks.stdin import read_event_text

DEFAULT_STDIN_TIMEOUT = 10.0
#: The largest timeout a hook setting may ask for (one day).
MAX_SETTING_SECONDS = 86_400


def settings_from_environment(env: Mapping[str, str], cwd: Path | None) -> HookSettings:
    """Read the hook's settings from environment variables (the CLI's job only)."""
    project_dir = env.get("CLAUDE_PROJECT_DIR") or env.get("GEMINI_PROJECT_DIR")
    return HookSettings(
        platform_hint=env.get("DEEPWORK_HOOK_PLATFORM") or None,
        gemini_env=any(key.startswith("GEMINI_") for key in env),
        project_dir=Path(project_dir) if project_dir else None,
        fallback_cwd=cwd,
        additional_jobs_folders=env.get("DEEPWORK_ADDITIONAL_JOBS_FOLDERS"),
        script_timeout=_seconds(env, "DEEPWORK_HOOK_SCRIPT_TIMEOUT", DEFAULT_SCRIPT_TIMEOUT),
        store_url=env.get("DEEPWORK_STORE_URL") or None,
    )


def run_hook_command(name: str) -> int:
    """Run hook `name` on the event on stdin; print its answer; return the exit code."""
    env = os.environ
    try:
        check_hook_name(name)
        settings = settings_from_environment(env, _cwd())
        text = read_event_text(
            _stdin_fd(),
            timeout=_seconds(env, "DEEPWORK_HOOK_STDIN_TIMEOUT", DEFAULT_STDIN_TIMEOUT),
        )
    except DeepWorkError as error:
        answer = failure_answer(error)
    else:
        answer = run_hook(name, text, settings)
    if answer.stdout:
        sys.stdout.write(answer.stdout + "\n")
    if answer.stderr:
        sys.stderr.write(answer.stderr)
    sys.stdout.flush()
    return answer.exit_code


def _stdin_fd() -> int:
    """The descriptor of standard input; `hook.bad_input` when the process was started without
    one (Python then sets `sys.stdin` to None)."""
    try:
        return sys.stdin.fileno()
    except (AttributeError, OSError, ValueError):
        raise HookError(
            "the hook has no standard input to read the event from", code=ErrorCode.HOOK_BAD_INPUT
        ) from None


def _seconds(env: Mapping[str, str], key: str, default: float) -> float:
    raw = env.get(key)
    if not raw:
        return default
    try:
        value = float(raw)
    except ValueError:
        raise HookError(
            f"{key} must be a number of seconds, not {raw!r}", code=ErrorCode.HOOK_BAD_SETTING
        ) from None
    if not math.isfinite(value) or not 0 < value <= MAX_SETTING_SECONDS:
        raise HookError(
            f"{key} must be a number of seconds above 0 and at most {MAX_SETTING_SECONDS}, "
            f"not {raw!r}",
            code=ErrorCode.HOOK_BAD_SETTING,
        )
    return value


def _cwd() -> Path | None:
    try:
        return Path.cwd()
    except OSError:  # the working directory was removed under us
        return None
