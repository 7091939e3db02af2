"""Problems found in one `job.yml`, each with file, line, step and key (`file:line: code: msg`).

`JobReport` turns pydantic's validation errors into stable codes and messages, folding the noise
of union alternatives, and knows how to name the step a key path lies in for both job formats.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from pydantic_core import ErrorDetails

from deepwork_core.base.error_codes import Code
from deepwork_core.base.errors import Problem, Severity
from deepwork_core.base.yamlio import KeyPath, YamlDocument
from deepwork_core.jobs.errors import JobCode

#: The keys allowed at a key path (for "did you mean"), or None when unknown.
AllowedKeys = Callable[[KeyPath], Sequence[str] | None]

_SHAPE_CODES = {
    "missing": JobCode.JOB_MISSING_KEY,
    "extra_forbidden": JobCode.JOB_UNKNOWN_KEY,
    "string_pattern_mismatch": JobCode.JOB_PATTERN_MISMATCH,
    "string_too_short": JobCode.JOB_TOO_SHORT,
    "too_short": JobCode.JOB_TOO_SHORT,
    "string_too_long": JobCode.JOB_TOO_LONG,
    "too_long": JobCode.JOB_TOO_LONG,
    "input_shape": JobCode.JOB_INVALID_INPUT,
    "hook_action_shape": JobCode.JOB_INVALID_HOOK_ACTION,
    "step_body_shape": JobCode.JOB_INVALID_STEP_BODY,
    "may_change_glob": JobCode.JOB_INVALID_MAY_CHANGE,
    "approval_show": JobCode.JOB_INVALID_APPROVAL,
    "approval_policy": JobCode.JOB_INVALID_APPROVAL,
    "fan_out_shape": JobCode.JOB_INVALID_FOR_EACH,
}


class JobReport:
    """Collects problems for one job.yml, naming file, line, step and key of each."""

    def __init__(
        self,
        job_file: Path,
        document: YamlDocument,
        *,
        step_ids: Sequence[str | None] | None = None,
        allowed_keys: AllowedKeys | None = None,
    ) -> None:
        self.job_file = job_file
        self.document = document
        self.problems: list[Problem] = []
        self._allowed_keys = allowed_keys
        self._step_ids: Sequence[str | None] = (
            step_ids if step_ids is not None else _raw_step_ids(document.data)
        )

    @property
    def has_errors(self) -> bool:
        return any(p.severity is Severity.ERROR for p in self.problems)

    def add(
        self, code: Code, message: str, path: KeyPath, *, severity: Severity = Severity.ERROR
    ) -> None:
        key = dotted(path) or None
        step = self._step_at(path)
        where = key or ""
        if step is not None:
            where = f"step {step!r} ({key})" if key else f"step {step!r}"
        self.problems.append(
            Problem(
                code,
                f"{where}: {message}" if where else message,
                self.job_file,
                self.document.line_of(path),
                step,
                key,
                severity,
            )
        )

    def add_validation_errors(self, errors: list[ErrorDetails]) -> None:
        """Turn pydantic's errors into problems, folding the noise of union alternatives."""
        cleaned = [
            (*_clean_loc(self.document.data, error["loc"], error["type"] == "missing"), error)
            for error in errors
        ]
        by_site: dict[KeyPath, list[tuple[KeyPath, ErrorDetails]]] = {}
        for path, site, error in cleaned:
            if site is not None:
                by_site.setdefault(site, []).append((path, error))
        for path, site, error in cleaned:
            if site is None:
                self._add_shape(path, error)
        for site, alternatives in by_site.items():
            # A union (a workflow entry is a step id or a list of ids): a "wrong type" error at
            # the site only means "this alternative did not apply" when another one explains more.
            specific = [
                (path, error)
                for path, error in alternatives
                if not (path == site and error["type"].endswith("_type"))
            ]
            if specific:
                for path, error in specific:
                    self._add_shape(path, error)
            else:
                expected = " or ".join(
                    str(error["msg"]).removeprefix("Input should be ") for _, error in alternatives
                )
                if len(site) == 4 and site[0] == "workflows" and site[2] == "steps":
                    expected = "a step id or a list of step ids (run concurrently)"
                got = type(alternatives[0][1]["input"]).__name__
                self.add(JobCode.JOB_WRONG_TYPE, f"should be {expected} (got {got})", site)

    def _add_shape(self, path: KeyPath, error: ErrorDetails) -> None:
        kind = error["type"]
        ctx = error.get("ctx") or {}
        path = (*path, *error_at(error))
        value = error.get("input")
        code = _SHAPE_CODES.get(kind)
        message = str(error["msg"])
        if kind == "missing":
            message = "required key is missing"
        elif kind == "extra_forbidden":
            message = f"unknown key {path[-1]!r}{self.allowed_keys_hint(path)}"
        elif kind == "string_pattern_mismatch":
            message = f"{value!r} does not match the pattern {ctx.get('pattern')}"
            if ctx.get("pattern") == r"^[a-z][a-z0-9_]*$":
                message += " (lowercase letters, digits and underscores, starting with a letter)"
        elif kind in ("string_too_short", "too_short") and ctx.get("min_length") == 1:
            message = "must not be empty"
        elif kind == "string_too_long" and isinstance(value, str):
            message = f"is {len(value)} characters long; at most {ctx.get('max_length')} allowed"
        elif code is None and (kind.endswith(("_type", "_parsing")) or kind == "model_attributes"):
            code = JobCode.JOB_WRONG_TYPE
            message = f"{message} (got {type(value).__name__})"
        self.add(code or JobCode.JOB_INVALID_VALUE, message, path)

    def allowed_keys_hint(self, path: KeyPath) -> str:
        allowed = self._allowed_keys(path[:-1]) if self._allowed_keys is not None else None
        if not allowed:
            return ""
        close = difflib.get_close_matches(str(path[-1]), list(allowed), n=1)
        suggestion = f"; did you mean {close[0]!r}?" if close else ""
        return f" (allowed here: {', '.join(allowed)}){suggestion}"

    def _step_at(self, path: KeyPath) -> str | None:
        if len(path) >= 2 and path[0] == "steps" and isinstance(path[1], int):
            if 0 <= path[1] < len(self._step_ids):
                return self._step_ids[path[1]] or f"#{path[1]}"
            return f"#{path[1]}"
        if len(path) >= 4 and path[0] == "workflows" and path[2] == "steps":
            return _workflow_step_name(self.document.data, path)
        return None


def error_at(error: ErrorDetails) -> KeyPath:
    """The key inside the model an error of a model-wide check is about (its context's `at`,
    e.g. `approval.show`), so that it is reported on that key's line, not on the model's."""
    at = (error.get("ctx") or {}).get("at")
    if not isinstance(at, str):
        return ()
    return tuple(int(part) if part.isdigit() else part for part in at.split("."))


def _raw_step_ids(data: Any) -> list[str | None]:
    raw_steps = data.get("steps") if isinstance(data, dict) else None
    if not isinstance(raw_steps, list):
        return []
    return [
        s.get("id") if isinstance(s, dict) and isinstance(s.get("id"), str) else None
        for s in raw_steps
    ]


def _workflow_step_name(data: Any, path: KeyPath) -> str | None:
    """`workflow/step` for a key path inside a step of a 0.10-format workflow mapping."""
    workflow, position = path[1], path[3]
    if not isinstance(workflow, str) or not isinstance(position, int):
        return None
    workflows = data.get("workflows") if isinstance(data, dict) else None
    spec = workflows.get(workflow) if isinstance(workflows, dict) else None
    steps = spec.get("steps") if isinstance(spec, dict) else None
    raw = steps[position] if isinstance(steps, list) and 0 <= position < len(steps) else None
    name = raw.get("name") if isinstance(raw, dict) else None
    return f"{workflow}/{name if isinstance(name, str) else f'#{position}'}"


def _clean_loc(
    data: Any, loc: tuple[int | str, ...], missing: bool
) -> tuple[KeyPath, KeyPath | None]:
    """The key path of a pydantic error location, and where a union alternative was tried.

    Pydantic inserts the name of each union alternative (`'constrained-str'`,
    `'list[constrained-str]'`) into the location; walking the data tells them apart from keys.
    """
    node: Any = data
    path: list[str | int] = []
    site: KeyPath | None = None
    for position, part in enumerate(loc):
        in_list = isinstance(part, int) and isinstance(node, list) and 0 <= part < len(node)
        if in_list or (isinstance(node, dict) and part in node):
            path.append(part)
            node = node[part]
        elif missing and isinstance(node, dict) and position == len(loc) - 1:
            path.append(part)  # the missing key
            node = None
        elif part == "[key]":
            continue  # the problem is the mapping key itself, already the last path element
        elif site is None:
            site = tuple(path)
    return tuple(path), site


def dotted(path: KeyPath) -> str:
    """`steps[0].outputs.notes.md`: a key path as people write it."""
    text = ""
    for part in path:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text
