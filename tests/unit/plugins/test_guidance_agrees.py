"""The guidance agrees with the server: every skill, standard and library job text, and the
server's own instructions (issue 26; docs/platforms.md, docs/job-library.md).

- each `deepwork …` command names a command the CLI has, and works as written on every
  platform we ship: a text that gives the plain form also gives the pinned `uvx` form, and a
  rendered skill pins the release the plugins run;
- each response field a skill names (`evidence.approval.prompt`, `common_job_info`) exists in
  the tool response models;
- no platform-specific tool name appears in the server's platform-neutral texts.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import click
import pytest
from deepwork_core.jobs.discovery import STANDARD_JOBS_DIR
from deepwork_mcp import responses
from deepwork_mcp.cli.group import cli
from deepwork_mcp.server import INSTRUCTIONS
from deepwork_mcp.server_instructions import cli_line

from tests.unit.core.jobs.test_standard_jobs import FORBIDDEN

REPO = Path(__file__).resolve().parents[3]
VERSION = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]["version"]
JOB_DIRS = sorted(p.parent for p in STANDARD_JOBS_DIR.glob("*/job.yml")) + sorted(
    p.parent for p in (REPO / "library" / "jobs").glob("*/job.yml")
)

#: `deepwork <sub> [<sub>]` or `uvx deepwork==<version> <sub> [<sub>]` inside backticks.
COMMAND = re.compile(r"`(?:uvx deepwork==(?P<pin>[^\s`]+)|deepwork) (?P<words>[a-z][\w -]*)")
#: A dotted response path such as `evidence.approval.command`.
DOTTED = re.compile(r"`([a-z][a-z_]*(?:\.[a-z][a-z_]*)+)`")
#: A backticked snake_case name.
NAME = re.compile(r"`([a-z]+_[a-z_]+)`")
RESPONSES = [
    responses.GetWorkflowsResponse,
    responses.StartWorkflowResponse,
    responses.FinishedStepResponse,
    responses.AbortWorkflowResponse,
    responses.GetActiveWorkflowResponse,
]


def _job_text(job_dir: Path) -> str:
    files = [job_dir / "job.yml", *sorted(job_dir.rglob("*.md"))]
    return "\n".join(path.read_text(encoding="utf-8") for path in files if path.is_file())


@pytest.fixture(scope="module")
def skills(render_tool: ModuleType) -> dict[str, str]:
    rendered: dict[Path, str] = render_tool.render(REPO)
    return {str(path): text for path, text in rendered.items() if path.name == "SKILL.md"}


def _resolves(words: str) -> bool:
    """Whether the first word names a CLI command and, under a group, the second one too."""
    command: click.Command = cli
    ctx = click.Context(cli)
    for word in words.split()[:2]:
        if not isinstance(command, click.Group) or word.startswith("-"):
            return True
        sub = command.get_command(ctx, word)
        if sub is None:
            return False
        command = sub
    return True


def _command_problems(where: str, text: str) -> Iterator[str]:
    found = list(COMMAND.finditer(text))
    for match in found:
        if not _resolves(match["words"]):
            yield f"{where}: `deepwork {match['words']}` is no command"
    if any(m["pin"] is None for m in found) and "uvx deepwork==" not in text:
        yield f"{where}: gives `deepwork …` without the `uvx deepwork==<version>` form"


def test_every_skill_command_resolves_pinned_to_the_release(skills: dict[str, str]) -> None:
    problems = [p for where, text in skills.items() for p in _command_problems(where, text)]
    pins = {m["pin"] for text in skills.values() for m in COMMAND.finditer(text) if m["pin"]}
    assert problems == []
    assert pins <= {VERSION}


@pytest.mark.parametrize("job_dir", JOB_DIRS, ids=[p.name for p in JOB_DIRS])
def test_every_job_command_resolves_and_says_how_to_run_it(job_dir: Path) -> None:
    assert list(_command_problems(job_dir.name, _job_text(job_dir))) == []


def test_the_server_names_the_pinned_command() -> None:
    line = cli_line(VERSION)
    assert f"uvx deepwork=={VERSION}" in line
    assert list(_command_problems("instructions", INSTRUCTIONS + "\n" + line)) == []


def test_the_command_check_catches_a_missing_command_and_a_missing_uvx_form() -> None:
    problems = list(_command_problems("t", "run `deepwork jobs frobnicate` and `deepwork nope`"))
    assert len(problems) == 3


# --- response fields --------------------------------------------------------------------------


def _schemas() -> list[dict[str, Any]]:
    return [model.model_json_schema(by_alias=True, mode="serialization") for model in RESPONSES]


def _children(node: dict[str, Any], defs: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """`node` and what it stands for through `$ref`, `anyOf`, `items` and map values."""
    if "$ref" in node:
        yield from _children(defs[node["$ref"].rsplit("/", 1)[-1]], defs)
        return
    yield node
    for option in node.get("anyOf", []):
        yield from _children(option, defs)
    for key in ("items", "additionalProperties"):
        if isinstance(node.get(key), dict):
            yield from _children(node[key], defs)


def _properties(node: dict[str, Any], defs: dict[str, Any]) -> dict[str, Any]:
    props: dict[str, Any] = {}
    for child in _children(node, defs):
        props.update(child.get("properties", {}))
    return props


def _path_exists(path: list[str]) -> bool:
    """Whether `path` leads from any object of any response model through its properties."""
    for schema in _schemas():
        defs = schema.get("$defs", {})
        for start in [schema, *defs.values()]:
            node: dict[str, Any] | None = start
            for part in path:
                node = _properties(node, defs).get(part) if node is not None else None
            if node is not None:
                return True
    return False


def _all_field_names() -> set[str]:
    names: set[str] = set()
    for schema in _schemas():
        for node in [schema, *schema.get("$defs", {}).values()]:
            names.update(node.get("properties", {}))
    return names


def test_every_dotted_field_a_skill_names_exists(skills: dict[str, str]) -> None:
    missing = {
        f"{where}: `{dotted}`"
        for where, text in skills.items()
        for dotted in DOTTED.findall(text)
        if not dotted.startswith(("quality_gate.", "inputs.", "workflow.", "job."))
        and not re.fullmatch(r"[a-z_]+\.(md|ya?ml|json)", dotted)
        and not _path_exists(dotted.split("."))
    }
    assert missing == set()


def test_the_field_check_refuses_a_top_level_approval() -> None:
    assert _path_exists(["evidence", "approval", "command"])
    assert _path_exists(["evidence", "stale_evidence"])
    assert not _path_exists(["approval", "command", "prompt"])


def test_every_response_field_the_deepwork_skill_lists_exists(skills: dict[str, str]) -> None:
    """Names given as `- \\`name\\`:` in the loop, and the ones the skill says a reply carries."""
    text = skills[next(k for k in skills if k.endswith("claude/skills/deepwork/SKILL.md"))]
    listed = set(re.findall(r"^\s+- `([a-z_]+)`:", text, flags=re.M))
    listed |= {"common_job_info", "branch_name", "branch_note", "feedback", "failed_reviews"}
    listed |= {"summary", "all_outputs", "post_workflow_instructions", "stack"}
    listed |= {"resumed_workflow", "resumed_step", "undeclared_changes", "stale_evidence"}
    listed -= {"needs_work", "next_step", "workflow_complete", "awaiting_approval", "reviewing"}
    listed -= {"file", "files", "file_path", "string"}
    assert listed - _all_field_names() == set()
    assert "common_job_info" in text


# --- platform-neutral server texts ------------------------------------------------------------


def test_the_server_texts_name_no_platform_specific_tool() -> None:
    from deepwork_core.engine import briefing

    source = Path(briefing.__file__).read_text(encoding="utf-8")
    texts = {"instructions": INSTRUCTIONS, "briefing.py": source}
    found = [
        f"{where}: {label}"
        for where, text in texts.items()
        for label, pattern in FORBIDDEN.items()
        if pattern.search(text)
    ]
    assert found == []
