"""`.deepreview` files: the rule model and a parser that reports every problem with its line.

A `.deepreview` file is a YAML map from rule name to rule (docs/reviews.md). Parsing never raises
for a bad file: it returns the valid rules and one `Problem` per finding, so one broken rule
does not hide the others and one broken file does not stop discovery.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum
from functools import cached_property
from pathlib import Path, PurePosixPath
from typing import Any, Literal

from deepwork_core.base.error_codes import ErrorCode
from deepwork_core.base.errors import FileReadError, PathOutsideProjectError, Problem, YamlError
from deepwork_core.base.fsutil import read_text_file
from deepwork_core.base.identifiers import resolve_inside
from deepwork_core.base.yamlio import YamlDocument, read_yaml_file
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from deepwork_review.matcher import Scope

FILE_NAME = ".deepreview"
RULE_NAME_PATTERN = r"^[a-zA-Z0-9_-]+$"
#: A rule's instructions (inline or from a file) may be at most this long.
MAX_INSTRUCTIONS_BYTES = 256 * 1024

_RULE_NAME_RE = re.compile(RULE_NAME_PATTERN)
_Report = Callable[[ErrorCode, str, int | None], None]


class Strategy(StrEnum):
    INDIVIDUAL = "individual"
    MATCHES_TOGETHER = "matches_together"
    ALL_CHANGED_FILES = "all_changed_files"


class AdditionalContext(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    all_changed_filenames: bool = False
    unchanged_matching_files: bool = False


class ReviewRule(BaseModel):
    """One validated rule, its instructions resolved to text, with where it was defined."""

    model_config = ConfigDict(frozen=True)

    name: str
    description: str
    include: tuple[str, ...]
    exclude: tuple[str, ...] = ()
    strategy: Strategy
    instructions: str
    #: Project-relative path of the instructions file, when the rule uses `{file: …}`.
    instructions_file: str | None = None
    agent: dict[str, str] = Field(default_factory=dict)
    additional_context: AdditionalContext = AdditionalContext()
    #: Project-relative POSIX path of the `.deepreview` file, and the line of the rule's name.
    source: str
    line: int
    #: Project-relative POSIX folder the rule is scoped to ("" for the project root).
    folder: str

    @property
    def defining_file(self) -> str:
        return f"{self.source}:{self.line}"

    @property
    def display_name(self) -> str:
        """The rule name, prefixed with its folder when it is not at the project root."""
        return f"{self.folder}/{self.name}" if self.folder else self.name

    @cached_property
    def scope(self) -> Scope:
        return Scope(self.folder, self.include, self.exclude)

    @cached_property
    def fingerprint(self) -> str:
        """A hash of everything that defines the rule, instructions text included."""
        canonical = json.dumps(
            self.model_dump(mode="json", exclude={"line"}), sort_keys=True, ensure_ascii=False
        )
        return hashlib.sha256(canonical.encode("utf-8")).hexdigest()

    def agent_for(self, platform: str) -> str | None:
        return self.agent.get(platform)


@dataclass(frozen=True, slots=True)
class ParsedFile:
    """The outcome of parsing one `.deepreview` file."""

    source: str
    rules: tuple[ReviewRule, ...]
    problems: tuple[Problem, ...]
    #: Instruction files read while parsing (absolute path), for cache revalidation.
    dependencies: tuple[Path, ...] = ()


# --- raw shapes, validated with pydantic before the rule is built ---------------------------


class _RawMatch(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    include: list[str] = Field(min_length=1)
    exclude: list[str] = Field(default_factory=list)


class _RawReview(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    strategy: Literal["individual", "matches_together", "all_changed_files"]
    instructions: Any  # text or {file: …}; checked by hand for one clear message
    agent: dict[str, str] = Field(default_factory=dict)
    additional_context: AdditionalContext = AdditionalContext()


class _RawRule(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    description: str = Field(min_length=1, max_length=256)
    match: _RawMatch
    review: _RawReview


def parse_deepreview(project_root: Path, source: str) -> ParsedFile:
    """Parse the `.deepreview` file at project-relative POSIX path `source`.

    `project_root` must be absolute and resolved. Instruction files named by `{file: …}` are
    read relative to the `.deepreview`'s folder and must stay inside the project.
    """
    path = project_root / source
    problems: list[Problem] = []

    def problem(code: ErrorCode, message: str, line: int | None) -> None:
        problems.append(Problem(code=code, message=message, file=Path(source), line=line))

    try:
        document = read_yaml_file(path)
    except YamlError as exc:
        line = _line_in_message(exc.message)
        problem(exc.code, exc.message, line)
        return ParsedFile(source, (), tuple(problems))

    data = document.data
    if data is None:
        return ParsedFile(source, (), ())  # an empty file holds no rules
    if not isinstance(data, dict):
        problem(ErrorCode.REVIEW_CONFIG_INVALID, "the file must be a map from rule name to rule", 1)
        return ParsedFile(source, (), tuple(problems))

    folder = PurePosixPath(source).parent.as_posix()
    folder = "" if folder == "." else folder
    rules: list[ReviewRule] = []
    dependencies: list[Path] = []
    context = _Context(project_root, source, folder, problem, dependencies)
    for name, value in data.items():
        line = document.line_of((str(name),))
        if not isinstance(name, str) or not _RULE_NAME_RE.fullmatch(name):
            problem(
                ErrorCode.REVIEW_CONFIG_INVALID,
                f"rule name {name!r} must match {RULE_NAME_PATTERN}",
                line,
            )
            continue
        rule = _build_rule(context, document, name, value)
        if rule is not None:
            rules.append(rule)
    return ParsedFile(source, tuple(rules), tuple(problems), tuple(dependencies))


@dataclass(frozen=True, slots=True)
class _Context:
    project_root: Path
    source: str
    folder: str
    problem: _Report
    dependencies: list[Path]


def _build_rule(
    context: _Context, document: YamlDocument, name: str, value: object
) -> ReviewRule | None:
    problem = context.problem
    try:
        raw = _RawRule.model_validate(value)
    except ValidationError as exc:
        for error in exc.errors():
            loc = tuple(error["loc"])
            where = ".".join(str(part) for part in loc) or "rule"
            problem(
                ErrorCode.REVIEW_CONFIG_INVALID,
                f"rule {name!r}: {where}: {error['msg']}",
                document.line_of((name, *loc)),
            )
        return None

    instructions_line = document.line_of((name, "review", "instructions"))
    instructions, instructions_file = _instructions(
        context.project_root, context.folder, raw.review.instructions, context.dependencies
    )
    if instructions is None:
        problem(
            ErrorCode.REVIEW_INSTRUCTIONS_INVALID,
            f"rule {name!r}: review.instructions must be text or {{file: <path>}}",
            instructions_line,
        )
        return None
    if isinstance(instructions, _Failure):
        problem(instructions.code, f"rule {name!r}: {instructions.message}", instructions_line)
        return None
    return ReviewRule(
        name=name,
        description=raw.description,
        include=tuple(raw.match.include),
        exclude=tuple(raw.match.exclude),
        strategy=Strategy(raw.review.strategy),
        instructions=instructions,
        instructions_file=instructions_file,
        agent=raw.review.agent,
        additional_context=raw.review.additional_context,
        source=context.source,
        line=document.line_of((name,)) or 1,
        folder=context.folder,
    )


@dataclass(frozen=True, slots=True)
class _Failure:
    code: ErrorCode
    message: str


def _instructions(
    project_root: Path, folder: str, value: object, dependencies: list[Path]
) -> tuple[str | _Failure | None, str | None]:
    """Inline text, or the text of `{file: path}` read inside the project.

    The file's path is added to `dependencies` even when it is missing, so that a cache
    notices when it appears.
    """
    if isinstance(value, str):
        if len(value.encode("utf-8", errors="replace")) > MAX_INSTRUCTIONS_BYTES:
            return _Failure(
                ErrorCode.REVIEW_INSTRUCTIONS_TOO_LARGE,
                f"inline instructions are longer than {MAX_INSTRUCTIONS_BYTES} bytes",
            ), None
        return (value, None) if value.strip() else (None, None)
    if not (isinstance(value, dict) and set(value) == {"file"} and isinstance(value["file"], str)):
        return None, None
    relative = value["file"]
    try:
        target = resolve_inside(
            project_root, project_root / folder / relative, what="instructions file"
        )
    except PathOutsideProjectError as exc:
        return _Failure(ErrorCode.REVIEW_INSTRUCTIONS_OUTSIDE_PROJECT, str(exc)), None
    dependencies.append(target)
    try:
        text = read_text_file(target, limit=MAX_INSTRUCTIONS_BYTES)
    except FileReadError as exc:
        if exc.code == ErrorCode.FILE_TOO_LARGE:
            return _Failure(
                ErrorCode.REVIEW_INSTRUCTIONS_TOO_LARGE,
                f"instructions file {relative!r} is larger than {MAX_INSTRUCTIONS_BYTES} bytes",
            ), None
        reason = "not found" if exc.code == ErrorCode.FILE_NOT_FOUND else exc.message
        return _Failure(
            ErrorCode.REVIEW_INSTRUCTIONS_MISSING, f"instructions file {relative!r}: {reason}"
        ), None
    return text, target.relative_to(project_root).as_posix()


def _line_in_message(message: str) -> int | None:
    found = re.search(r"\bline (\d+)", message)
    return int(found.group(1)) if found else None
