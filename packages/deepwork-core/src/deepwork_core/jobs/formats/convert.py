"""Converting a job between the 0.9 and the 0.10 format (docs/job-format.md).

`convert_job()` builds the other format's `job.yml` text (and, for the 0.9 format, the instruction
files inline instructions move into) and checks that the result parses to a valid job.
`write_conversion()` writes it next to the job (`job.converted-<format>.yml`) or in place, after
keeping the original as `job.yml.<format>.bak`. Codes: `convert.same_format`,
`convert.invalid_source`, `convert.invalid_result`, `convert.file_exists`.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from deepwork_core.base.error_codes import ErrorCode
from deepwork_core.base.errors import DeepWorkError
from deepwork_core.base.fsutil import atomic_write_text
from deepwork_core.base.layout import JOB_FILE
from deepwork_core.base.yamlio import parse_yaml, read_limited
from deepwork_core.jobs.formats import v09
from deepwork_core.jobs.formats.to_v010 import to_v010
from deepwork_core.jobs.formats.to_v09 import to_v09
from deepwork_core.jobs.parser import JobFormat, ParsedJob, parse_job_source, summarize

SCHEMA_COMMENT = "# yaml-language-server: $schema=.deepwork/schemas/job.schema.json\n"


class ConversionError(DeepWorkError):
    """A job cannot be converted (or the converted job would not be valid)."""

    code = ErrorCode.CONVERT_INVALID_SOURCE


@dataclass(frozen=True)
class Conversion:
    """The converted job: its `job.yml` text, new job-relative files, and what was lost."""

    target: JobFormat
    job_yml: str
    files: dict[str, str]
    warnings: list[str]


def convert_job(parsed: ParsedJob, target: JobFormat) -> Conversion:
    """Convert a valid job to `target`; raises `ConversionError` with a stable code."""
    if parsed.definition is None:
        raise ConversionError(
            f"{parsed.job_file} is not a valid job: {summarize(parsed.errors)}",
            code=ErrorCode.CONVERT_INVALID_SOURCE,
        )
    if parsed.format == target:
        raise ConversionError(
            f"{parsed.job_file} is already in the {target} format",
            code=ErrorCode.CONVERT_SAME_FORMAT,
        )
    files: dict[str, str] = {}
    if target == "0.10":
        data, warnings = to_v010(parsed.definition)
        warnings.extend(v09.legacy_notes(_source_data(parsed.job_file)))
    else:
        existing = {
            path.relative_to(parsed.job_dir).as_posix()
            for path in parsed.job_dir.rglob("*")
            if path.is_file()
        }
        data, files, warnings = to_v09(parsed.definition, existing)
    text = SCHEMA_COMMENT + render_yaml(data)
    result = parse_job_source(text, job_dir=parsed.job_dir)
    if result.definition is None:
        raise ConversionError(
            f"the converted job would not be valid: {summarize(result.errors)}",
            code=ErrorCode.CONVERT_INVALID_RESULT,
        )
    return Conversion(target, text, files, warnings)


def _source_data(job_file: Path) -> Any:
    """The parsed content of the job.yml being converted (None if it no longer reads)."""
    try:
        return parse_yaml(read_limited(job_file)).data
    except DeepWorkError:
        return None


def write_conversion(job_dir: Path, conversion: Conversion, *, in_place: bool) -> list[Path]:
    """Write the converted job; returns every path written. Never overwrites a file."""
    suffix = conversion.target
    target = job_dir / (JOB_FILE if in_place else f"job.converted-{suffix}.yml")
    backup = job_dir / f"{JOB_FILE}.{'0.9' if suffix == '0.10' else '0.10'}.bak"
    planned = [job_dir / relative for relative in conversion.files]
    planned.append(backup if in_place else target)
    taken = [path for path in planned if path.exists()]
    if taken:
        raise ConversionError(
            f"{', '.join(str(p) for p in taken)} already exist(s); move it away first",
            code=ErrorCode.CONVERT_FILE_EXISTS,
        )
    written: list[Path] = []
    for relative, text in conversion.files.items():
        path = job_dir / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_text(path, text)
        written.append(path)
    if in_place:
        atomic_write_text(backup, (job_dir / JOB_FILE).read_text(encoding="utf-8"))
        written.append(backup)
    atomic_write_text(target, conversion.job_yml)
    written.append(target)
    return written


class _Dumper(yaml.SafeDumper):
    """Block style; multi-line text as literal blocks (`|`), as people write job.yml."""


def _represent_text(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    style = "|" if "\n" in value and not any(c in value for c in "\t\r") else None
    if style == "|" and any(line != line.rstrip(" ") for line in value.splitlines()):
        style = None  # trailing spaces cannot be kept in a literal block
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_Dumper.add_representer(str, _represent_text)


def render_yaml(data: Any) -> str:
    """`data` as block-style YAML in the given key order."""
    return yaml.dump(data, Dumper=_Dumper, sort_keys=False, allow_unicode=True, width=100, indent=2)
