"""The JSON Schema of a reviewer's structured reply (docs/quality-gate.md).

`deepwork_core.gate.quality.review_reply_schema` hands it out; the reviewer gets it as
`--json-schema`. A criterion's `feedback` may be null or, on a passed criterion, left out: both
read as empty feedback. `reply_error` checks a reply against it with one validator built once
(the schema is ours and fixed, so it is not checked against the meta-schema at each reply).
"""

from __future__ import annotations

from functools import cache
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from jsonschema.exceptions import ValidationError
    from jsonschema.protocols import Validator


def reviewer_reply_schema() -> dict[str, Any]:
    """A fresh copy of the schema (callers may change it)."""
    return {
        "type": "object",
        "additionalProperties": False,
        "required": ["passed", "feedback", "criteria_results"],
        "properties": {
            "passed": {"type": "boolean"},
            "feedback": {"type": "string"},
            "criteria_results": {
                "type": "array",
                "items": {
                    "type": "object",
                    "additionalProperties": False,
                    "required": ["criterion", "passed"],
                    "properties": {
                        "criterion": {"type": "string"},
                        "passed": {"type": "boolean"},
                        "feedback": {"anyOf": [{"type": "string"}, {"type": "null"}]},
                    },
                },
            },
        },
    }


@cache
def _validator() -> Validator:
    # Imported here: jsonschema (with referencing, rpds and attrs) adds 3 MiB to a server that
    # may never run an external review (benchmarks/, peak memory).
    from jsonschema.validators import validator_for

    schema = reviewer_reply_schema()
    validator: Validator = validator_for(schema)(schema)
    return validator


def reply_error(reply: Any) -> ValidationError | None:
    """The most relevant way `reply` breaks the schema (as `jsonschema.validate` would raise
    it), or None when it fits."""
    from jsonschema.exceptions import best_match

    error: ValidationError | None = best_match(_validator().iter_errors(reply))
    return error
