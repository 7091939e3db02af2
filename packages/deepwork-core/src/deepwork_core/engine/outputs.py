"""Checking what an agent submits to `finished_step` (JOBS-REQ-001.5, docs/runtime.md).

Every submitted name must be declared by a step of the current checkpoint, every required output
must be there with the declared shape (`file`: one path, `files`: a list of paths, not empty when
required, `file_path`: either, `string`: inline text), and every path must exist, be a regular
file (not a folder, FIFO or device) and resolve (after symlinks) inside the project, outside
`.git/`. A file output whose declaration carries a `json_schema` must parse as JSON and satisfy
it (`outputs.schema_mismatch`), within the bounds of `deepwork_core.engine.json_outputs`. All
problems are reported at once, most serious first: the error's code is that of the most serious
one, and `problems` lists every problem with its own code.
"""

from __future__ import annotations

import os
import posixpath
import stat
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from deepwork_core.base.config import OutputsConfig
from deepwork_core.base.error_codes import ErrorCode
from deepwork_core.base.errors import (
    DeepWorkError,
    InvalidTextError,
    OutputsError,
    PathOutsideProjectError,
    Problem,
)
from deepwork_core.base.identifiers import (
    MAX_TEXT_CHARS,
    check_outside_git_dir,
    check_text,
    resolve_inside,
)
from deepwork_core.engine.json_outputs import json_output_problem
from deepwork_core.jobs.model import Step
from deepwork_core.jobs.steps.parts import OutputSpec, OutputType
from deepwork_core.state.sessions import OutputValue

SYNTAX_HINTS = {
    OutputType.FILE: "filepath",
    OutputType.FILES: "array of filepaths for all individual files",
    OutputType.FILE_PATH: "filepath, or array of filepaths",
    OutputType.STRING: "the text itself (a string)",
}


@dataclass(frozen=True, slots=True)
class ValidatedOutputs:
    """Submitted outputs, normalised to project-relative POSIX paths, grouped by declaring step."""

    by_step: dict[str, dict[str, OutputValue]]
    #: Every output of every step in one mapping; computed once, read by every later stage.
    merged: dict[str, OutputValue] = field(init=False)

    def __post_init__(self) -> None:
        merged = {
            name: value for outputs in self.by_step.values() for name, value in outputs.items()
        }
        object.__setattr__(self, "merged", merged)


@dataclass(frozen=True, slots=True)
class _Finding:
    code: ErrorCode
    message: str


def validate_outputs(
    project_root: Path,
    steps: Sequence[Step],
    submitted: Mapping[str, object],
    limits: OutputsConfig | None = None,
    *,
    paths_from: str | None = None,
) -> ValidatedOutputs:
    """Check `submitted` against the outputs the `steps` of one checkpoint declare.

    `project_root` must be absolute and resolved; `limits` bound the `json_schema` checks
    (`deepwork_core.engine.json_outputs`). `paths_from`: the project folder the agent gave its
    paths relative to, when not the root (a worktree instance's, already put in front of each
    path); a missing file is then named as the agent gave it. Raises `OutputsError`
    (`outputs.unknown`, `outputs.missing`, `outputs.wrong_type`, `outputs.empty_list`,
    `outputs.file_not_found`, `outputs.not_a_file`, the `json_schema` codes) or
    `PathOutsideProjectError` (`path.outside_project`) for the first problem, naming all of them.
    """
    limits = OutputsConfig() if limits is None else limits
    declared: dict[str, tuple[Step, OutputSpec]] = {}
    for step in steps:
        for name, spec in step.outputs.items():
            declared.setdefault(name, (step, spec))
    valid_names = ", ".join(sorted(declared)) or "(none: submit {})"

    findings: list[_Finding] = []
    unknown = sorted(str(key) for key in submitted if key not in declared)
    if unknown:
        findings.append(
            _Finding(
                ErrorCode.OUTPUTS_UNKNOWN,
                f"unknown output name(s): {', '.join(unknown)}. Declared outputs: {valid_names}",
            )
        )
    missing = sorted(n for n, (_, spec) in declared.items() if spec.required and n not in submitted)
    if missing:
        findings.append(
            _Finding(
                ErrorCode.OUTPUTS_MISSING,
                f"missing required output(s): {', '.join(missing)}; create them and include "
                "them in outputs",
            )
        )

    by_step: dict[str, dict[str, OutputValue]] = {step.id: {} for step in steps}
    for name, value in submitted.items():
        if name not in declared:
            continue
        step, spec = declared[name]
        checked = _check_value(project_root, name, spec, value, findings, limits, paths_from)
        if checked is not None:
            by_step[step.id][name] = checked

    if findings:
        raise _error(findings)
    return ValidatedOutputs(by_step)


#: Most serious first: a path that leaves the project outranks a merely missing output.
_SEVERITY = (
    ErrorCode.PATH_GIT_INTERNAL,
    ErrorCode.PATH_OUTSIDE_PROJECT,
    ErrorCode.TEXT_INVALID,
    ErrorCode.OUTPUTS_NOT_A_FILE,
    ErrorCode.OUTPUTS_FILE_NOT_FOUND,
    ErrorCode.OUTPUTS_WRONG_TYPE,
    ErrorCode.OUTPUTS_JSON_TOO_LARGE,
    ErrorCode.OUTPUTS_JSON_TOO_DEEP,
    ErrorCode.OUTPUTS_SCHEMA_UNUSABLE,
    ErrorCode.OUTPUTS_SCHEMA_CHECK_TIMEOUT,
    ErrorCode.OUTPUTS_SCHEMA_MISMATCH,
    ErrorCode.TEXT_TOO_LONG,
    ErrorCode.OUTPUTS_EMPTY_LIST,
    ErrorCode.OUTPUTS_UNKNOWN,
    ErrorCode.OUTPUTS_MISSING,
)


def _error(findings: list[_Finding]) -> DeepWorkError:
    """One error for all `findings`: the most serious one's code, every problem listed."""
    ranked = sorted(
        findings,
        key=lambda f: _SEVERITY.index(f.code) if f.code in _SEVERITY else len(_SEVERITY),
    )
    code = ranked[0].code
    if len(ranked) == 1:
        message = ranked[0].message
    else:
        listed = "\n".join(f"- {f.code}: {f.message}" for f in ranked)
        message = f"{len(ranked)} problems with the outputs, most serious first:\n{listed}"
    error: DeepWorkError
    if code.startswith("path."):
        error = PathOutsideProjectError(message, code=code)
    else:
        error = OutputsError(message, code=code)
    error.problems = tuple(Problem(code=f.code, message=f.message) for f in ranked)
    return error


def _check_value(
    root: Path,
    name: str,
    spec: OutputSpec,
    value: object,
    findings: list[_Finding],
    limits: OutputsConfig,
    paths_from: str | None,
) -> OutputValue | None:
    if spec.type is OutputType.STRING:
        return _check_string(name, value, findings)
    checked = _check_files(root, name, spec, value, findings, paths_from)
    if checked is None or spec.json_schema is None:
        return checked
    mismatches = [
        _Finding(problem[0], f"output {name!r}: {path}: {problem[1]}")
        for path in ([checked] if isinstance(checked, str) else checked)
        if (problem := json_output_problem(root / path, spec.json_schema, limits)) is not None
    ]
    findings.extend(mismatches)
    return None if mismatches else checked


def _check_string(name: str, value: object, findings: list[_Finding]) -> str | None:
    if not isinstance(value, str):
        findings.append(
            _Finding(
                ErrorCode.OUTPUTS_WRONG_TYPE,
                f"output {name!r} is declared as type 'string' and must be the text itself, "
                f"got {_describe(value)}",
            )
        )
        return None
    try:
        return check_text(value, what=f"output {name!r}", max_chars=MAX_TEXT_CHARS)
    except InvalidTextError as exc:
        findings.append(_Finding(exc.code, exc.message))
        return None


def _check_files(
    root: Path,
    name: str,
    spec: OutputSpec,
    value: object,
    findings: list[_Finding],
    paths_from: str | None,
) -> OutputValue | None:
    if spec.type is OutputType.FILE or (
        spec.type is OutputType.FILE_PATH and isinstance(value, str)
    ):
        if not isinstance(value, str) or not value.strip():
            findings.append(
                _Finding(
                    ErrorCode.OUTPUTS_WRONG_TYPE,
                    f"output {name!r} is declared as type {spec.type.value!r} and must be a "
                    "single non-empty "
                    f"path string, got {_describe(value)}",
                )
            )
            return None
        return _check_path(root, name, value, findings, paths_from)

    if not isinstance(value, list):
        findings.append(
            _Finding(
                ErrorCode.OUTPUTS_WRONG_TYPE,
                f"output {name!r} is declared as type {spec.type.value!r} and must be a list "
                f"of path strings, got {_describe(value)}",
            )
        )
        return None
    if not value and spec.required:
        findings.append(
            _Finding(
                ErrorCode.OUTPUTS_EMPTY_LIST,
                f"output {name!r} is required and must list at least one file",
            )
        )
        return None
    paths: list[str] = []
    for item in value:
        if not isinstance(item, str) or not item.strip():
            findings.append(
                _Finding(
                    ErrorCode.OUTPUTS_WRONG_TYPE,
                    f"output {name!r}: every element must be a non-empty path string, "
                    f"got {_describe(item)}",
                )
            )
            continue
        checked = _check_path(root, name, item, findings, paths_from)
        if checked is not None:
            paths.append(checked)
    return paths if len(paths) == len(value) else None


def _check_path(
    root: Path, name: str, value: str, findings: list[_Finding], paths_from: str | None = None
) -> str | None:
    try:
        check_text(value, what=f"output {name!r} path", max_chars=None)
        resolved = resolve_inside(root, value, what=f"output {name!r} path")
        lexical = Path(os.path.normpath(root / value))
        for candidate in (lexical, resolved):
            check_outside_git_dir(root, candidate, what=f"output {name!r} path")
        info = resolved.stat()
    except (PathOutsideProjectError, InvalidTextError) as exc:
        findings.append(_Finding(exc.code, exc.message))
        return None
    except OSError as exc:  # missing, or a name the OS refuses (too long, ...)
        reason = "" if isinstance(exc, FileNotFoundError) else f" ({exc.strerror})"
        given, base = value, f"the project root {root}"
        if paths_from is not None:
            given, base = (
                value.removeprefix(f"{paths_from}/"),
                f"the instance's worktree {paths_from}",
            )
        findings.append(
            _Finding(
                ErrorCode.OUTPUTS_FILE_NOT_FOUND,
                f"output {name!r}: file not found at {_clip(given)}{reason} (paths are relative "
                f"to {base}); create it or fix the path",
            )
        )
        return None
    if not stat.S_ISREG(info.st_mode):
        # A folder or a FIFO is no deliverable, and reviewers must never open a FIFO.
        findings.append(
            _Finding(
                ErrorCode.OUTPUTS_NOT_A_FILE,
                f"output {name!r}: {_clip(value)} is not a regular file (a folder, FIFO or "
                "device); submit the path of a file",
            )
        )
        return None
    return _relative(root, value, resolved)


def _relative(root: Path, value: str, resolved: Path) -> str:
    """The project-relative POSIX form of `value` (symlinks inside the project are kept)."""
    lexical = Path(os.path.normpath(root / value))
    base = lexical if lexical.is_relative_to(root) else resolved
    relative = base.relative_to(root).as_posix()
    return posixpath.normpath(relative) if relative else "."


def _clip(value: str) -> str:
    """`repr(value)`, cut short: an agent's 100 kB path is not echoed back whole."""
    shown = repr(value)
    return shown if len(shown) <= 200 else shown[:200] + "…"


def _describe(value: object) -> str:
    if isinstance(value, str):
        return "an empty string" if not value.strip() else "a string"
    if isinstance(value, list):
        return "a list"
    if value is None:
        return "null"
    return type(value).__name__
