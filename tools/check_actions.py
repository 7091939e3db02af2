"""Check the files through which users run `deepwork verify` outside DeepWork (docs/verify.md).

    python tools/check_actions.py [ROOT]

`action.yml` against tools/schemas/action.schema.json (a composite Action's metadata), and
`.pre-commit-hooks.yaml` against tools/schemas/pre-commit-hooks.schema.json (pre-commit's hook
keys); both must run `deepwork verify`. actionlint checks the Action's metadata too, through
.github/workflows/verify.yml, which uses it (`nox -s workflows`). Prints one line per file and
exits 1 listing every failure.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import jsonschema
import yaml

HERE = Path(__file__).resolve().parent
CHECKS = (
    ("action.yml", "action.schema.json", "deepwork verify --format github"),
    (".pre-commit-hooks.yaml", "pre-commit-hooks.schema.json", "deepwork verify"),
)


def _commands(name: str, document: Any) -> list[str]:
    """What the file runs: the Action's `run` scripts, or the hooks' `entry` lines."""
    try:
        if name == "action.yml":
            return [str(step.get("run", "")) for step in document["runs"]["steps"]]
        return [str(hook.get("entry", "")) for hook in document]
    except (KeyError, TypeError, AttributeError):
        return []


def _runs(name: str, document: Any, command: str) -> bool:
    if name == ".pre-commit-hooks.yaml":
        return any(entry == command for entry in _commands(name, document))
    # The Action builds the arguments as a bash array, `args=(verify --format github)`, and
    # runs `uvx --from <its checkout> deepwork "${args[@]}"`.
    program, _, args = command.partition(" ")
    return any(
        "uvx --from" in run and f" {program} " in run and f"args=({args})" in run
        for run in _commands(name, document)
    )


def check(root: Path) -> list[str]:
    """The failures of the files under `root`, one line each."""
    failures = []
    for name, schema_name, command in CHECKS:
        schema: dict[str, Any] = json.loads((HERE / "schemas" / schema_name).read_text())
        try:
            text = (root / name).read_text(encoding="utf-8")
            document = yaml.safe_load(text)
        except (OSError, yaml.YAMLError) as exc:
            failures.append(f"{name}: cannot be read: {exc}")
            continue
        validator = jsonschema.Draft202012Validator(schema)
        for error in sorted(validator.iter_errors(document), key=lambda e: list(e.path)):
            where = "/".join(str(part) for part in error.path) or "<top>"
            failures.append(f"{name}: {where}: {error.message}")
        if not _runs(name, document, command):
            failures.append(f"{name}: does not run `{command}`")
    return failures


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("root", nargs="?", type=Path, default=HERE.parent)
    root = parser.parse_args(argv).root
    failures = check(root)
    for name, _, _ in CHECKS:
        if not any(f.startswith(f"{name}:") for f in failures):
            print(f"ok: {name}")
    for failure in failures:
        print(f"FAIL: {failure}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
