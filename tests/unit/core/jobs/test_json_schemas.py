"""A job's `json_schema` is refused at load when it could stall or steer the server.

Issue 22: remote `$ref`s, reference loops and patterns RE2 cannot run are coded findings with the
line of the keyword (docs/job-format.md#json-schema-outputs).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from deepwork_core.jobs.json_schemas import (
    UnsupportedPatternError,
    compile_pattern,
    json_schema_findings,
)
from deepwork_core.jobs.parser import parse_job_dir

from tests.fixtures.jobdata import changed, write_job

FIXTURE = Path(__file__).resolve().parents[3] / "fixtures" / "jobs_v010" / "release_digest"
SCHEMA_AT = ("step_arguments", 1, "json_schema")


def _codes(schema: dict[str, Any]) -> list[tuple[str, tuple[str | int, ...]]]:
    return [(f.code, f.where) for f in json_schema_findings(schema)]


@pytest.mark.parametrize(
    "schema",
    [
        {"type": "object", "properties": {"child": {"$ref": "#"}}},
        {"$defs": {"a": {"type": "string"}}, "items": {"$ref": "#/$defs/a"}},
        {"$defs": {"a": {"$anchor": "leaf", "type": "string"}}, "items": {"$ref": "#leaf"}},
        {
            "$id": "https://example.com/r.json",
            "$defs": {"a": {}},
            "not": {"$ref": "/r.json#/$defs/a"},
        },
        {"$schema": "http://json-schema.org/draft-07/schema#", "items": {"$ref": "#"}},
        {"pattern": "^[a-z]+(-[a-z]+)*$", "patternProperties": {"^\\u0041\\d$": {}}},
    ],
)
def test_safe_schemas_pass(schema: dict[str, Any]) -> None:
    assert _codes(schema) == []


@pytest.mark.parametrize(
    ("schema", "expected"),
    [
        ({"$ref": "http://127.0.0.1:9/x.json"}, [("job.json_schema_external_ref", ("$ref",))]),
        (
            {"properties": {"a": {"$ref": "other.json#/x"}}},
            [("job.json_schema_external_ref", ("properties", "a", "$ref"))],
        ),
        ({"$ref": "file:///etc/passwd"}, [("job.json_schema_external_ref", ("$ref",))]),
        (
            {"$dynamicRef": "https://example.com/x"},
            [("job.json_schema_external_ref", ("$dynamicRef",))],
        ),
        ({"$ref": "#/$defs/missing"}, [("job.invalid_json_schema", ("$ref",))]),
    ],
)
def test_references_leaving_the_schema_are_refused(
    schema: dict[str, Any], expected: list[tuple[str, tuple[str | int, ...]]]
) -> None:
    assert _codes(schema) == expected


@pytest.mark.parametrize(
    ("schema", "where"),
    [
        ({"$ref": "#"}, ("$ref",)),
        ({"anyOf": [{"type": "string"}, {"$ref": "#"}]}, ("anyOf", 1, "$ref")),
        (
            {"allOf": [{"$ref": "#/$defs/a"}], "$defs": {"a": {"not": {"$ref": "#"}}}},
            ("$defs", "a", "not", "$ref"),
        ),
        ({"$defs": {"a": {"$ref": "#/$defs/a"}}}, ("$defs", "a", "$ref")),
    ],
)
def test_reference_loops_that_never_descend_are_refused(
    schema: dict[str, Any], where: tuple[str | int, ...]
) -> None:
    assert _codes(schema) == [("job.json_schema_ref_cycle", where)]


@pytest.mark.parametrize("pattern", ["(a)\\1", "(?=a)b", "(?<=a)b", "(?!a)b"])
def test_patterns_re2_cannot_run_are_refused(pattern: str) -> None:
    assert _codes({"pattern": pattern}) == [("job.json_schema_unsupported_pattern", ("pattern",))]
    assert _codes({"patternProperties": {pattern: {}}}) == [
        ("job.json_schema_unsupported_pattern", ("patternProperties", pattern))
    ]


def test_a_catastrophic_pattern_compiles_and_matches_in_linear_time() -> None:
    compiled = compile_pattern("^(a+)+$")
    assert compiled.search("a" * 40 + "!") is None
    assert compiled.search("a" * 100_000) is not None


def test_ecma_unicode_escapes_are_understood() -> None:
    assert compile_pattern("^\\u0041\\u{1F600}$").search("A\U0001f600") is not None
    assert compile_pattern("^\\\\u0041$").search("\\u0041") is not None
    with pytest.raises(UnsupportedPatternError):
        compile_pattern("(a)\\1")


def test_metaschema_errors_keep_their_code() -> None:
    assert _codes({"type": "objekt"}) == [("job.invalid_json_schema", ())]


@pytest.mark.parametrize(
    ("sub_schema", "code", "key"),
    [
        ({"$ref": "http://127.0.0.1:9/x.json"}, "job.json_schema_external_ref", "$ref"),
        ({"$ref": "#/properties/version"}, "job.json_schema_ref_cycle", "$ref"),
        ({"type": "string", "pattern": "(a)\\1"}, "job.json_schema_unsupported_pattern", "pattern"),
    ],
)
def test_the_job_loader_reports_the_file_and_line_of_the_keyword(
    tmp_path: Path, sub_schema: dict[str, Any], code: str, key: str
) -> None:
    data = yaml.safe_load((FIXTURE / "job.yml").read_text(encoding="utf-8"))
    schema = {"type": "object", "properties": {"version": sub_schema}}
    job_dir = write_job(tmp_path, changed(data, SCHEMA_AT, schema))
    parsed = parse_job_dir(job_dir)
    (problem,) = parsed.problems
    assert problem.code == code
    assert problem.key == f"step_arguments[1].json_schema.properties.version.{key}"
    lines = (job_dir / "job.yml").read_text(encoding="utf-8").splitlines()
    assert problem.line is not None
    assert key in lines[problem.line - 1]
    assert parsed.definition is None
