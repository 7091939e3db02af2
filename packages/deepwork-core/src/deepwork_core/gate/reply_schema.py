"""The JSON Schema of a reviewer's structured reply (docs/quality-gate.md).

`deepwork_core.gate.quality.review_reply_schema` hands it out; the reviewer gets it as
`--json-schema`. A criterion's `feedback` may be null or, on a passed criterion, left out: both
read as empty feedback.
"""

from __future__ import annotations

from typing import Any


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
