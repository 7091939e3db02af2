"""Generated `json_schema`s and outputs: whatever a job file and an agent send, the check ends.

Schemas are built from the features an output's `json_schema` may use (patterns, catastrophic
ones among them, references local, remote, looping or missing, formats, `uniqueItems`, nesting)
and documents from JSON values (long strings, lone surrogates, deep nesting, large files). The
load-time check must return findings, never raise; a schema it accepts must check any document
to a pass or a coded `outputs.*` error. The example counts keep the module near half a minute.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from deepwork_core.base.config import OutputsConfig
from deepwork_core.base.errors import DeepWorkError
from deepwork_core.engine.outputs import validate_outputs
from deepwork_core.jobs.json_schemas import json_schema_findings
from deepwork_core.jobs.model import Step
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pytestmark = pytest.mark.slow

_SETTINGS = settings(
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
    derandomize=True,
    database=None,
    max_examples=150,
)
#: Small bounds, so that the large and slow cases are reached quickly.
LIMITS = OutputsConfig(json_max_bytes=64 * 1024, json_check_seconds=2)
CODES = {
    "outputs.schema_mismatch",
    "outputs.json_too_large",
    "outputs.json_too_deep",
    "outputs.schema_check_timeout",
    "outputs.schema_unusable",
}

_PATTERNS = st.one_of(
    st.sampled_from(
        [
            "^(a+)+$",
            "(a|aa)*b",
            "^(\\w+\\s?)*$",
            "(.*a){20}",
            "\\u0041",
            "\\u{1F600}",
            "(a)\\1",
            "(?=a)",
            "^[a-z]+$",
            "\\\\u",
            "[",
        ]
    ),
    st.text(alphabet="ab()*+?|[]^$.\\{}0-9,", max_size=12),
)
_REFS = st.sampled_from(
    [
        "#",
        "#/$defs/node",
        "#/$defs/missing",
        "#leaf",
        "http://127.0.0.1:9/x.json",
        "other.json",
        "file:///etc/passwd",
        "https://json-schema.org/draft/2020-12/schema",
    ]
)
_LEAVES = st.one_of(
    st.fixed_dictionaries({"pattern": _PATTERNS}),
    st.fixed_dictionaries({"$ref": _REFS}),
    st.fixed_dictionaries({"format": st.sampled_from(["email", "date-time", "regex", "uri"])}),
    st.fixed_dictionaries({"uniqueItems": st.booleans()}),
    st.fixed_dictionaries({"type": st.sampled_from(["string", "array", "object", "integer"])}),
    st.booleans(),
)


def _extend(children: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.one_of(
        st.fixed_dictionaries({"items": children}),
        st.fixed_dictionaries({"properties": st.dictionaries(st.sampled_from("abc"), children)}),
        st.fixed_dictionaries({"patternProperties": st.dictionaries(_PATTERNS, children)}),
        st.fixed_dictionaries({"anyOf": st.lists(children, min_size=1, max_size=3)}),
        st.fixed_dictionaries({"not": children}),
        st.fixed_dictionaries({"allOf": st.lists(children, min_size=1, max_size=2)}),
    )


_SCHEMAS = st.recursive(_LEAVES, _extend, max_leaves=8).map(
    lambda body: {
        **(body if isinstance(body, dict) else {"allOf": [body]}),
        "$defs": {"node": {"items": {"$ref": "#"}}, "leaf": {"$anchor": "leaf"}},
    }
)
_JSON = st.recursive(
    st.one_of(
        st.none(),
        st.booleans(),
        st.integers(),
        st.floats(allow_nan=False, allow_infinity=False),
        st.text(max_size=20),
        st.sampled_from(["a" * 40 + "!", "\ud800x", "a" * 5000]),
    ),
    lambda children: st.one_of(
        st.lists(children, max_size=4),
        st.dictionaries(st.sampled_from(["a", "aa", "b", "aaaa!"]), children, max_size=4),
    ),
    max_leaves=20,
)
_RAW = st.one_of(
    _JSON.map(json.dumps),
    st.integers(min_value=1, max_value=3000).map(lambda n: "[" * n + "]" * n),
    st.integers(min_value=1, max_value=200_000).map(lambda n: json.dumps(["ab"] * n)),
    st.sampled_from(["", "{", "\ufeff[]", "NaN", "1" * 5000]),
)


def _step(schema: dict[str, Any]) -> Step:
    output = {"type": "file_path", "description": "d", "required": True, "json_schema": schema}
    return Step.model_validate(
        {
            "id": "s",
            "name": "S",
            "description": "d",
            "instructions_file": "steps/s.md",
            "outputs": {"data": output},
            "reviews": [],
        }
    )


# jsonschema's metaschema check compiles each pattern with Python's `re`, which warns about
# some generated ones ("possible nested set"); a warning is no failure of the check.
@pytest.mark.filterwarnings("ignore::FutureWarning")
@_SETTINGS
@given(schema=_SCHEMAS, raw=_RAW)
def test_any_schema_and_output_end_in_a_result_or_a_coded_error(
    tmp_path: Path, schema: dict[str, Any], raw: str
) -> None:
    findings = json_schema_findings(schema)
    assert all(f.code.startswith("job.") for f in findings)
    (tmp_path / "data.json").write_text(raw, encoding="utf-8", errors="surrogatepass")
    code = _outcome(tmp_path, schema)
    assert code is None or code in CODES, code
    if code == "outputs.schema_unusable":
        assert findings, "the load-time check let through a schema the runtime refuses"


def _outcome(root: Path, schema: dict[str, Any]) -> str | None:
    """The code `finished_step` would fail with, or None when the output passes."""
    try:
        validate_outputs(root.resolve(), [_step(schema)], {"data": "data.json"}, LIMITS)
    except DeepWorkError as exc:
        return exc.code
    return None
