"""Identifiers and paths that cross a trust boundary (docs/job-format.md).

`job_name`, `workflow_name`, `step_id`, `session_id` and output paths come from the agent. They
are checked here before any file is touched.

A session id is parsed once, where it comes in (a tool's argument, a command's argument, a
dashboard address), into a `SessionId`; the layers below take a `SessionId` and trust it
(docs/architecture.md, "The path of a checkpoint").
"""

from __future__ import annotations

import os
import re
import stat
from pathlib import Path
from typing import NewType

from deepwork_core.base.error_codes import ErrorCode
from deepwork_core.base.errors import (
    InvalidIdentifierError,
    InvalidTextError,
    PathOutsideProjectError,
)

NAME_PATTERN = r"^[a-z][a-z0-9_]*$"
SESSION_ID_PATTERN = r"^[A-Za-z0-9_-]{6,64}$"
#: An agent's own stack is keyed by its id (docs/navigation.md, "Agent stacks").
AGENT_ID_PATTERN = r"^[A-Za-z0-9_-]{1,64}$"

_NAME_RE = re.compile(NAME_PATTERN)
_SESSION_RE = re.compile(SESSION_ID_PATTERN)
_AGENT_RE = re.compile(AGENT_ID_PATTERN)

#: How much of a rejected value an error message repeats (an agent may send megabytes).
SHOWN_CHARS = 80


def shown(value: object) -> str:
    """`repr(value)`, clipped to about SHOWN_CHARS characters for error messages."""
    text = repr(value)
    if len(text) <= SHOWN_CHARS:
        return text
    return f"{text[: SHOWN_CHARS - 1]}… ({len(text)} characters)"


def check_name(value: object, *, kind: str) -> str:
    """Return `value` if it is a valid job/workflow/step name, else raise `identifier.invalid`."""
    if not isinstance(value, str) or not _NAME_RE.fullmatch(value):
        raise InvalidIdentifierError(
            f"{kind} {shown(value)} is not a valid name: use lowercase letters, digits and "
            f"underscores, starting with a letter (pattern {NAME_PATTERN})"
        )
    return value


#: A session id that was parsed (`parse_session_id`) or made (`new_session_id` of
#: `deepwork_core.state.sessions`): what the store, the event log, the approvals and the gate take.
SessionId = NewType("SessionId", str)


def parse_session_id(value: object) -> SessionId:
    """`value` as a `SessionId`, else `identifier.invalid`: called where an id comes in."""
    if not isinstance(value, str) or not _SESSION_RE.fullmatch(value):
        raise InvalidIdentifierError(
            f"session_id {shown(value)} is not a valid session id; use the session_id returned by "
            "start_workflow or finished_step"
        )
    return SessionId(value)


def parse_optional_session_id(value: object) -> SessionId | None:
    """`parse_session_id`, with None for a call that names no session (the top of its stack)."""
    return None if value is None else parse_session_id(value)


def check_agent_id(value: object) -> str | None:
    """Return `value` (None: the main stack) if it is a valid agent id, else raise."""
    if value is None:
        return None
    if not isinstance(value, str) or not _AGENT_RE.fullmatch(value):
        raise InvalidIdentifierError(
            f"agent_id {shown(value)} is not a valid agent id: use 1 to 64 letters, digits, "
            "'_' or '-'"
        )
    return value


#: The longest free text (goal, notes, reasons …) an agent may send. State files hold it and are
#: rewritten on every call, so megabytes of it would slow every later call of the workflow.
MAX_TEXT_CHARS = 65_536


def check_text(
    value: str | None, *, what: str, max_chars: int | None = MAX_TEXT_CHARS
) -> str | None:
    """Return `value` if it can be stored, else raise `text.invalid` or `text.too_long`.

    JSON lets a client send lone surrogates (`"\\udcff"`); stored state must never hold one.
    `max_chars=None` skips the length limit (paths: the file system has its own).
    """
    if value is not None:
        if max_chars is not None and len(value) > max_chars:
            raise InvalidTextError(
                f"{what} is {len(value)} characters long; the limit is {max_chars}. "
                "Put long content in a file and refer to it",
                code=ErrorCode.TEXT_TOO_LONG,
            )
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            raise InvalidTextError(
                f"{what} holds a lone UTF-16 surrogate, which is not valid Unicode text; "
                "send it again as plain UTF-8 text"
            ) from None
    return value


#: git's own folder: never an output and never reviewed.
GIT_DIR = ".git"


def resolve_inside(root: Path, relative: str | Path, *, what: str = "path") -> Path:
    """Resolve `relative` against `root` (after symlinks) and require it to stay inside `root`.

    `root` must already be absolute and resolved. Absolute inputs are judged the same way (they
    pass only if they point inside `root`). Raises `path.outside_project`.
    """
    text = str(relative)
    if "\x00" in text:
        raise PathOutsideProjectError(f"{what} {shown(text)} contains a NUL byte")
    # `(root / relative).resolve()` and `is_relative_to`, on strings: this runs several times
    # per checkpoint, and pathlib's parsing cost more than the `lstat` calls themselves.
    base = str(root)
    candidate = _below(base, text) or os.path.realpath(os.path.join(base, text))  # noqa: PTH118
    if candidate != base and not candidate.startswith(base.rstrip("/") + "/"):
        raise PathOutsideProjectError(
            f"{what} {shown(text)} resolves outside {root}; give a path inside the project"
        )
    return Path(candidate)


def _below(base: str, text: str) -> str | None:
    """`realpath(base/text)` for a resolved `base` and a relative `text` without `..` whose
    parts are no symbolic links: only those parts are looked at (`realpath` would `lstat` every
    folder from `/`). None when that does not hold: `realpath` decides."""
    parts = [part for part in text.split("/") if part and part != "."]
    if text.startswith("/") or ".." in parts:
        return None
    path = base.rstrip("/")
    for part in parts:
        path = f"{path}/{part}"
        try:
            if stat.S_ISLNK(os.lstat(path).st_mode):
                return None
        except OSError:
            continue  # missing (or unreadable): as `realpath`, taken as it is
    return path or "/"


def check_outside_git_dir(root: Path, path: Path, *, what: str = "path") -> None:
    """Refuse `path` when it lies inside a `.git` folder (git's own data: config, hooks …).

    Raises `PathOutsideProjectError` with code `path.git_internal`.
    """
    parts = path.relative_to(root).parts if path.is_relative_to(root) else path.parts
    if GIT_DIR in parts:
        raise PathOutsideProjectError(
            f"{what} {shown(str(path))} is inside git's own folder {GIT_DIR}/, which is not "
            "part of the project's work",
            code=ErrorCode.PATH_GIT_INTERNAL,
        )
