"""action.yml, the Action of `deepwork verify` (docs/verify.md, "Where to run it"): its step's
script, run by bash with the environment GitHub gives it and a `uvx` double on PATH, builds the
command the docs describe from the inputs `base`, `rereview`, `runner` and `verdict_cache`,
and fails the step exactly when verify fails. Inputs reach the script only through `env:`,
never as `${{ }}`. The re-review workflow of docs/verify.md uses only the Action's inputs and
keeps the verdict cache it passes between runs with actions/cache."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
ACTION = ROOT / "action.yml"

UVX = """#!/bin/sh
printf '%s\\n' "$@" > "$UVX_ARGS"
exit "${UVX_EXIT:-0}"
"""


def _action() -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load(ACTION.read_text())
    return loaded


def _verify_step() -> dict[str, Any]:
    (step,) = [s for s in _action()["runs"]["steps"] if "run" in s]
    return step


def _run(tmp_path: Path, inputs: dict[str, str], pr_base: str = "", status: int = 0) -> Any:
    """The step's script with `inputs` (the rest at their defaults); the argv uvx got."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    (bin_dir / "uvx").write_text(UVX)
    (bin_dir / "uvx").chmod(0o755)
    defaults = {name: str(spec.get("default", "")) for name, spec in _action()["inputs"].items()}
    given = {**defaults, **inputs}
    step = _verify_step()
    env = {
        "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}",
        "GITHUB_ACTION_PATH": "/actions/deepwork",
        "UVX_ARGS": str(tmp_path / "args"),
        "UVX_EXIT": str(status),
    }
    for name, value in step["env"].items():
        if value == "${{ github.base_ref }}":
            env[name] = pr_base
        else:
            (input_name,) = [i for i in given if value == f"${{{{ inputs.{i} }}}}"]
            env[name] = given[input_name]
    done = subprocess.run(
        [step["shell"], "-c", step["run"]], env=env, capture_output=True, text=True, check=False
    )
    argv = (tmp_path / "args").read_text().splitlines() if (tmp_path / "args").exists() else []
    return done.returncode, argv


def test_the_inputs_reach_the_script_only_through_env() -> None:
    step = _verify_step()
    assert "${{" not in step["run"]
    assert set(_action()["inputs"]) == {"base", "rereview", "runner", "verdict_cache"}
    assert step["shell"] == "bash"


@pytest.mark.parametrize(
    ("inputs", "pr_base", "expected"),
    [
        ({}, "main", ["--base", "origin/main"]),
        ({}, "", []),
        ({"base": "origin/release"}, "main", ["--base", "origin/release"]),
        (
            {"rereview": "true"},
            "main",
            ["--base", "origin/main", "--rereview", "--runner", "claude"],
        ),
        ({"rereview": "true", "runner": "codex"}, "", ["--rereview", "--runner", "codex"]),
        ({"runner": "codex"}, "", []),
        (
            {"rereview": "true", "verdict_cache": ".deepwork-ci/verdicts"},
            "",
            ["--rereview", "--runner", "claude", "--verdict-cache", ".deepwork-ci/verdicts"],
        ),
        ({"verdict_cache": "v"}, "", []),
    ],
    ids=[
        "pr base",
        "no pr",
        "base given",
        "rereview",
        "rereview codex",
        "runner alone",
        "rereview cache",
        "cache alone",
    ],
)
def test_the_script_runs_verify_as_the_docs_say(
    tmp_path: Path, inputs: dict[str, str], pr_base: str, expected: list[str]
) -> None:
    status, argv = _run(tmp_path, inputs, pr_base)
    assert status == 0
    assert argv == [
        "--from",
        "/actions/deepwork",
        "deepwork",
        "verify",
        "--format",
        "github",
        *expected,
    ]


@pytest.mark.parametrize("verdict", [1, 2])
def test_the_step_fails_when_verify_fails(tmp_path: Path, verdict: int) -> None:
    status, argv = _run(tmp_path, {}, "main", status=verdict)
    assert status == verdict
    assert argv[:3] == ["--from", "/actions/deepwork", "deepwork"]


def _documented_workflows() -> list[dict[str, Any]]:
    """The complete workflow files of docs/verify.md ("Where to run it")."""
    text = (ROOT / "docs/verify.md").read_text()
    blocks = re.findall(r"```yaml\n(.*?)```", text, flags=re.DOTALL)
    loaded = [yaml.safe_load(block) for block in blocks]
    return [w for w in loaded if isinstance(w, dict) and "jobs" in w]


def test_the_documented_rereview_workflow_keeps_the_verdict_cache_between_runs() -> None:
    (workflow,) = [
        w
        for w in _documented_workflows()
        if any("rereview" in s.get("with", {}) for s in w["jobs"]["verify"]["steps"])
    ]
    steps = workflow["jobs"]["verify"]["steps"]
    (cache,) = [s for s in steps if str(s.get("uses", "")).startswith("actions/cache@")]
    (verify,) = [s for s in steps if "rereview" in s.get("with", {})]
    assert set(verify["with"]) <= set(_action()["inputs"])
    assert verify["with"]["rereview"] == "true"
    assert verify["with"]["verdict_cache"] == cache["with"]["path"]
    assert not cache["with"]["path"].startswith(".")  # outside the checkout
    assert steps.index(cache) < steps.index(verify)
    assert "DEEPWORK_CI_KEY" in verify["env"]
