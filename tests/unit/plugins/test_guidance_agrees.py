"""The guidance agrees with the server: every skill, standard and library job text, and the
server's own instructions (issue 26; docs/platforms.md, docs/job-library.md).

- each `deepwork …` command names a command the CLI has, and works as written on every
  platform we ship: a skill that gives the plain form also gives the plugins' pinned `uvx` form
  (pinned to the release the plugins run), a job text sends the agent to the `CLI:` line of the
  server's instructions (the way the server was started) and pins no release itself;
- each response field a skill names (`evidence.approval.prompt`, `common_job_info`) exists in
  the tool response models;
- no platform-specific tool name appears in the server's platform-neutral texts.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Iterator
from functools import cache
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


#: How a skill says to run `deepwork` off `PATH`, and how a job text does.
SKILL_FORM, JOB_FORM = "uvx deepwork==", "`CLI:` line"


def _command_problems(where: str, text: str, form: str = SKILL_FORM) -> Iterator[str]:
    found = list(COMMAND.finditer(text))
    for match in found:
        if not _resolves(match["words"]):
            yield f"{where}: `deepwork {match['words']}` is no command"
    if any(m["pin"] is None for m in found) and form not in _flat(text):
        yield f"{where}: gives `deepwork …` without saying how to run it off PATH ({form})"


def test_every_skill_command_resolves_pinned_to_the_release(skills: dict[str, str]) -> None:
    problems = [p for where, text in skills.items() for p in _command_problems(where, text)]
    pins = {m["pin"] for text in skills.values() for m in COMMAND.finditer(text) if m["pin"]}
    assert problems == []
    assert pins <= {VERSION}


@pytest.mark.parametrize("job_dir", JOB_DIRS, ids=[p.name for p in JOB_DIRS])
def test_every_job_command_resolves_and_says_how_to_run_it(job_dir: Path) -> None:
    """A job text pins no release (it outlives one, and before the release is on PyPI a pin
    resolves nowhere): it sends the agent to the server's `CLI:` line instead (issue 44)."""
    text = _job_text(job_dir)
    agent_facing = "\n".join(
        path.read_text(encoding="utf-8")
        for path in [job_dir / "job.yml", *sorted(job_dir.rglob("*.md"))]
        if path.is_file() and path.name != "README.md"
    )
    assert list(_command_problems(job_dir.name, agent_facing, JOB_FORM)) == []
    assert "uvx deepwork==" not in text
    assert "pip install deepwork" not in text


@pytest.mark.parametrize(
    "launch", [f"uvx deepwork=={VERSION}", "uvx --from /src/deepwork deepwork", "deepwork"]
)
def test_the_server_names_the_command_it_was_started_with(launch: str) -> None:
    """The `CLI:` line gives the form that started this server, so it works in the user's
    setup before the release is on PyPI as after it (docs/navigation.md)."""
    line = cli_line(launch)
    assert line == f"CLI: `{launch} ...`."
    assert list(_command_problems("instructions", INSTRUCTIONS + "\n" + line)) == []


def test_the_command_check_catches_a_missing_command_and_a_missing_uvx_form() -> None:
    problems = list(_command_problems("t", "run `deepwork jobs frobnicate` and `deepwork nope`"))
    assert len(problems) == 3
    assert len(list(_command_problems("t", "`deepwork jobs list`", JOB_FORM))) == 1


# --- response fields --------------------------------------------------------------------------


@cache
def _schemas() -> tuple[dict[str, Any], ...]:
    """The response models' schemas, built once: each dotted name of each skill walks them all."""
    return tuple(
        model.model_json_schema(by_alias=True, mode="serialization") for model in RESPONSES
    )


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
    """Every dotted name is a response field or an error code the server has."""
    from deepwork_core.base.error_codes import ErrorCode
    from deepwork_core.engine.fanout.codes import FanOutCode
    from deepwork_core.jobs.errors import JobCode
    from deepwork_core.receipts.codes import ReceiptCode
    from deepwork_core.state.store.errors import StoreCode

    families = (ErrorCode, FanOutCode, JobCode, ReceiptCode, StoreCode)
    codes = {code.value for family in families for code in family}
    missing = {
        f"{where}: `{dotted}`"
        for where, text in skills.items()
        for dotted in DOTTED.findall(text)
        if not dotted.startswith(("quality_gate.", "inputs.", "workflow.", "job."))
        and dotted not in codes
        and not re.fullmatch(r"[a-z_]+\.(md|ya?ml|json)", dotted)
        and not _path_exists(dotted.split("."))
    }
    assert missing == set()
    named = {dotted for text in skills.values() for dotted in DOTTED.findall(text)}
    assert {d for d in named if d.startswith("quality_gate.")} <= codes


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


# --- claims the guidance makes (issue 33): each true, and held here -------------------------

JOBS_JOB = STANDARD_JOBS_DIR / "deepwork_jobs"


def _step_text(name: str) -> str:
    return (JOBS_JOB / "steps" / f"{name}.md").read_text(encoding="utf-8")


def _flat(text: str) -> str:
    """`text` with every run of white space as one space, so phrases match across lines."""
    return " ".join(text.split())


def _deepwork_skill(skills: dict[str, str]) -> str:
    return skills[next(k for k in skills if k.endswith("claude/skills/deepwork/SKILL.md"))]


def _paragraphs_naming(text: str, needle: str) -> int:
    return sum(needle in paragraph for paragraph in re.split(r"\n\s*\n", text))


def test_define_is_small_and_points_at_its_reference() -> None:
    """The first answer of new_job stays small; the reference is read only when needed."""
    define = _step_text("define")
    assert len(define.encode("utf-8")) <= 20_000
    for part in DEFINE_READS:
        assert f"`{part}`" in define
    for name in ("recurring_jobs", "format_0_9"):
        assert re.search(rf"only for a job [^;]*`reference/{name}.md`", _flat(define)), name


# What `define` sends the author of a new (0.10, one-off) job to read, one file per need.
DEFINE_READS = (
    "templates/job.v010.yml.template",
    "reference/job_format.md",
    "reference/workflow_patterns.md",
    "reference/reviews.md",
)


def test_what_define_sends_a_new_job_to_read_is_smaller_than_it_was() -> None:
    """Issue 44: the on-demand reads were 23-31 KB; a new 0.10 job's are now under 23 KB."""
    total = sum(len((JOBS_JOB / part).read_bytes()) for part in DEFINE_READS)
    assert total < 23_000
    every_reference = sorted(REFERENCE.glob("*.md"))
    assert {p.stem for p in every_reference} == {
        "job_format",
        "workflow_patterns",
        "reviews",
        "recurring_jobs",
        "format_0_9",
    }
    job_yml = (JOBS_JOB / "job.yml").read_text(encoding="utf-8")
    assert all(f"`{p.name}`" in _flat(job_yml) for p in every_reference)


def _sentences(text: str) -> set[str]:
    flat = _flat(re.sub(r"^#.*$", "", text, flags=re.M))
    return {s for s in re.split(r"(?<=[.:;])\s+", flat) if len(s) >= 60}


def test_no_sentence_is_said_in_two_reference_files() -> None:
    """One file per need: a long sentence lives in one reference file or the template, not two."""
    files = [*sorted(REFERENCE.glob("*.md")), JOBS_JOB / "templates" / "job.v010.yml.template"]
    seen: dict[str, str] = {}
    for path in files:
        for sentence in _sentences(path.read_text(encoding="utf-8")):
            assert sentence not in seen, f"{path.name} repeats {seen[sentence]}: {sentence}"
            seen[sentence] = path.name


def test_define_teaches_the_010_format_first_with_a_complete_template() -> None:
    from deepwork_core.base.yamlio import parse_yaml
    from deepwork_core.jobs.parser import parse_job_document
    from deepwork_core.jobs.steps.parts import OutputType

    define = _step_text("define")
    assert define.index("0.10 format") < define.index("0.9")
    template = JOBS_JOB / "templates" / "job.v010.yml.template"
    parsed = parse_job_document(
        parse_yaml(template.read_text(encoding="utf-8")), job_dir=template.parent / "vendor_review"
    )
    assert (parsed.format, [str(p) for p in parsed.problems]) == ("0.10", [])
    job = parsed.require()
    outputs = [spec for step in job.steps for spec in step.outputs.values()]
    assert any(spec.type is OutputType.STRING for spec in outputs)
    assert any(spec.json_schema for spec in outputs)
    assert any(not i.required for step in job.steps for i in step.inputs)
    assert all(w.common_job_info_provided_to_all_steps_at_runtime for w in job.workflows)
    assert any(w.agent for w in job.workflows)
    # The example definition in define is a valid 0.10 job too.
    example = re.search(r"```yaml\n(name: churn_review\n.*?)```", define, flags=re.S)
    assert example is not None
    churn = parse_job_document(parse_yaml(example[1]), job_dir=Path("/x/churn_review"))
    assert (churn.format, [str(p) for p in churn.problems]) == ("0.10", [])


def test_the_reference_keeps_what_define_used_to_hold() -> None:
    """Nothing was lost in the move: each feature and pattern is still taught somewhere."""
    reference = "\n".join(
        p.read_text(encoding="utf-8") for p in sorted((JOBS_JOB / "reference").glob("*.md"))
    )
    for term in (
        "approval", "may_change", "scope_guard", "process_requirements", "sub_workflow",
        "json_schema", "`string`", "required: false", "depth", "quality_gate.budget",
        "doc_spec", "hooks", "Concurrent group", "Per-item work", "Iterative loop",
        "Recurring jobs", "go_to_step", "additional_review_guidance", "catalogue",
    ):  # fmt: skip
        assert term in reference, term


def test_repair_treats_the_010_format_as_native() -> None:
    survey, fix_jobs = _step_text("survey"), _step_text("fix_jobs")
    assert "native" in survey
    assert "native" in fix_jobs
    assert "Never convert a working job" in _flat(fix_jobs)
    for text in (survey, fix_jobs):
        assert "the format this DeepWork runs" not in text
        assert "(0.9 style" not in text


def test_repair_knows_every_config_key() -> None:
    from deepwork_core.base.config import DeepWorkConfig

    sentence = re.search(r"it knows (.*?)\)", _step_text("survey"), flags=re.S)
    assert sentence is not None
    named = set(re.findall(r"`(\w+)`", sentence[1]))
    assert named == set(DeepWorkConfig.model_fields)


def test_jobs_convert_is_said_to_write_a_copy() -> None:
    """`deepwork jobs convert` writes job.converted-<format>.yml unless --in-place."""
    reference = (JOBS_JOB / "reference" / "format_0_9.md").read_text(encoding="utf-8")
    for text in (reference, _step_text("fix_jobs")):
        assert "job.converted-<format>.yml" in text
        assert "--in-place" in text
    assert "switches" not in _step_text("define")


def test_the_uvx_rule_is_said_once_per_text(skills: dict[str, str]) -> None:
    job_yml = (JOBS_JOB / "job.yml").read_text(encoding="utf-8")
    assert _paragraphs_naming(job_yml, "`CLI:` line") == 1
    for name in ("define", "record", "implement", "iterate", "learn", "survey", "fix_jobs"):
        assert "uvx deepwork==" not in _step_text(name), name
        assert "`CLI:`" not in _step_text(name), name
    for where, text in skills.items():
        assert _paragraphs_naming(text, "uvx deepwork==") <= 1, where


def test_nobody_is_told_the_agent_cannot_approve(skills: dict[str, str]) -> None:
    texts = [*skills.values(), _step_text("define")]
    texts.extend(_reference(name) for name in ("job_format", "format_0_9"))
    assert all("cannot approve" not in text for text in texts)
    assert "must not approve" in _flat(_deepwork_skill(skills))


def test_learn_uses_the_log_and_knows_stats_are_empty_under_self_review() -> None:
    learn = _step_text("learn")
    assert "`deepwork log <session id>`" in learn
    assert "self-review" in learn
    assert "empty" in learn


def test_hooks_are_said_to_run_only_where_the_platform_runs_them(render_tool: ModuleType) -> None:
    """The reference names exactly the clients whose plugin runs DeepWork's hooks."""
    names = {"claude": "Claude Code", "gemini": "Gemini CLI", "codex": "Codex"}
    running = {p.key for p in render_tool.PLATFORMS if p.runs_hooks}
    assert running == set(names)
    reference = (JOBS_JOB / "reference" / "format_0_9.md").read_text(encoding="utf-8")
    hooks = reference[reference.index("**Job hooks**") :]
    hooks = hooks[: hooks.index("\n\n**")]
    assert "run only where the platform runs" in _flat(hooks)
    assert all(name in hooks for name in names.values())
    assert "cannot forget" not in _step_text("define")


def test_the_skill_says_what_the_gate_judges_and_how_to_see_it(skills: dict[str, str]) -> None:
    text = _deepwork_skill(skills)
    gate = text[text.index("## The quality gate") :]
    for phrase in (
        "process requirements", "doc spec", "`.deepreview` rule", "`dry_run: true`",
        "`review_tasks`", "`quality_gate.max_attempts`", "`quality_gate.reviewer_stalled`",
        "`quality_gate.budget_exhausted`", "`file:line: code: message`",
    ):  # fmt: skip
        assert phrase in _flat(gate), phrase
    assert "review_tasks" in responses.FinishedStepResponse.model_fields


def test_the_skill_says_reviews_are_priced_reused_and_capped_per_day(
    skills: dict[str, str],
) -> None:
    gate = _flat(_deepwork_skill(skills))
    for phrase in (
        "`expected` cost", "total `price`", "reused at no cost",
        "reused from <session>/<step>, <when>", "`quality_gate.day_budget_exhausted`",
    ):  # fmt: skip
        assert phrase in gate, phrase
    fields = responses.FinishedStepResponse.model_fields
    assert "price" in fields
    assert "expected" in responses.PlannedReviewInfo.model_fields


def test_the_self_review_fallback_does_not_contradict_itself(skills: dict[str, str]) -> None:
    """A fresh sub-agent where the client has them; an admitted own pass where it has none."""
    for where, text in skills.items():
        if not where.endswith("/deepwork/SKILL.md"):
            continue
        gate = text[text.index("**Self-review.**") :]
        assert "fresh agent" in gate
        assert "cannot start a sub-agent at all" in _flat(gate)
        assert "Self-review without a sub-agent" in _flat(gate)


def test_the_library_listing_is_mentioned(skills: dict[str, str]) -> None:
    assert "`deepwork jobs add --list`" in _deepwork_skill(skills)
    assert "`deepwork jobs add --list`" in _step_text("define")
    assert _resolves("jobs add --list")


def test_entry_points_pass_what_the_user_said_as_inputs(skills: dict[str, str]) -> None:
    """Every start parameter of an entry point's first step is named in its skill."""
    from deepwork_core.jobs.discovery import JobCatalog

    catalog = JobCatalog.for_project(Path("/nonexistent"))
    plugin = tomllib.loads((REPO / "platform" / "plugin.toml").read_text(encoding="utf-8"))
    for entry in plugin["entry_points"]:
        job = catalog.get(entry["job"]).definition
        first = job.workflows_by_name[entry["workflow"]].entries[0][0]
        params = {i.name for i in job.step(first).inputs if i.name and not i.from_step}
        skill = next(
            text for where, text in skills.items()
            if where.endswith(f"claude/skills/{entry['name']}/SKILL.md")
        )  # fmt: skip
        assert set(entry.get("inputs", {})) == params, entry["name"]
        assert all(f"- `{name}`:" in skill for name in params), entry["name"]


def test_the_readme_names_jobs_add() -> None:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    assert "deepwork jobs add NAME" in readme
    assert "deepwork jobs add --list" in readme


def test_the_gate_docs_do_not_promise_common_info_to_reviewers() -> None:
    """No review task carries the job's common information (docs/quality-gate.md)."""
    from deepwork_core.gate import briefs, quality

    for module in (briefs, quality):
        assert "common_job_info" not in Path(module.__file__).read_text(encoding="utf-8")
    page = (REPO / "docs" / "quality-gate.md").read_text(encoding="utf-8")
    assert "the common job information, the agent's notes" not in page
    assert "common information does not reach the reviewer" in _flat(page)


# --- claims of issue 44: no advice the server then refuses ------------------------------------

REFERENCE = JOBS_JOB / "reference"


def _reference(name: str) -> str:
    return (REFERENCE / f"{name}.md").read_text(encoding="utf-8")


def _guidance_texts() -> dict[str, str]:
    """Every text of the standard and library jobs, by its path."""
    return {
        str(path.relative_to(REPO)): path.read_text(encoding="utf-8")
        for job_dir in JOB_DIRS
        for path in [job_dir / "job.yml", *sorted(job_dir.rglob("*.md"))]
        if path.is_file()
    }


def test_no_text_calls_a_supported_feature_a_warning() -> None:
    """for_each, isolation and concurrent_group validate without a problem (the checkpoint of
    new_job, learn and repair refused their old `job.extension` warning)."""
    from deepwork_core.base.error_codes import ErrorCode

    assert "job.extension" not in {code.value for code in ErrorCode}
    found = [where for where, text in _guidance_texts().items() if "job.extension" in text]
    assert found == []


def test_no_text_asks_a_010_job_for_a_version() -> None:
    """Each sentence that asks to raise `version` is about 0.9-format jobs (0.10 refuses the
    key with `job.unknown_key`)."""
    asks = re.compile(
        r"(raise|raised|bump|bumped)[^.?]*\bversion|version[^.?]*\b(raise|higher)", re.I
    )
    texts = {name: _step_text(name) for name in ("iterate", "learn", "fix_jobs")}
    texts["job.yml"] = (JOBS_JOB / "job.yml").read_text(encoding="utf-8")
    found = [
        f"{where}: {sentence.strip()[:80]}"
        for where, text in texts.items()
        for sentence in re.split(r"(?<=[.?])\s+|\n-", _flat(text))
        if asks.search(sentence) and "0.9" not in sentence
    ]
    assert found == []
    criteria = yaml_criteria("iterate")
    assert "0.10-format job, which has no version" in criteria["Version raised"]


def yaml_criteria(step_id: str) -> dict[str, str]:
    import yaml

    data = yaml.safe_load((JOBS_JOB / "job.yml").read_text(encoding="utf-8"))
    step = next(s for s in data["steps"] if s["id"] == step_id)
    return {k: v for review in step["reviews"] for k, v in review["quality_criteria"].items()}


def test_both_formats_are_said_to_have_concurrent_groups() -> None:
    """define and job_format.md once said in three places that 0.10 has no concurrent groups."""
    job_format = _reference("job_format")
    only_09 = [line.split("|")[2] for line in job_format.splitlines() if line.startswith("| ")]
    assert not any("concurrent" in cell for cell in only_09)
    assert "Both formats have concurrent groups" in _flat(job_format)
    for text in (job_format, _step_text("define"), _reference("workflow_patterns")):
        flat = _flat(text)
        assert "The 0.10 format has none" not in flat
        assert "only the 0.9 format has concurrent" not in flat.lower()
    assert "except job hooks and doc specs" in _flat(_step_text("define"))


def test_per_item_instances_in_the_shared_tree_are_told_how_to_stay_apart() -> None:
    patterns = _flat(_reference("workflow_patterns"))
    per_item = patterns[patterns.index("## Per-item work") : patterns.index("## Iterative loop")]
    assert "never have two instances edit one file" in per_item
    assert "scope_guard: strict" in per_item
    assert "`may_change`" in per_item
    assert "need not commit" in per_item


def test_iterate_can_submit_the_scripts_it_fixes() -> None:
    """A fixed script is an output of iterate, reviewed in the same call (no extra round)."""
    import yaml

    data = yaml.safe_load((JOBS_JOB / "job.yml").read_text(encoding="utf-8"))
    iterate = next(s for s in data["steps"] if s["id"] == "iterate")
    assert iterate["outputs"]["support_files"]["type"] == "files"
    assert "`support_files`" in _step_text("iterate")
    test = next(s for s in data["steps"] if s["id"] == "test")
    assert test["may_change"] == [".deepwork/jobs/**"]


def test_the_common_job_information_is_said_once_and_small() -> None:
    """It goes out with every step (3 KB once): the formats live in reference/job_format.md."""
    from deepwork_core.jobs.parser import parse_job_dir

    job = parse_job_dir(JOBS_JOB).require()
    common = job.common_job_info_provided_to_all_steps_at_runtime or ""
    assert len(common.encode("utf-8")) <= 2_000
    assert "step_arguments" not in common  # the format's keys are the reference's, not repeated
    assert "`reference/job_format.md`" in _step_text("define")
    define = _step_text("define")
    assert len(define.encode("utf-8")) + len(common.encode("utf-8")) <= 17_500


def test_the_reference_names_the_keys_a_persona_map_accepts() -> None:
    from deepwork_core.base.config import EXTERNAL_RUNNERS

    persona = _flat(_reference("job_format"))
    persona = persona[persona.index("**Reviewer persona**") :][:900]
    assert all(f"`{runner}`" in persona for runner in EXTERNAL_RUNNERS)
    assert "gets no persona" in persona


def test_the_skill_teaches_fan_out_approvals_and_the_call_again_errors(
    skills: dict[str, str],
) -> None:
    text = _flat(_deepwork_skill(skills))
    fan = text[text.index("## Fan-out") : text.index("## The quality gate")]
    for phrase in (
        "`session_id`", "`get_active_workflow`", "`abort_workflow`", "`allow_partial`",
        "`fan_out.parent_session_id`", "`outputs: {}`", "`worktree`", "need not commit",
        "`fan_out.merge_conflict`", "`fan_out.incomplete`", "`workflow_complete` ends that",
    ):  # fmt: skip
        assert phrase in fan, phrase
    loop = text[text.index("## The loop") : text.index("## Concurrent steps")]
    assert "For an instance of a fanned-out step it means only that this item is done" in loop
    assert "`quality_gate.outputs_changed`" in loop
    assert "`session.changed`" in loop
    approvals = text[text.index("## Approvals") : text.index("## Nested workflows")]
    for phrase in (
        "`deepwork dashboard`", "`deepwork approver init`", "`approval.unverified`",
        "team mode", "signed by a trusted approver",
    ):  # fmt: skip
        assert phrase in approvals, phrase


def test_the_dry_run_promise_covers_the_stale_evidence_round() -> None:
    page = _flat((REPO / "docs" / "quality-gate.md").read_text(encoding="utf-8"))
    dry = page[page.index("## Dry run") : page.index("## Attempts")]
    assert "earlier step whose accepted output changed" in dry


def test_the_skill_and_a_parked_answer_agree_on_stopping(skills: dict[str, str]) -> None:
    from deepwork_core.engine.headless.parking import stop_note

    skill = _flat(_deepwork_skill(skills))
    note = stop_note("sess_x")
    assert "Stop now" in note
    assert "stop at once and end your turn" in skill
    for words in ("parked", "deepwork run --resume"):
        assert words in note
        assert words in skill


def test_the_skill_stops_a_headless_run_at_every_answer_that_parks_it(
    skills: dict[str, str],
) -> None:
    """A headless server parks the run at every error of its park table, when the attempts run
    out and at a human gate, and answers `session.parked` after; the skill's headless rule names
    each, and its self-review fallback for a spent budget is not offered there (the answer
    says to stop)."""
    from deepwork_core.base.error_codes import ErrorCode
    from deepwork_core.engine.finishing.finish import PARKING_CODES

    skill = _flat(_deepwork_skill(skills))
    rule = skill[skill.index("**Headless runs.**") :]
    rule = rule[: rule.index("## ")]
    codes = {*PARKING_CODES, ErrorCode.QUALITY_GATE_MAX_ATTEMPTS, ErrorCode.SESSION_PARKED}
    assert [code for code in sorted(codes) if f"`{code}`" not in rule] == []
    for words in ("`awaiting_approval`", "stop at once and end your turn", "no self-review"):
        assert words in rule, words
    gate = skill[skill.index("**Reviewer stalled or budget spent.**") :]
    gate = gate[: gate.index("**Self-review.**")]
    assert "unless the answer tells you to stop (a headless run parks" in gate


def test_the_skill_teaches_receipts_as_the_server_and_cli_have_them(
    skills: dict[str, str],
) -> None:
    """The receipt's path, the answer's fields and the commands the skill names are real."""
    from deepwork_core.base.layout import GATE_KEYS_DIR, RECEIPTS_DIR
    from deepwork_core.receipts.model import receipt_path

    text = _flat(_deepwork_skill(skills))
    section = text[text.index("## Receipts") : text.index("## Nested workflows")]
    assert f"`{receipt_path('<job>', '<session>')}`" in section
    assert RECEIPTS_DIR in section
    assert f"`{GATE_KEYS_DIR}/`" in section
    assert "receipts" in responses.EvidenceInfo.model_fields
    assert {"path", "listed_key"} <= set(responses.ReceiptInfo.model_fields)
    for command in ("deepwork verify", "deepwork receipt <session>"):
        assert f"`{command}`" in section
        assert _resolves(command.removeprefix("deepwork ").split(" <")[0]), command


def test_the_skill_says_keys_count_only_from_the_base_branch(skills: dict[str, str]) -> None:
    """Issue 39: a `.pub` only in the working tree is refused; the skill says so with the code
    the server answers, and that the trusted ref is a setting that exists."""
    from deepwork_core.base.config import ApprovalsConfig
    from deepwork_core.base.error_codes import ErrorCode

    text = _flat(_deepwork_skill(skills))
    approvals = text[text.index("## Approvals") : text.index("## Receipts")]
    assert f"`{ErrorCode.APPROVAL_UNTRUSTED_KEY}`" in approvals
    assert "committed on the base branch" in approvals
    assert "never lets you approve" in approvals
    assert "trusted_ref" in ApprovalsConfig.model_fields


def test_the_skill_and_the_reference_teach_approval_policies_as_the_server_has_them(
    skills: dict[str, str],
) -> None:
    """Issue 39: the policy keys the texts name are the `approval:` model's, the answer the
    skill quotes is the one `Standing` writes, and the expiry code is the server's."""
    from deepwork_core.base.error_codes import ErrorCode
    from deepwork_core.jobs.steps.approval import Approval
    from deepwork_core.state.approvals.policy import Standing

    text = _flat(_deepwork_skill(skills))
    approvals = text[text.index("## Approvals") : text.index("## Receipts")]
    reference = _flat((REFERENCE / "job_format.md").read_text(encoding="utf-8"))
    for key in ("required", "approvers", "not_by_author", "expires_after"):
        assert key in Approval.model_fields, key
        assert f"`{key}" in reference, key
    for key in ("required", "not_by_author", "expires_after"):
        assert f"`{key}" in approvals, key
    assert f"`{ErrorCode.APPROVAL_EXPIRED}`" in approvals
    quoted = Standing(required=2, approved_by=["alice"]).text()
    assert f"`{quoted}`" in approvals
    assert "`go_to_step`" in approvals


def test_the_recurring_jobs_reference_schedules_a_headless_run() -> None:
    """A recurring job is scheduled with `deepwork run` (issue 41): the command, its options and
    the agents it names are the CLI's, a human gate parks the run (exit 3) and `--resume`
    continues it."""
    from deepwork_mcp.cli.headless.agents import AGENTS
    from deepwork_mcp.cli.headless.exits import RunExit

    ctx = click.Context(cli)
    run = cli.get_command(ctx, "run")
    assert run is not None
    options = {opt for param in run.params for opt in getattr(param, "opts", [])}
    text = _flat(_reference("recurring_jobs"))
    scheduling = text[text.index("**Scheduling.**") :]
    scheduling = scheduling[: scheduling.index("The library job")]
    assert "`deepwork run <job> --agent claude`" in scheduling
    named = set(re.findall(r"(?<![\w-])(--[a-z]+)", scheduling))
    assert {"--agent", "--input", "--resume"} <= named <= options
    assert all(re.search(rf"\b{agent}`", scheduling) for agent in AGENTS)
    assert f"exits {RunExit.PARKED.value}" in scheduling
    assert "`deepwork run --resume <session>`" in scheduling
    assert "`approval`" in scheduling


def test_a_worktree_instance_gets_the_same_path_rule_from_the_skill_and_the_server(
    skills: dict[str, str],
) -> None:
    """The server takes a worktree instance's output paths relative to its worktree (the note
    it adds to the instance's instructions says so); the skill says the same, not "paths there",
    which reads as project paths into the worktree and fails as `outputs.file_not_found`."""
    from deepwork_core.engine.fanout.items import instance_instructions
    from deepwork_core.state.session_model import InstanceOf, Session

    of = InstanceOf(index=0, item="a", worktree=".deepwork/tmp/worktrees/p/s1", branch="b")
    session = Session.model_construct(session_id="s1", instance_of=of)
    note = _flat(instance_instructions("Do it.", session, 2))
    rule = "output paths relative to that folder"
    assert rule in note
    text = _flat(_deepwork_skill(skills))
    fan = text[text.index("## Fan-out") : text.index("## The quality gate")]
    assert rule in fan
    assert "`docs/a.md`, not `.deepwork/tmp/worktrees/" in fan
