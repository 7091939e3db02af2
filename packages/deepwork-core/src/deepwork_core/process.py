"""Bounded subprocesses: every child has a deadline and dies with its whole process group."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from deepwork_core.errors import ProcessTimeoutError


@dataclass(frozen=True, slots=True)
class Completed:
    argv: tuple[str, ...]
    returncode: int
    stdout: str
    stderr: str


def kill_process_group(process: subprocess.Popen[str] | subprocess.Popen[bytes]) -> None:
    """SIGKILL the child's process group (the child was started as a group leader)."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)


def run_bounded(
    argv: Sequence[str],
    *,
    cwd: Path,
    timeout: float,
    input_text: str | None = None,
    env: Mapping[str, str] | None = None,
) -> Completed:
    """Run `argv` to completion within `timeout` seconds.

    The child starts in a new session (its own process group). On timeout the whole group is
    killed, so grandchildren do not outlive us, and `ProcessTimeoutError` is raised.
    `FileNotFoundError` propagates when the executable does not exist.
    """
    process = subprocess.Popen(
        list(argv),
        cwd=cwd,
        stdin=subprocess.PIPE if input_text is not None else subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        encoding="utf-8",
        errors="replace",
        env=dict(env) if env is not None else None,
        start_new_session=True,
    )
    try:
        stdout, stderr = process.communicate(input_text, timeout=timeout)
    except subprocess.TimeoutExpired:
        kill_process_group(process)
        process.communicate()
        raise ProcessTimeoutError(
            f"{argv[0]} did not finish within {timeout:g} s and was killed"
        ) from None
    except BaseException:
        kill_process_group(process)
        process.wait()
        raise
    return Completed(tuple(argv), process.returncode, stdout, stderr)
