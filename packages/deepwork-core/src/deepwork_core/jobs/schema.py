"""The shipped JSON Schema of `job.yml`, generated from the pydantic models.

The schema accepts either format (`oneOf`): a job in the 0.9 format (`JobFileV09`, narrowed
by `deepwork_core.jobs.formats.v09`) or in the 0.10 format
(`deepwork_core.jobs.formats.v010_model`). The two are told apart by shape: only the 0.10 format
has `step_arguments` and a mapping of workflows.
Regenerate after changing any of those modules:

    uv run python -m deepwork_core.jobs.schema          # rewrite the shipped file
    uv run python -m deepwork_core.jobs.schema --check  # exit 1 when it is out of date
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from pydantic.json_schema import models_json_schema

from deepwork_core.jobs.formats.v010_model import JobFileV010
from deepwork_core.jobs.formats.v09 import JobFileV09, schema_v09

JOB_SCHEMA_PATH = Path(__file__).resolve().parent / "schemas" / "job.schema.json"
REGENERATE_COMMAND = "uv run python -m deepwork_core.jobs.schema"


def job_json_schema() -> dict[str, Any]:
    """The JSON Schema of `job.yml` (both formats), generated from the models."""
    _, combined = models_json_schema(
        [(JobFileV09, "validation"), (JobFileV010, "validation")],
        ref_template="#/$defs/{model}",
    )
    definitions: dict[str, Any] = combined["$defs"]
    schema_v09(definitions)
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": "https://deepwork.dev/schemas/job.schema.json",
        "title": "DeepWork job definition (job.yml), in the 0.9 or the 0.10 format",
        "oneOf": [
            {"$ref": f"#/$defs/{JobFileV09.__name__}"},
            {"$ref": f"#/$defs/{JobFileV010.__name__}"},
        ],
        "$defs": definitions,
    }


def render_job_schema() -> str:
    """The schema file's exact text: sorted keys, two-space indent, trailing newline."""
    return json.dumps(job_json_schema(), indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    text = render_job_schema()
    if args == ["--check"]:
        current = JOB_SCHEMA_PATH.read_text(encoding="utf-8") if JOB_SCHEMA_PATH.exists() else ""
        if current != text:
            print(f"{JOB_SCHEMA_PATH} is out of date; run: {REGENERATE_COMMAND}", file=sys.stderr)
            return 1
        return 0
    if args:
        print("usage: python -m deepwork_core.jobs.schema [--check]", file=sys.stderr)
        return 2
    JOB_SCHEMA_PATH.write_text(text, encoding="utf-8")
    print(f"wrote {JOB_SCHEMA_PATH}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
