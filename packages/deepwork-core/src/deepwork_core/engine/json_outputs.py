"""Holding a submitted file to its output's `json_schema`, within bounds (docs/limits.md).

The file and the schema may both be hostile, and the check runs while the project's workflow
state is locked, so every part of it is bounded: the file's size (`outputs.json_max_bytes`,
`outputs.json_too_large`), its nesting (`MAX_JSON_DEPTH`, `outputs.json_too_deep`) and the time
the whole check may take (`outputs.json_check_seconds`, `outputs.schema_check_timeout`).
Patterns run on RE2, in time linear in the text (`deepwork_core.jobs.json_schemas`);
`uniqueItems` is checked in linear time; references resolve only inside the schema, and nothing
is ever fetched. A schema that cannot be run this way (which `jobs validate` reports when the job
loads) is `outputs.schema_unusable`. Violations are `outputs.schema_mismatch`.
"""

from __future__ import annotations

import functools
import json
import time
from collections.abc import Callable, Hashable, Iterable, Iterator, Mapping
from contextvars import ContextVar
from itertools import islice
from pathlib import Path
from typing import Any

from deepwork_core.base.config import OutputsConfig
from deepwork_core.base.error_codes import ErrorCode
from deepwork_core.base.errors import FileReadError
from deepwork_core.base.fsutil import read_bytes_file
from deepwork_core.jobs.json_schemas import UnsupportedPatternError, compile_pattern

#: How deeply a JSON output may nest arrays and objects.
MAX_JSON_DEPTH = 100
#: Violations collected before the rest are only counted as "more"; those shown in the error.
MAX_COLLECTED = 1000
SHOWN = 5
#: The longest excerpt of a violation's message (which may quote a large value).
MAX_MESSAGE_CHARS = 300

#: The monotonic time the running check must end by (None: unbounded), per thread.
_DEADLINE: ContextVar[float | None] = ContextVar("json_check_deadline", default=None)

Keyword = Callable[[Any, Any, Any, Any], Iterable[Any] | None]


class _CheckTimeout(Exception):
    """The check ran past its deadline."""


def json_output_problem(
    path: Path, schema: Mapping[str, Any], limits: OutputsConfig
) -> tuple[ErrorCode, str] | None:
    """(code, reason) when the file at `path` does not satisfy `schema`, else None."""
    try:
        text = read_bytes_file(path, limit=limits.json_max_bytes).decode("utf-8")
        document = json.loads(text)
    except FileReadError as exc:
        if exc.code == ErrorCode.FILE_TOO_LARGE:
            return ErrorCode.OUTPUTS_JSON_TOO_LARGE, _too_large(path, limits.json_max_bytes)
        return ErrorCode.OUTPUTS_SCHEMA_MISMATCH, f"is not valid JSON ({exc.message})"
    except RecursionError:
        return ErrorCode.OUTPUTS_JSON_TOO_DEEP, _too_deep()
    except (UnicodeDecodeError, ValueError) as exc:
        return ErrorCode.OUTPUTS_SCHEMA_MISMATCH, f"is not valid JSON ({exc})"
    if _deeper_than(document, MAX_JSON_DEPTH):
        return ErrorCode.OUTPUTS_JSON_TOO_DEEP, _too_deep()
    return _violations(document, schema, limits.json_check_seconds)


def _violations(
    document: object, schema: Mapping[str, Any], seconds: float
) -> tuple[ErrorCode, str] | None:
    import jsonschema
    import referencing
    from referencing.exceptions import Unresolvable

    validator = _bounded_class(jsonschema.validators.validator_for(schema))(
        schema,
        registry=referencing.Registry(),  # retrieves nothing: no `$ref` is fetched
    )
    token = _DEADLINE.set(time.monotonic() + seconds)
    try:
        errors = list(islice(validator.iter_errors(document), MAX_COLLECTED + 1))
    except _CheckTimeout:
        return ErrorCode.OUTPUTS_SCHEMA_CHECK_TIMEOUT, (
            f"checking it against the output's json_schema took longer than {seconds:g} s "
            "(`outputs.json_check_seconds`); simplify the schema or split the file"
        )
    except Unresolvable as exc:
        return ErrorCode.OUTPUTS_SCHEMA_UNUSABLE, (
            f"the output's json_schema refers to {str(exc.ref)[:200]!r}, which is not part of "
            "it; run `deepwork jobs validate`"
        )
    except UnsupportedPatternError as exc:
        return ErrorCode.OUTPUTS_SCHEMA_UNUSABLE, (
            f"the output's json_schema has a pattern RE2 cannot run ({exc}); "
            "run `deepwork jobs validate`"
        )
    except RecursionError:
        return ErrorCode.OUTPUTS_SCHEMA_UNUSABLE, (
            "the output's json_schema refers to itself without end; run `deepwork jobs validate`"
        )
    finally:
        _DEADLINE.reset(token)
    return None if not errors else (ErrorCode.OUTPUTS_SCHEMA_MISMATCH, _describe(errors))


def _describe(errors: list[Any]) -> str:
    errors.sort(key=lambda error: [str(part) for part in error.absolute_path])
    shown = "; ".join(
        f"at {'/'.join(str(p) for p in error.absolute_path) or '(root)'}: {_clip(error.message)}"
        for error in errors[:SHOWN]
    )
    if len(errors) > MAX_COLLECTED:
        more = f" (and more than {MAX_COLLECTED - SHOWN} more)"
    else:
        more = f" (and {len(errors) - SHOWN} more)" if len(errors) > SHOWN else ""
    return f"does not match the output's json_schema: {shown}{more}"


def _too_large(path: Path, limit: int) -> str:
    try:
        size = f"{path.stat().st_size:,} bytes"
    except OSError:
        size = "too large"
    return (
        f"is {size}; a file checked against a json_schema may have at most {limit:,} bytes "
        "(`outputs.json_max_bytes` in .deepwork/config.yml)"
    )


def _too_deep() -> str:
    return f"nests arrays and objects more than {MAX_JSON_DEPTH} levels deep"


def _deeper_than(document: object, limit: int) -> bool:
    """Whether `document` nests containers more than `limit` deep (without recursion)."""
    stack: list[tuple[object, int]] = [(document, 1)]
    while stack:
        value, depth = stack.pop()
        if isinstance(value, dict):
            children: Iterable[object] = value.values()
        elif isinstance(value, list):
            children = value
        else:
            continue
        if depth > limit:
            return True
        stack.extend((child, depth + 1) for child in children)
    return False


def _clip(text: str) -> str:
    return text if len(text) <= MAX_MESSAGE_CHARS else text[:MAX_MESSAGE_CHARS] + "…"


@functools.cache
def _bounded_class(base: Any) -> Any:
    """`base` (a jsonschema validator class) with linear-time keywords and the deadline."""
    import jsonschema

    keywords: dict[str, Keyword] = dict(base.VALIDATORS)
    keywords.update(pattern=_pattern, patternProperties=_pattern_properties)
    keywords.update(uniqueItems=_unique_items)
    bounded = {name: _with_deadline(keyword) for name, keyword in keywords.items()}
    return jsonschema.validators.extend(base, bounded)  # type: ignore[no-untyped-call]


def _with_deadline(keyword: Keyword) -> Keyword:
    def run(validator: Any, value: Any, instance: Any, schema: Any) -> Iterable[Any] | None:
        deadline = _DEADLINE.get()
        if deadline is not None and time.monotonic() > deadline:
            raise _CheckTimeout
        return keyword(validator, value, instance, schema)

    return run


def _search(pattern: str, text: str) -> bool:
    compiled = compile_pattern(pattern)
    try:
        return compiled.search(text) is not None
    except UnicodeEncodeError:  # a lone surrogate, which JSON allows: match its bytes
        return compiled.search(text.encode("utf-8", "surrogatepass")) is not None


def _pattern(validator: Any, pattern: str, instance: Any, schema: Any) -> Iterator[Any]:
    from jsonschema.exceptions import ValidationError

    if validator.is_type(instance, "string") and not _search(pattern, instance):
        yield ValidationError(f"{_clip(repr(instance))} does not match {pattern!r}")


def _pattern_properties(
    validator: Any, patterns: Mapping[str, Any], instance: Any, schema: Any
) -> Iterator[Any]:
    if not validator.is_type(instance, "object"):
        return
    for pattern, subschema in patterns.items():
        for key, value in instance.items():
            if _search(pattern, key):
                yield from validator.descend(value, subschema, path=key, schema_path=pattern)


def _unique_items(validator: Any, unique: bool, instance: Any, schema: Any) -> Iterator[Any]:
    from jsonschema.exceptions import ValidationError

    if not unique or not validator.is_type(instance, "array"):
        return
    seen: set[Hashable] = set()
    for item in instance:
        key = _identity(item)
        if key in seen:
            yield ValidationError(f"{_clip(repr(instance))} has non-unique elements")
            return
        seen.add(key)


def _identity(value: object) -> Hashable:
    """A key equal for JSON values JSON Schema calls equal (1 == 1.0, but true != 1)."""
    if isinstance(value, bool) or value is None:
        return ("literal", value)
    if isinstance(value, int | float):
        return ("number", value)
    if isinstance(value, list):
        return ("array", tuple(_identity(item) for item in value))
    if isinstance(value, dict):
        return ("object", frozenset((key, _identity(item)) for key, item in value.items()))
    return ("string", value)
