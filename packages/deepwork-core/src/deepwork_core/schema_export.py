"""The shipped JSON Schema of `job.yml`, generated from the pydantic models.

Regenerate after changing `deepwork_core.models`:

    uv run python -m deepwork_core.schema_export          # rewrite the shipped file
    uv run python -m deepwork_core.schema_export --check  # exit 1 when it is out of date
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from deepwork_core.models import job_json_schema

JOB_SCHEMA_PATH = Path(__file__).resolve().parent / "schemas" / "job.schema.json"
REGENERATE_COMMAND = "uv run python -m deepwork_core.schema_export"


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
        print("usage: python -m deepwork_core.schema_export [--check]", file=sys.stderr)
        return 2
    JOB_SCHEMA_PATH.write_text(text, encoding="utf-8")
    print(f"wrote {JOB_SCHEMA_PATH}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
