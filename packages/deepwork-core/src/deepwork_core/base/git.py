"""The one way DeepWork runs git: bounded in time, never prompting, errors with stable codes."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path

from deepwork_core.base.error_codes import ErrorCode
from deepwork_core.base.errors import GitError, ProcessOutputError, ProcessTimeoutError
from deepwork_core.base.process import Completed, run_bounded

DEFAULT_TIMEOUT = 30.0
#: Cap on what one git command may print (file lists of very large repositories fit).
OUTPUT_LIMIT = 128 * 1024 * 1024

_ENV_OVERRIDES = {
    "GIT_TERMINAL_PROMPT": "0",  # never wait for credentials
    "GIT_OPTIONAL_LOCKS": "0",  # read-only commands must not take the index lock
    "LC_ALL": "C",
}


def run_git(
    args: Sequence[str],
    *,
    cwd: Path,
    timeout: float = DEFAULT_TIMEOUT,
    check: bool = True,
    env: Mapping[str, str] | None = None,
    input_text: str | None = None,
) -> Completed:
    """Run `git <args>` in `cwd` (with `env` added to git's environment, and `input_text` on
    its standard input).

    Raises `GitError` with code `git.not_installed`, `git.timeout`, `git.output_too_large`, or
    (when `check` is true and git exits non-zero, or `cwd` is not a folder) `git.failed`
    carrying git's own message.
    """
    environment = {**git_env(), **(env or {})}
    if not cwd.is_dir():  # as `git -C` answers it: not mistaken for git missing from PATH
        result = Completed(
            ("git", *args), 128, "", f"fatal: cannot change to '{cwd}': No such file or directory"
        )
        return _checked(args, result, check)
    try:
        result = run_bounded(
            ["git", *args],
            cwd=cwd,
            timeout=timeout,
            env=environment,
            input_text=input_text,
            output_limit=OUTPUT_LIMIT,
        )
    except FileNotFoundError:
        raise GitError(
            "git is not installed or not on PATH", code=ErrorCode.GIT_NOT_INSTALLED
        ) from None
    except ProcessTimeoutError as exc:
        raise GitError(f"git {' '.join(args)}: {exc}", code=ErrorCode.GIT_TIMEOUT) from None
    except ProcessOutputError as exc:
        raise GitError(
            f"git {' '.join(args)}: {exc}", code=ErrorCode.GIT_OUTPUT_TOO_LARGE
        ) from None
    return _checked(args, result, check)


def _checked(args: Sequence[str], result: Completed, check: bool) -> Completed:
    if check and result.returncode != 0:
        detail = result.stderr.strip() or result.stdout.strip() or f"exit {result.returncode}"
        raise GitError(f"git {' '.join(args)} failed: {detail}", code=ErrorCode.GIT_FAILED)
    return result


def git_env() -> dict[str, str]:
    """The environment every git process of DeepWork runs with (see `_ENV_OVERRIDES`)."""
    return {**os.environ, **_ENV_OVERRIDES}


def user_email(root: Path) -> str | None:
    """git's `user.email` as the repository at `root` sees it; None when unset or no git."""
    try:
        result = run_git(["config", "--get", "user.email"], cwd=root, check=False)
    except GitError:
        return None
    return (result.stdout.strip() or None) if result.returncode == 0 else None


def repository_root(path: Path, *, timeout: float = DEFAULT_TIMEOUT) -> Path | None:
    """The top-level folder of the work tree containing `path`, or None outside git."""
    result = run_git(["rev-parse", "--show-toplevel"], cwd=path, timeout=timeout, check=False)
    if result.returncode != 0:
        return None
    return Path(result.stdout.strip())
