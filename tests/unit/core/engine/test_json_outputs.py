"""A `json_schema` output is checked within bounds (issue 22, docs/limits.md).

A hostile schema or file gives a coded error, never a hang, a fetch or an `internal.error`.
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from deepwork_core.base.config import DeepWorkConfig, OutputsConfig
from deepwork_core.base.errors import DeepWorkError
from deepwork_core.engine.json_outputs import MAX_JSON_DEPTH
from deepwork_core.engine.outputs import validate_outputs
from deepwork_core.jobs.model import Step


def _step(schema: dict[str, Any]) -> Step:
    return Step.model_validate(
        {
            "id": "emit",
            "name": "Emit",
            "description": "d",
            "instructions_file": "steps/emit.md",
            "outputs": {
                "data": {
                    "type": "file_path",
                    "description": "JSON data",
                    "required": True,
                    "json_schema": schema,
                }
            },
            "reviews": [],
        }
    )


def _check(
    tmp_path: Path, schema: dict[str, Any], text: str, limits: OutputsConfig | None = None
) -> DeepWorkError | None:
    (tmp_path / "data.json").write_text(text, encoding="utf-8")
    try:
        validate_outputs(tmp_path.resolve(), [_step(schema)], {"data": "data.json"}, limits)
    except DeepWorkError as exc:
        return exc
    return None


def test_a_catastrophic_pattern_is_answered_with_a_mismatch(tmp_path: Path) -> None:
    error = _check(tmp_path, {"pattern": "^(a+)+$"}, json.dumps("a" * 40 + "!"))
    assert error is not None
    assert error.code == "outputs.schema_mismatch"
    assert "does not match '^(a+)+$'" in error.message


def test_catastrophic_patterns_over_many_values_and_keys_finish(tmp_path: Path) -> None:
    schema = {
        "type": "object",
        "patternProperties": {"^(a|aa)+$": {"items": {"pattern": "^(a|a)*$"}}},
    }
    document = {"a" * 30 + str(i): ["a" * 30 + "!"] for i in range(200)}
    document["a" * 60] = ["a" * 60 + "!"]
    error = _check(tmp_path, schema, json.dumps(document))
    assert error is not None
    assert error.code == "outputs.schema_mismatch"


def test_matching_patterns_still_pass(tmp_path: Path) -> None:
    schema = {"properties": {"id": {"pattern": "^r\\d+$"}, "name": {"pattern": "\\u00e9"}}}
    assert _check(tmp_path, schema, json.dumps({"id": "r12", "name": "café"})) is None


def test_a_lone_surrogate_in_the_document_is_matched_not_a_crash(tmp_path: Path) -> None:
    error = _check(tmp_path, {"items": {"pattern": "^x"}}, '["\\ud800x"]')
    assert error is not None
    assert error.code == "outputs.schema_mismatch"


def test_a_file_over_the_size_limit_is_refused_naming_both_sizes(tmp_path: Path) -> None:
    limits = OutputsConfig(json_max_bytes=1000)
    error = _check(tmp_path, {"type": "array"}, json.dumps(["x" * 2000]), limits)
    assert error is not None
    assert error.code == "outputs.json_too_large"
    assert "2,004 bytes" in error.message
    assert "1,000 bytes" in error.message
    assert "outputs.json_max_bytes" in error.message


def test_the_default_size_limit_is_16_mib() -> None:
    assert DeepWorkConfig().outputs.json_max_bytes == 16 * 1024 * 1024


@pytest.mark.parametrize("depth", [MAX_JSON_DEPTH + 1, 100_000])
def test_deep_nesting_is_a_coded_error(tmp_path: Path, depth: int) -> None:
    error = _check(tmp_path, {"items": {"$ref": "#"}}, "[" * depth + "]" * depth)
    assert error is not None
    assert error.code == "outputs.json_too_deep"


def test_nesting_up_to_the_limit_is_checked(tmp_path: Path) -> None:
    depth = MAX_JSON_DEPTH
    text = "[" * depth + "1" + "]" * depth
    schema = {"anyOf": [{"type": "integer"}, {"type": "array", "items": {"$ref": "#"}}]}
    assert _check(tmp_path, schema, text) is None
    error = _check(tmp_path, schema, text.replace("1", '"x"'))
    assert error is not None
    assert error.code == "outputs.schema_mismatch"


def test_a_check_past_its_time_limit_is_a_coded_error(tmp_path: Path) -> None:
    limits = OutputsConfig(json_check_seconds=1e-9)
    error = _check(tmp_path, {"items": {"type": "integer"}}, json.dumps(list(range(1000))), limits)
    assert error is not None
    assert error.code == "outputs.schema_check_timeout"
    assert "outputs.json_check_seconds" in error.message


def test_a_self_reference_is_a_coded_error_not_an_internal_one(tmp_path: Path) -> None:
    error = _check(tmp_path, {"$ref": "#"}, "1")
    assert error is not None
    assert error.code == "outputs.schema_unusable"


def test_a_remote_reference_is_never_fetched(tmp_path: Path) -> None:
    hits: list[str] = []

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            hits.append(self.path)
            body = b'{"type": "integer"}'
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/x.json"
        error = _check(tmp_path, {"$ref": url}, "1")
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
    assert hits == []
    assert error is not None
    assert error.code == "outputs.schema_unusable"
    assert "x.json" in error.message


@pytest.mark.parametrize(
    ("items", "unique"),
    [
        ([1, 1.0], False),
        ([True, 1], True),
        ([{"a": [1, 2]}, {"a": [1, 2]}], False),
        ([{"a": 1, "b": 2}, {"b": 2, "a": 1}], False),
        ([[1, 2], [2, 1]], True),
        ([None, False, 0, ""], True),
    ],
)
def test_unique_items_follows_json_equality(tmp_path: Path, items: list[Any], unique: bool) -> None:
    error = _check(tmp_path, {"uniqueItems": True}, json.dumps(items))
    assert (error is None) is unique


def test_unique_items_over_a_long_array_finishes(tmp_path: Path) -> None:
    items = [[i, str(i)] for i in range(100_000)] + [[7, "7"]]
    error = _check(tmp_path, {"uniqueItems": True}, json.dumps(items))
    assert error is not None
    assert error.code == "outputs.schema_mismatch"
    assert len(error.message) < 1000


def test_many_violations_are_counted_up_to_a_bound(tmp_path: Path) -> None:
    error = _check(tmp_path, {"items": {"type": "string"}}, json.dumps(list(range(5000))))
    assert error is not None
    assert "(and more than 995 more)" in error.message
    error = _check(tmp_path, {"items": {"type": "string"}}, json.dumps(list(range(8))))
    assert error is not None
    assert "(and 3 more)" in error.message
