"""A small valid job, and helpers to break it one key at a time."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import yaml


def valid_job(name: str = "demo") -> dict[str, Any]:
    """Two steps in one workflow; `second` reads a file output of `first`."""
    return {
        "name": name,
        "version": "1.0.0",
        "summary": "A demo job",
        "common_job_info_provided_to_all_steps_at_runtime": "Shared context.",
        "workflows": [{"name": "main", "summary": "The main flow", "steps": ["first", "second"]}],
        "steps": [
            {
                "id": "first",
                "name": "First",
                "description": "Gather notes",
                "instructions_file": "steps/first.md",
                "inputs": [{"name": "topic", "description": "What to research"}],
                "outputs": {"notes.md": {"type": "file", "description": "Notes", "required": True}},
                "reviews": [],
            },
            {
                "id": "second",
                "name": "Second",
                "description": "Write the report",
                "instructions_file": "steps/second.md",
                "inputs": [{"file": "notes.md", "from_step": "first"}],
                "outputs": {
                    "report.md": {"type": "file", "description": "Report", "required": True}
                },
                "dependencies": ["first"],
                "reviews": [
                    {"run_each": "report.md", "quality_criteria": {"Clear": "Is it clear?"}}
                ],
                "hooks": {"after_agent": [{"prompt": "Check the report."}]},
            },
        ],
    }


def changed(data: dict[str, Any], path: tuple[str | int, ...], value: Any) -> dict[str, Any]:
    """A deep copy of `data` with the value at `path` replaced (or added)."""
    result = copy.deepcopy(data)
    node: Any = result
    for part in path[:-1]:
        node = node[part]
    node[path[-1]] = value
    return result


def without(data: dict[str, Any], path: tuple[str | int, ...]) -> dict[str, Any]:
    """A deep copy of `data` with the key at `path` removed."""
    result = copy.deepcopy(data)
    node: Any = result
    for part in path[:-1]:
        node = node[part]
    del node[path[-1]]
    return result


def write_job(
    root: Path, data: dict[str, Any] | str | bytes, folder: str = "demo", *, files: bool = True
) -> Path:
    """Write `data` as `root/folder/job.yml` (plus the instruction files) and return the folder."""
    job_dir = root / folder
    job_dir.mkdir(parents=True, exist_ok=True)
    job_file = job_dir / "job.yml"
    if isinstance(data, bytes):
        job_file.write_bytes(data)
    elif isinstance(data, str):
        job_file.write_text(data, encoding="utf-8")
    else:
        job_file.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    if files:
        (job_dir / "steps").mkdir(exist_ok=True)
        for step in ("first", "second"):
            (job_dir / "steps" / f"{step}.md").write_text(f"# {step}\n", encoding="utf-8")
    return job_dir


def _with_step(data: dict[str, Any], step: dict[str, Any]) -> dict[str, Any]:
    result = copy.deepcopy(data)
    result["steps"].append(step)
    return result


def _alt_step() -> dict[str, Any]:
    """A copy of `first` under the id `alt` (same outputs, no dependency between them)."""
    step = copy.deepcopy(valid_job()["steps"][0])
    step["id"] = "alt"
    return step


_BASE = valid_job()
_LONG = "x" * 201

#: (case id, job data, expected code, expected key, expected step or None)
#: Every one of these violates the shape of docs/job-format.md (the JSON Schema must reject it too).
SHAPE_CASES: list[tuple[str, dict[str, Any], str, str, str | None]] = [
    ("missing_job_key", without(_BASE, ("summary",)), "job.missing_key", "summary", None),
    (
        "missing_step_key",
        without(_BASE, ("steps", 1, "reviews")),
        "job.missing_key",
        "steps[1].reviews",
        "second",
    ),
    (
        "missing_output_key",
        without(_BASE, ("steps", 0, "outputs", "notes.md", "required")),
        "job.missing_key",
        "steps[0].outputs.notes.md.required",
        "first",
    ),
    ("unknown_key_job", changed(_BASE, ("colour",), "red"), "job.unknown_key", "colour", None),
    (
        "unknown_key_workflow",
        changed(_BASE, ("workflows", 0, "agent"), "x"),
        "job.unknown_key",
        "workflows[0].agent",
        None,
    ),
    (
        "unknown_key_step",
        changed(_BASE, ("steps", 0, "quality_criteria"), ["x"]),
        "job.unknown_key",
        "steps[0].quality_criteria",
        "first",
    ),
    (
        "unknown_key_output",
        changed(_BASE, ("steps", 0, "outputs", "notes.md", "format"), "md"),
        "job.unknown_key",
        "steps[0].outputs.notes.md.format",
        "first",
    ),
    (
        "unknown_key_input",
        changed(_BASE, ("steps", 0, "inputs", 0, "default"), "x"),
        "job.unknown_key",
        "steps[0].inputs[0].default",
        "first",
    ),
    (
        "unknown_key_review",
        changed(_BASE, ("steps", 1, "reviews", 0, "strategy"), "individual"),
        "job.unknown_key",
        "steps[1].reviews[0].strategy",
        "second",
    ),
    (
        "unknown_key_hooks",
        changed(_BASE, ("steps", 1, "hooks", "after_tool"), []),
        "job.unknown_key",
        "steps[1].hooks.after_tool",
        "second",
    ),
    (
        "unknown_key_hook_action",
        changed(_BASE, ("steps", 1, "hooks", "after_agent", 0, "command"), "ls"),
        "job.unknown_key",
        "steps[1].hooks.after_agent[0].command",
        "second",
    ),
    ("bad_job_name", changed(_BASE, ("name",), "Demo-Job"), "job.pattern_mismatch", "name", None),
    ("bad_version", changed(_BASE, ("version",), "1.0"), "job.pattern_mismatch", "version", None),
    ("float_version", changed(_BASE, ("version",), 1.0), "job.wrong_type", "version", None),
    (
        "bad_step_id",
        changed(_BASE, ("steps", 0, "id"), "First"),
        "job.pattern_mismatch",
        "steps[0].id",
        "First",
    ),
    (
        "bad_workflow_name",
        changed(_BASE, ("workflows", 0, "name"), "main flow"),
        "job.pattern_mismatch",
        "workflows[0].name",
        None,
    ),
    (
        "bad_workflow_entry",
        changed(_BASE, ("workflows", 0, "steps", 0), "First!"),
        "job.pattern_mismatch",
        "workflows[0].steps[0]",
        None,
    ),
    (
        "bad_group_member",
        changed(_BASE, ("workflows", 0, "steps", 0), ["first", "Bad"]),
        "job.pattern_mismatch",
        "workflows[0].steps[0][1]",
        None,
    ),
    (
        "workflow_entry_mapping",
        changed(_BASE, ("workflows", 0, "steps", 0), {"id": "first"}),
        "job.wrong_type",
        "workflows[0].steps[0]",
        None,
    ),
    (
        "empty_group",
        changed(_BASE, ("workflows", 0, "steps", 0), []),
        "job.too_short",
        "workflows[0].steps[0]",
        None,
    ),
    (
        "empty_workflow",
        changed(_BASE, ("workflows", 0, "steps"), []),
        "job.too_short",
        "workflows[0].steps",
        None,
    ),
    ("summary_too_long", changed(_BASE, ("summary",), _LONG), "job.too_long", "summary", None),
    ("summary_empty", changed(_BASE, ("summary",), ""), "job.too_short", "summary", None),
    (
        "workflow_summary_too_long",
        changed(_BASE, ("workflows", 0, "summary"), _LONG),
        "job.too_long",
        "workflows[0].summary",
        None,
    ),
    (
        "common_info_empty",
        changed(_BASE, ("common_job_info_provided_to_all_steps_at_runtime",), ""),
        "job.too_short",
        "common_job_info_provided_to_all_steps_at_runtime",
        None,
    ),
    ("no_steps", changed(_BASE, ("steps",), []), "job.too_short", "steps", None),
    ("step_not_mapping", changed(_BASE, ("steps", 0), "first"), "job.wrong_type", "steps[0]", "#0"),
    (
        "empty_criteria",
        changed(_BASE, ("steps", 1, "reviews", 0, "quality_criteria"), {}),
        "job.too_short",
        "steps[1].reviews[0].quality_criteria",
        "second",
    ),
    (
        "empty_criterion_question",
        changed(_BASE, ("steps", 1, "reviews", 0, "quality_criteria"), {"Clear": ""}),
        "job.too_short",
        "steps[1].reviews[0].quality_criteria.Clear",
        "second",
    ),
    (
        "hook_action_two_kinds",
        changed(_BASE, ("steps", 1, "hooks", "after_agent", 0), {"prompt": "x", "script": "a.sh"}),
        "job.invalid_hook_action",
        "steps[1].hooks.after_agent[0]",
        "second",
    ),
    (
        "hook_action_no_kind",
        changed(_BASE, ("steps", 1, "stop_hooks"), [{}]),
        "job.invalid_hook_action",
        "steps[1].stop_hooks[0]",
        "second",
    ),
    (
        "input_both_shapes",
        changed(
            _BASE,
            ("steps", 0, "inputs", 0),
            {"name": "topic", "description": "d", "file": "x.md", "from_step": "first"},
        ),
        "job.invalid_input",
        "steps[0].inputs[0]",
        "first",
    ),
    (
        "input_half_file",
        changed(_BASE, ("steps", 1, "inputs", 0), {"file": "notes.md"}),
        "job.invalid_input",
        "steps[1].inputs[0]",
        "second",
    ),
    (
        "input_half_parameter",
        changed(_BASE, ("steps", 0, "inputs", 0), {"name": "topic"}),
        "job.invalid_input",
        "steps[0].inputs[0]",
        "first",
    ),
    (
        "output_type_folder",
        changed(_BASE, ("steps", 0, "outputs", "notes.md", "type"), "folder"),
        "job.invalid_value",
        "steps[0].outputs.notes.md.type",
        "first",
    ),
    (
        "output_required_not_bool",
        changed(_BASE, ("steps", 0, "outputs", "notes.md", "required"), "yes"),
        "job.wrong_type",
        "steps[0].outputs.notes.md.required",
        "first",
    ),
    (
        "outputs_as_list",
        changed(_BASE, ("steps", 0, "outputs"), ["notes.md"]),
        "job.wrong_type",
        "steps[0].outputs",
        "first",
    ),
    (
        "exposed_not_bool",
        changed(_BASE, ("steps", 0, "exposed"), "true"),
        "job.wrong_type",
        "steps[0].exposed",
        "first",
    ),
    (
        "agent_empty",
        changed(_BASE, ("steps", 0, "agent"), ""),
        "job.too_short",
        "steps[0].agent",
        "first",
    ),
]

#: Cases that pass the shape but fail a cross-reference check (the JSON Schema accepts them).
SEMANTIC_CASES: list[tuple[str, dict[str, Any], str, str, str | None]] = [
    (
        "unknown_dependency",
        changed(_BASE, ("steps", 1, "dependencies"), ["first", "ghost"]),
        "job.unknown_dependency",
        "steps[1].dependencies[1]",
        "second",
    ),
    (
        "dependency_cycle",
        changed(_BASE, ("steps", 0, "dependencies"), ["second"]),
        "job.dependency_cycle",
        "steps[1].dependencies",
        "second",
    ),
    (
        "self_dependency",
        changed(_BASE, ("steps", 0, "dependencies"), ["first"]),
        "job.dependency_cycle",
        "steps[0].dependencies[0]",
        "first",
    ),
    (
        "unknown_from_step",
        changed(_BASE, ("steps", 1, "inputs", 0, "from_step"), "ghost"),
        "job.unknown_from_step",
        "steps[1].inputs[0].from_step",
        "second",
    ),
    (
        "from_step_not_dependency",
        changed(_BASE, ("steps", 1, "dependencies"), []),
        "job.input_not_dependency",
        "steps[1].inputs[0].from_step",
        "second",
    ),
    (
        "input_file_not_an_output",
        changed(_BASE, ("steps", 1, "inputs", 0, "file"), "summary.md"),
        "job.unknown_input_file",
        "steps[1].inputs[0].file",
        "second",
    ),
    (
        "bad_run_each",
        changed(_BASE, ("steps", 1, "reviews", 0, "run_each"), "summary.md"),
        "job.invalid_run_each",
        "steps[1].reviews[0].run_each",
        "second",
    ),
    (
        "unknown_workflow_step",
        changed(_BASE, ("workflows", 0, "steps"), ["first", "second", "third"]),
        "job.unknown_workflow_step",
        "workflows[0].steps[2]",
        None,
    ),
    (
        "unknown_step_in_group",
        changed(_BASE, ("workflows", 0, "steps"), ["first", ["second", "third"]]),
        "job.unknown_workflow_step",
        "workflows[0].steps[1][1]",
        None,
    ),
    (
        "duplicate_workflow_step",
        changed(_BASE, ("workflows", 0, "steps"), ["first", "second", "first"]),
        "job.duplicate_workflow_step",
        "workflows[0].steps[2]",
        None,
    ),
    (
        "duplicate_workflow_name",
        changed(_BASE, ("workflows",), [_BASE["workflows"][0], _BASE["workflows"][0]]),
        "job.duplicate_workflow",
        "workflows[1].name",
        None,
    ),
    (
        "duplicate_step_id",
        _with_step(_BASE, _BASE["steps"][0]),
        "job.duplicate_step_id",
        "steps[2].id",
        "first",
    ),
    (
        "workflow_order",
        changed(_BASE, ("workflows", 0, "steps"), ["second", "first"]),
        "job.workflow_order",
        "workflows[0].steps[0]",
        None,
    ),
    (
        "dependency_in_same_group",
        changed(_BASE, ("workflows", 0, "steps"), [["first", "second"]]),
        "job.workflow_order",
        "workflows[0].steps[0]",
        None,
    ),
    (
        "duplicate_output_in_group",
        changed(
            _with_step(_BASE, _alt_step()), ("workflows", 0, "steps"), [["first", "alt"], "second"]
        ),
        "job.duplicate_group_output",
        "workflows[0].steps[0][1]",
        None,
    ),
    (
        "instructions_outside_job",
        changed(_BASE, ("steps", 0, "instructions_file"), "../../secrets.md"),
        "job.path_outside_job",
        "steps[0].instructions_file",
        "first",
    ),
    (
        "absolute_instructions",
        changed(_BASE, ("steps", 0, "instructions_file"), "/etc/passwd"),
        "job.path_outside_job",
        "steps[0].instructions_file",
        "first",
    ),
    (
        "hook_script_outside_job",
        changed(_BASE, ("steps", 1, "hooks", "after_agent", 0), {"script": "../../x.sh"}),
        "job.path_outside_job",
        "steps[1].hooks.after_agent[0].script",
        "second",
    ),
    (
        "stop_hook_prompt_file_outside_job",
        changed(_BASE, ("steps", 1, "stop_hooks"), [{"prompt_file": "../other/p.md"}]),
        "job.path_outside_job",
        "steps[1].stop_hooks[0].prompt_file",
        "second",
    ),
]
