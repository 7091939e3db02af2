"""Running a job's hook script: the normalised event on stdin, a deadline, a decision back.

A script answers in one of these ways:
- exit 0 and nothing on stdout: no objection;
- exit 0 and a JSON object on stdout: `decision` (`block`/`deny` refuse, `allow` does not),
  `reason` (why it refuses) and `context` (text for the agent);
- exit 0 and other text on stdout: that text is context for the agent;
- exit 2: refuse, with stderr (or stdout) as the reason — the convention both platforms use.
Any other exit code, a timeout (the process group is killed) or a script that cannot be started
is a failure, which the workflow hook reports to the agent.
"""

from __future__ import annotations

import json
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from deepwork_core.base.error_codes import ErrorCode
from deepwork_core.base.errors import HookError, ProcessOutputError, ProcessTimeoutError
from deepwork_core.base.fsutil import loads_json
from deepwork_core.base.process import run_bounded

_TAIL = 2000
#: A hook script printing more than this (on stdout or stderr) is killed.
OUTPUT_LIMIT = 1024 * 1024


@dataclass(frozen=True, slots=True)
class ScriptOutcome:
    block: bool = False
    reason: str | None = None
    context: str | None = None


def run_script(
    script: Path, payload: dict[str, Any], *, cwd: Path, timeout: float, label: str
) -> ScriptOutcome:
    """Run `script` with `payload` as JSON on stdin; `HookError` (`hook.script_*`) on failure."""
    try:
        done = run_bounded(
            _argv(script),
            cwd=cwd,
            timeout=timeout,
            input_text=json.dumps(payload),
            output_limit=OUTPUT_LIMIT,
        )
    except ProcessOutputError:
        raise HookError(
            f"hook script {label} printed more than {OUTPUT_LIMIT} bytes and was killed",
            code=ErrorCode.HOOK_SCRIPT_OUTPUT_TOO_LARGE,
        ) from None
    except ProcessTimeoutError:
        raise HookError(
            f"hook script {label} did not finish within {timeout:g} s and was killed",
            code=ErrorCode.HOOK_SCRIPT_TIMEOUT,
        ) from None
    except OSError as exc:
        raise HookError(
            f"hook script {label} could not be started: {exc.strerror or exc}",
            code=ErrorCode.HOOK_SCRIPT_FAILED,
        ) from None
    stdout, stderr = done.stdout.strip(), done.stderr.strip()
    if done.returncode == 2:
        return ScriptOutcome(block=True, reason=_tail(stderr or stdout) or f"{label} refused")
    if done.returncode != 0:
        detail = f": {_tail(stderr or stdout)}" if stderr or stdout else ""
        raise HookError(
            f"hook script {label} exited with code {done.returncode}{detail}",
            code=ErrorCode.HOOK_SCRIPT_FAILED,
        )
    return _parse_answer(stdout, label)


def _argv(script: Path) -> list[str]:
    if os.access(script, os.X_OK):
        return [str(script)]
    if script.suffix == ".py":
        return [sys.executable, str(script)]
    return ["bash", str(script)]


def _parse_answer(stdout: str, label: str) -> ScriptOutcome:
    if not stdout:
        return ScriptOutcome()
    try:
        answer = loads_json(stdout)
    except ValueError:
        return ScriptOutcome(context=stdout)
    if not isinstance(answer, dict):
        return ScriptOutcome(context=stdout)
    decision = str(answer.get("decision") or "").lower()
    if decision not in ("", "allow", "approve", "block", "deny"):
        raise HookError(
            f"hook script {label} answered decision {decision!r}; use 'block' or 'allow'",
            code=ErrorCode.HOOK_SCRIPT_FAILED,
        )
    reason, context = answer.get("reason"), answer.get("context")
    return ScriptOutcome(
        block=decision in ("block", "deny"),
        reason=str(reason) if reason else None,
        context=str(context) if context else None,
    )


def _tail(text: str) -> str:
    return text if len(text) <= _TAIL else "…" + text[-_TAIL:]
