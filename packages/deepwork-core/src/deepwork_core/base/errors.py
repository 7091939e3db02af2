"""The one error hierarchy of DeepWork.

Every error carries a stable, dotted `code` (`job.not_found`, `outputs.path_outside_project`,
`session.state_corrupt`, …) and says whether the agent that caused it can fix it by calling again
with other arguments. Tests assert codes, never message wording. The MCP layer maps any
`DeepWorkError` to a tool error whose text starts with the code (see `deepwork_mcp.tool_errors`).

A `needs_work` verdict of the quality gate is a normal result, not an error.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

from deepwork_core.base.error_codes import Code, ErrorCode


class Severity(StrEnum):
    ERROR = "error"
    WARNING = "warning"


@dataclass(frozen=True, slots=True)
class Problem:
    """One finding about a user-written file: where it is, what is wrong, how bad it is."""

    code: Code
    message: str
    file: Path | None = None
    line: int | None = None
    step: str | None = None
    key: str | None = None
    severity: Severity = Severity.ERROR

    def location(self) -> str:
        """`file:line` (or just `file`), as editors and compilers print it."""
        if self.file is None:
            return "<unknown>"
        return f"{self.file}:{self.line}" if self.line is not None else str(self.file)

    def __str__(self) -> str:
        return f"{self.location()}: {self.code}: {self.message}"


class DeepWorkError(Exception):
    """Root of every error DeepWork raises on purpose."""

    #: A code of any family (`Code`: `ErrorCode`, or a family a subpackage keeps).
    code: Code = ErrorCode.DEEPWORK_ERROR
    #: True when the agent can fix the cause itself (wrong name, missing file, bad path …).
    agent_fixable: bool = False
    #: Every problem behind the error, each with its own code (most serious first), when there
    #: is more than one.
    problems: tuple[Problem, ...] = ()

    def __init__(self, message: str, *, code: Code | None = None) -> None:
        super().__init__(message)
        self.message = message
        if code is not None:
            self.code = code

    def __str__(self) -> str:
        return self.message


class InvalidIdentifierError(DeepWorkError):
    """A name or id from outside (job, workflow, step, session) does not match its pattern."""

    code = ErrorCode.IDENTIFIER_INVALID
    agent_fixable = True


class InvalidTextError(DeepWorkError):
    """Text from outside that cannot be stored as UTF-8 (a lone surrogate, which JSON allows)."""

    code = ErrorCode.TEXT_INVALID
    agent_fixable = True


class PathOutsideProjectError(DeepWorkError):
    """A path resolves (after symlinks) outside the folder it must stay in."""

    code = ErrorCode.PATH_OUTSIDE_PROJECT
    agent_fixable = True


class FileReadError(DeepWorkError):
    """A project file cannot be read as text (`file.not_regular`, `file.too_large`, …)."""

    code = ErrorCode.FILE_UNREADABLE


class ConfigError(DeepWorkError):
    """`.deepwork/config.yml` (or another settings file) is invalid."""

    code = ErrorCode.CONFIG_INVALID


class YamlError(DeepWorkError):
    """A YAML file could not be read safely (syntax, size, binary content, alias bombs).

    `line` is the 1-based line of the problem when the YAML parser knows it.
    """

    code = ErrorCode.YAML_INVALID

    def __init__(self, message: str, *, code: ErrorCode | None = None, line: int | None = None):
        super().__init__(message, code=code)
        self.line = line


class WorkflowNotFoundError(DeepWorkError):
    code = ErrorCode.WORKFLOW_NOT_FOUND
    agent_fixable = True


class DocSpecError(DeepWorkError):
    code = ErrorCode.DOC_SPEC_INVALID


class OutputsError(DeepWorkError):
    """Submitted step outputs do not match the step's declaration (`outputs.*` codes)."""

    code = ErrorCode.OUTPUTS_INVALID
    agent_fixable = True


class InputsError(DeepWorkError):
    """Values given to `start_workflow` do not match the workflow's start parameters."""

    code = ErrorCode.INPUTS_INVALID
    agent_fixable = True


class SessionError(DeepWorkError):
    """Workflow session state problems (`session.*` codes)."""

    code = ErrorCode.SESSION_ERROR

    def __init__(
        self, message: str, *, code: ErrorCode | None = None, session_id: str | None = None
    ) -> None:
        super().__init__(message, code=code)
        #: The session a `session.not_found` names (so that each edge words it for its reader).
        self.session_id = session_id


class GitError(DeepWorkError):
    """A git command failed or timed out (`git.*` codes)."""

    code = ErrorCode.GIT_FAILED


class ProcessTimeoutError(DeepWorkError):
    """A subprocess ran past its deadline and was killed with its process group."""

    code = ErrorCode.PROCESS_TIMEOUT


class ProcessOutputError(DeepWorkError):
    """A subprocess printed more than its output cap and was killed with its process group."""

    code = ErrorCode.PROCESS_OUTPUT_TOO_LARGE


class QualityGateError(DeepWorkError):
    """The reviewer could not give a verdict (`quality_gate.*` codes)."""

    code = ErrorCode.QUALITY_GATE_ERROR


class ReviewError(DeepWorkError):
    """DeepWork Reviews problems (`review.*` codes)."""

    code = ErrorCode.REVIEW_ERROR


class HookError(DeepWorkError):
    """A hook could not run (`hook.*` codes)."""

    code = ErrorCode.HOOK_ERROR
