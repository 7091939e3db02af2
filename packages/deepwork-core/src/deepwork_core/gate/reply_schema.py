"""The JSON Schema of a reviewer's structured reply (docs/quality-gate.md).

`deepwork_core.gate.quality.review_reply_schema` hands it out; the reviewer gets it as
`--json-schema`. A criterion's `feedback` may be null or, on a passed criterion, left out: both
read as empty feedback. `reply_error` checks a reply against it with one validator built once
(the schema is ours and fixed, so it is not checked against the meta-schema at each reply).
`answered_criterion` says which criterion of the task an entry of the reply answers.
"""

from __future__ import annotations

from collections.abc import Collection
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


def answered_criterion(criteria: Collection[str], name: object) -> str | None:
    """The criterion of `criteria` that a reply's entry named `name` answers, or None.

    The one written so; else the only one that reads the same but for case, spacing, Markdown
    bold and a closing colon; else the only doc-spec criterion (`<spec name>: <criterion>`)
    whose own name it gives without the spec's. A reviewer that reads the spec answers by the
    spec's names, and an entry counted as no answer would have the same brief asked (and paid
    for) once more.
    """
    if not isinstance(name, str):
        return None
    if name in criteria:
        return name
    plain = _plain(name)
    same = [criterion for criterion in criteria if _plain(criterion) == plain]
    if not same:
        same = [criterion for criterion in criteria if _plain(criterion).endswith(f": {plain}")]
    return same[0] if len(same) == 1 else None


def _plain(name: str) -> str:
    return " ".join(name.replace("**", "").strip().rstrip(":").split()).casefold()
