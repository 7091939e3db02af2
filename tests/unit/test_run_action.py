"""run/action.yml, the composite action of `deepwork run` (docs/headless.md): the inputs the
docs name, inputs reaching the shell only through env (no `${{ }}` in a script), outputs that
name the step that writes them, and the exit status of a parked run (3) mapped as documented.
actionlint (`nox -s workflows`) checks .github/workflows/deepwork-run.yml against it."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml
from deepwork_mcp.cli.headless.exits import RunExit
from deepwork_mcp.cli.headless.follow import Outcome
from deepwork_mcp.cli.headless.github import outputs_of

ROOT = Path(__file__).resolve().parents[2]
ACTION = ROOT / "run" / "action.yml"


def _action() -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load(ACTION.read_text())
    return loaded


def test_the_action_takes_the_documented_inputs() -> None:
    action = _action()
    assert action["runs"]["using"] == "composite"
    inputs = set(action["inputs"])
    assert {"job", "workflow", "agent", "goal", "store-url", "resume", "timeout"} <= inputs
    assert action["inputs"]["agent"]["required"] is True
    docs = (ROOT / "docs" / "headless.md").read_text()
    for name in inputs:
        assert f"`{name}`" in docs, f"docs/headless.md does not name input {name}"


def test_inputs_reach_the_script_through_env_only() -> None:
    action = _action()
    used = set()
    for step in action["runs"]["steps"]:
        assert "${{" not in step.get("run", ""), "an expression inside a script can inject code"
        for value in step.get("env", {}).values():
            used |= set(re.findall(r"inputs\.([a-z-]+)", str(value)))
    assert used == set(action["inputs"]), "every input is used, and only declared ones"


def test_the_outputs_are_the_ones_deepwork_run_writes() -> None:
    action = _action()
    ids = {step.get("id") for step in action["runs"]["steps"]}
    written = set(outputs_of(Outcome(RunExit.PARKED, None, "parked")))
    assert set(action["outputs"]) == written
    for name, spec in action["outputs"].items():
        step, output = re.fullmatch(
            r"\$\{\{ steps\.(\w+)\.outputs\.([\w-]+) \}\}", spec["value"]
        ).groups()  # type: ignore[union-attr]
        assert step in ids
        assert output == name


def test_a_parked_run_succeeds_unless_fail_on_park() -> None:
    script = next(s["run"] for s in _action()["runs"]["steps"] if "run" in s)
    assert f'"$status" -eq {int(RunExit.PARKED)}' in script
    assert '"$DW_FAIL_ON_PARK" != "true"' in script


def test_the_repository_workflow_resumes_a_run_on_its_branch() -> None:
    """Resuming needs the run's branch checked out (`run.wrong_branch` otherwise)."""
    workflow = yaml.safe_load((ROOT / ".github" / "workflows" / "deepwork-run.yml").read_text())
    inputs = workflow[True]["workflow_dispatch"]["inputs"]  # YAML 1.1 reads `on:` as True
    assert {"session", "branch"} <= set(inputs)
    steps = workflow["jobs"]["run"]["steps"]
    checkout = next(s for s in steps if str(s.get("uses", "")).startswith("actions/checkout"))
    assert "inputs.branch" in checkout["with"]["ref"]
