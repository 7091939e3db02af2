"""Calibration cases (docs/quality-gate.md, "Calibration"): a small output, its criteria, and the
right verdict of each criterion.

DeepWork ships a set (`library/calibration/`, copied into the deepwork-mcp package); a project
adds its own in `.deepwork/calibration/`. One case is one YAML file, named for its id:

    kind: missing_section          # how reviewers fail on it (the report groups by kind)
    summary: A report without the methods section its criterion asks for.
    output:
      path: report.md              # the file's name under review (relative, in its folder)
      text: |
        ...
    criteria:
      Methods described:
        question: Does the report say how the data was collected?
        expected: fail             # pass | fail: the right verdict

A case that cannot be used is refused whole (`calibration.case_invalid`, naming file and line):
never half run, never guessed.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path, PurePosixPath
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from deepwork_core.base.error_codes import ErrorCode
from deepwork_core.base.errors import DeepWorkError, YamlError
from deepwork_core.base.yamlio import YamlDocument, read_yaml_file


class CalibrationError(DeepWorkError):
    """A calibration case cannot be used, or there is none to run."""

    code = ErrorCode.CALIBRATION_CASE_INVALID


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class CaseCriterion(_Model):
    question: str = Field(min_length=1)
    #: The right verdict of this criterion on this output.
    expected: Literal["pass", "fail"]


class CaseOutput(_Model):
    path: str = Field(min_length=1, max_length=200)
    text: str = Field(max_length=64 * 1024)

    @field_validator("path")
    @classmethod
    def _inside(cls, value: str) -> str:
        parts = PurePosixPath(value).parts
        if value.startswith("/") or ".." in parts or "\\" in value or not parts:
            raise ValueError("must be a relative path inside the case's folder")
        return value


class CalibrationCase(_Model):
    """One case (see the module)."""

    #: The file's stem; unique across the cases of a run.
    id: str
    kind: str = Field(min_length=1, max_length=60, pattern=r"^[a-z0-9_]+$")
    summary: str = Field(min_length=1)
    output: CaseOutput
    criteria: dict[str, CaseCriterion] = Field(min_length=1)
    #: Where the case came from: `library` or `project`.
    source: Literal["library", "project"] = "library"


def load_cases(
    folders: Iterable[tuple[Path, Literal["library", "project"]]],
) -> list[CalibrationCase]:
    """Every `*.yml` case of each folder (a missing folder has none), in name order; a
    project's case replaces the library's of the same id. Raises `calibration.case_invalid`."""
    found: dict[str, CalibrationCase] = {}
    for folder, source in folders:
        if not folder.is_dir():
            continue
        for path in sorted(folder.glob("*.yml")):
            case = load_case(path, source)
            found[case.id] = case
    return [found[key] for key in sorted(found)]


def load_case(path: Path, source: Literal["library", "project"] = "project") -> CalibrationCase:
    """The case in `path`. Raises `calibration.case_invalid` naming the file and line."""
    try:
        document = read_yaml_file(path)
    except YamlError as exc:
        raise _invalid(path, exc.line, exc.message) from None
    data = document.data
    if not isinstance(data, dict):
        raise _invalid(path, 1, "a case is a mapping (kind, summary, output, criteria)")
    if "id" in data or "source" in data:
        raise _invalid(path, document.line_of(("id",)) or 1, "`id` and `source` are not keys")
    try:
        return CalibrationCase.model_validate({**data, "id": path.stem, "source": source})
    except ValidationError as exc:
        raise _first_problem(path, document, exc) from None


def _first_problem(path: Path, document: YamlDocument, exc: ValidationError) -> CalibrationError:
    error = exc.errors()[0]
    where = tuple(part for part in error["loc"] if isinstance(part, str | int))
    key = ".".join(str(part) for part in where) or "case"
    if error["type"] == "missing" and where[-1:] == ("expected",):
        message = f"{key}: the criterion has no expected verdict (pass or fail)"
    else:
        message = f"{key}: {error['msg']}"
    return _invalid(path, document.line_of(where), message)


def _invalid(path: Path, line: int | None, message: str) -> CalibrationError:
    where = f"{path}:{line}" if line else str(path)
    return CalibrationError(f"{where}: {message}")
