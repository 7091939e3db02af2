"""Doc specs: what a good document of some kind looks like (docs/job-format.md, "Doc specs").

A doc spec is a markdown file with YAML frontmatter between `---` lines; the body is an example
document. An output that names a doc spec gets the spec injected into its step's instructions
(`render_doc_spec_for_instructions`) and the spec's criteria added to the reviews covering it
(`deepwork_core.gate.quality`).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Annotated, Any, NoReturn

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, ValidationError

from deepwork_core.base.error_codes import ErrorCode
from deepwork_core.base.errors import DocSpecError, FileReadError, Problem, YamlError
from deepwork_core.base.fsutil import read_bytes_file
from deepwork_core.base.yamlio import MAX_BYTES, YamlDocument, parse_yaml

_Text = Annotated[str, StringConstraints(min_length=1)]
_DELIMITER = "---"


class DocSpecInvalidError(DocSpecError):
    """A doc spec file cannot be used; `problems` names file and line of every finding."""

    def __init__(self, message: str, problems: Sequence[Problem], *, code: ErrorCode) -> None:
        super().__init__(message, code=code)
        self.problems = tuple(problems)


class DocSpecCriterion(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    name: _Text
    description: _Text


class DocSpecFrontmatter(BaseModel):
    """The frontmatter keys; any other key is an error."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: _Text
    description: _Text
    quality_criteria: list[DocSpecCriterion] = Field(min_length=1)
    path_patterns: list[_Text] = Field(default_factory=list)
    target_audience: _Text | None = None
    frequency: _Text | None = None


class DocSpec(DocSpecFrontmatter):
    """A loaded doc spec: the frontmatter plus the example document and where it came from."""

    example_document: str = ""
    source: Path | None = None


def load_doc_spec(path: Path) -> DocSpec:
    """Read and validate the doc spec at `path`.

    Raises `DocSpecInvalidError` (a `DocSpecError`) with code `doc_spec.unreadable`,
    `doc_spec.no_frontmatter`, `doc_spec.yaml` or `doc_spec.invalid`; every problem carries the
    file and, where known, the line.
    """
    try:
        raw = read_bytes_file(path, limit=MAX_BYTES)
    except FileReadError as exc:
        _fail(path, ErrorCode.DOC_SPEC_UNREADABLE, f"cannot read doc spec: {exc.message}", None)
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        _fail(path, ErrorCode.DOC_SPEC_UNREADABLE, f"not UTF-8 text (byte {exc.start})", None)
    return parse_doc_spec(text, source=path)


def parse_doc_spec(text: str, *, source: Path) -> DocSpec:
    """Parse doc spec `text` (see `load_doc_spec`); `source` names the file in problems."""
    lines = text.splitlines(keepends=True)
    if not lines or lines[0].strip() != _DELIMITER:
        _fail(
            source,
            ErrorCode.DOC_SPEC_NO_FRONTMATTER,
            "a doc spec starts with a '---' line, then YAML frontmatter, then another '---' line",
            1,
        )
    end = next((i for i in range(1, len(lines)) if lines[i].strip() == _DELIMITER), None)
    if end is None:
        _fail(
            source,
            ErrorCode.DOC_SPEC_NO_FRONTMATTER,
            "the frontmatter has no closing '---' line",
            1,
        )
    # One blank line stands in for the opening '---', so YAML line numbers are file line numbers.
    frontmatter = "\n" + "".join(lines[1:end])
    try:
        document = parse_yaml(frontmatter)
    except YamlError as exc:
        _fail(source, ErrorCode.DOC_SPEC_YAML, f"frontmatter: {exc.message}", None)
    if not isinstance(document.data, dict):
        _fail(source, ErrorCode.DOC_SPEC_INVALID, "the frontmatter must be a YAML mapping", 2)
    try:
        header = DocSpecFrontmatter.model_validate(document.data)
    except ValidationError as exc:
        problems = [_problem(source, document, error) for error in exc.errors()]
        raise DocSpecInvalidError(
            "\n".join(str(problem) for problem in problems),
            problems,
            code=ErrorCode.DOC_SPEC_INVALID,
        ) from None
    body = "".join(lines[end + 1 :]).strip("\n")
    return DocSpec.model_validate(
        {**header.model_dump(), "example_document": body, "source": source}
    )


def render_doc_spec_for_instructions(spec: DocSpec) -> str:
    """The markdown section injected into a step's instructions for an output with this spec."""
    parts = [f"## Document specification: {spec.name}", "", spec.description.strip(), ""]
    if spec.target_audience:
        parts.append(f"**Target audience:** {spec.target_audience.strip()}")
    if spec.frequency:
        parts.append(f"**Frequency:** {spec.frequency.strip()}")
    if spec.path_patterns:
        parts.append("**Where these documents live:** " + ", ".join(spec.path_patterns))
    if spec.target_audience or spec.frequency or spec.path_patterns:
        parts.append("")
    parts.append("### Quality criteria (the review checks each one)")
    parts.append("")
    parts.extend(
        f"{number}. **{criterion.name}**: {criterion.description.strip()}"
        for number, criterion in enumerate(spec.quality_criteria, start=1)
    )
    if spec.example_document.strip():
        fence = _fence_for(spec.example_document)
        parts.extend(
            ["", "### Example document", "", f"{fence}markdown", spec.example_document, fence]
        )
    return "\n".join(parts) + "\n"


def _fence_for(text: str) -> str:
    """A backtick fence longer than any backtick run inside `text`."""
    longest = run = 0
    for char in text:
        run = run + 1 if char == "`" else 0
        longest = max(longest, run)
    return "`" * max(3, longest + 1)


def _problem(source: Path, document: YamlDocument, error: Any) -> Problem:
    location: tuple[str | int, ...] = tuple(error["loc"])
    dotted = ".".join(str(part) for part in location) or "frontmatter"
    kind = error["type"]
    if kind == "extra_forbidden":
        allowed = ", ".join(DocSpecFrontmatter.model_fields)
        return Problem(
            ErrorCode.DOC_SPEC_UNKNOWN_KEY,
            f"unknown frontmatter key {dotted!r} (allowed: {allowed})",
            source,
            document.line_of(location),
            key=dotted,
        )
    if kind == "missing":
        return Problem(
            ErrorCode.DOC_SPEC_MISSING_KEY,
            f"required key {dotted!r} is missing",
            source,
            document.line_of(location[:-1]) if len(location) > 1 else 2,
            key=dotted,
        )
    return Problem(
        ErrorCode.DOC_SPEC_INVALID_VALUE,
        f"{dotted}: {error['msg']}",
        source,
        document.line_of(location),
        key=dotted,
    )


def _fail(source: Path, code: ErrorCode, message: str, line: int | None) -> NoReturn:
    problem = Problem(code, message, source, line)
    raise DocSpecInvalidError(str(problem), [problem], code=code)


__all__ = [
    "DocSpec",
    "DocSpecCriterion",
    "DocSpecFrontmatter",
    "DocSpecInvalidError",
    "load_doc_spec",
    "parse_doc_spec",
    "render_doc_spec_for_instructions",
]
