"""The shipped JSON Schema of job.yml is generated from the models and agrees with the parser."""

from __future__ import annotations

import json
from typing import Any

import jsonschema
import pytest
import yaml
from deepwork_core.jobs.schema import (
    JOB_SCHEMA_PATH,
    REGENERATE_COMMAND,
    job_json_schema,
    main,
    render_job_schema,
)

from tests.fixtures.corpus import corpus_root
from tests.fixtures.jobdata import SEMANTIC_CASES, SHAPE_CASES, valid_job
from tests.unit.core.jobs.test_parser import INVALID, INVALID_CASES, VALID_CASES


@pytest.fixture(scope="module")
def validator() -> jsonschema.Draft202012Validator:
    schema = json.loads(JOB_SCHEMA_PATH.read_text(encoding="utf-8"))
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


def test_shipped_schema_matches_the_models() -> None:
    assert JOB_SCHEMA_PATH.read_text(encoding="utf-8") == render_job_schema(), (
        f"{JOB_SCHEMA_PATH} drifted from the job model; regenerate it: {REGENERATE_COMMAND}"
    )
    assert json.loads(render_job_schema()) == job_json_schema()


def test_check_mode_of_the_export_command(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--check"]) == 0
    assert main(["--bogus"]) == 2
    assert "usage" in capsys.readouterr().err


def test_schema_declares_draft_2020_12_and_a_stable_id() -> None:
    schema = job_json_schema()
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert schema["$id"].endswith("/job.schema.json")
    branches = [schema["$defs"][ref["$ref"].rsplit("/", 1)[1]] for ref in schema["oneOf"]]
    assert [branch["additionalProperties"] for branch in branches] == [False, False]


@pytest.mark.parametrize(("source", "folder"), VALID_CASES)
def test_schema_accepts_valid_corpus_jobs(
    validator: jsonschema.Draft202012Validator, source: str, folder: str
) -> None:
    data = yaml.safe_load(_job_text(source, folder))
    errors = [error.message for error in validator.iter_errors(data)]
    assert errors == []


@pytest.mark.parametrize(("source", "folder"), INVALID_CASES)
def test_schema_rejects_invalid_corpus_jobs(
    validator: jsonschema.Draft202012Validator, source: str, folder: str
) -> None:
    assert folder in INVALID[source]
    data = yaml.safe_load(_job_text(source, folder))
    assert not validator.is_valid(data)


def _job_text(source: str, folder: str) -> str:
    return (corpus_root(source) / "jobs" / folder / "job.yml").read_text(encoding="utf-8")


def test_schema_accepts_the_base_job(validator: jsonschema.Draft202012Validator) -> None:
    assert list(validator.iter_errors(valid_job())) == []


@pytest.mark.parametrize("data", [pytest.param(c[1], id=c[0]) for c in SHAPE_CASES])
def test_schema_rejects_every_shape_error_the_parser_rejects(
    validator: jsonschema.Draft202012Validator, data: dict[str, Any]
) -> None:
    assert not validator.is_valid(data)


@pytest.mark.parametrize("data", [pytest.param(c[1], id=c[0]) for c in SEMANTIC_CASES])
def test_schema_leaves_cross_references_to_the_parser(
    validator: jsonschema.Draft202012Validator, data: dict[str, Any]
) -> None:
    assert validator.is_valid(data)
