"""The quality gate's pure half: task expansion, payloads, prompts, verdicts, self-review."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from deepwork_core.base.errors import DeepWorkError, DocSpecError, QualityGateError
from deepwork_core.base.identifiers import parse_session_id
from deepwork_core.evidence.verdicts import ReviewVerdict
from deepwork_core.gate.checkpoint import Checkpoint, ResolvedInput
from deepwork_core.gate.quality import (
    INPUTS_BEGIN,
    INPUTS_END,
    OUTPUTS_BEGIN,
    OUTPUTS_END,
    QualityReviewTask,
    build_review_brief,
    build_review_payload,
    combined_feedback,
    plan_review_tasks,
    review_reply_schema,
    self_review_feedback,
    task_file_count,
    unjudged_criteria,
    verdict_from_reply,
    write_self_review_file,
)
from deepwork_core.jobs.parser import load_job
from deepwork_core.state.store.port import Store

JOB_YML = """\
name: demo
version: "1.0.0"
summary: Demo job
common_job_info_provided_to_all_steps_at_runtime: Shared context.
workflows:
  - name: main
    summary: Main
    steps: [gather, [write, appendix]]
steps:
  - id: gather
    name: Gather
    description: Gather notes
    instructions_file: steps/gather.md
    outputs:
      notes:
        type: file
        description: Notes
        required: true
    reviews: []
  - id: write
    name: Write
    description: Write the report
    instructions_file: steps/write.md
    inputs:
      - name: topic
        description: The topic
      - file: notes
        from_step: gather
    dependencies: [gather]
    outputs:
      report:
        type: file
        description: The report
        required: true
        doc_spec: .deepwork/doc_specs/report.md
      pages:
        type: files
        description: Pages
        required: false
      summary:
        type: file
        description: Summary
        required: false
    reviews:
      - run_each: step
        quality_criteria:
          Complete: Is the work complete?
      - run_each: pages
        quality_criteria:
          Clear: Is the page clear?
        additional_review_guidance: Read the pages slowly.
      - run_each: summary
        quality_criteria:
          Short: Is it short?
  - id: appendix
    name: Appendix
    description: Appendix
    instructions_file: steps/appendix.md
    dependencies: [gather]
    outputs:
      extra:
        type: file
        description: Extra
        required: true
    reviews:
      - run_each: extra
        quality_criteria:
          Relevant: Is it relevant?
"""

DOC_SPEC = """\
---
name: Report spec
description: A report.
quality_criteria:
  - name: Summary first
    description: Does it open with a summary?
---
# Example
"""

SECRET = "TOP-SECRET-CONTENT-4711"


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = (tmp_path / "project").resolve()
    job_dir = root / ".deepwork" / "jobs" / "demo"
    (job_dir / "steps").mkdir(parents=True)
    (job_dir / "job.yml").write_text(JOB_YML)
    for step in ("gather", "write", "appendix"):
        (job_dir / "steps" / f"{step}.md").write_text(f"Do {step}.\n")
    (root / ".deepwork" / "doc_specs").mkdir()
    (root / ".deepwork" / "doc_specs" / "report.md").write_text(DOC_SPEC)
    (root / "out").mkdir()
    (root / "out" / "notes.md").write_text("the notes\n")
    (root / "out" / "report.md").write_text("the report\n")
    (root / "out" / "p1.md").write_text("page one\n")
    (root / "out" / "p2.md").write_text("page two\n")
    (root / "out" / "extra.md").write_text("extra\n")
    (tmp_path / "secret.txt").write_text(SECRET + "\n")
    return root


def make_request(store: Store, project: Path, **changes: Any) -> Checkpoint:
    job_dir = project / ".deepwork" / "jobs" / "demo"
    fields: dict[str, Any] = {
        "project_root": project,
        "store": store,
        "session_id": "sess_123456",
        "job": load_job(job_dir),
        "step_ids": ("write",),
        "outputs": {"report": "out/report.md", "pages": ["out/p1.md", "out/p2.md"]},
        "input_files": [ResolvedInput("write", "notes", None, "gather", ["out/notes.md"])],
        "notes": "I wrote it carefully.",
    }
    fields.update(changes)
    fields["step_ids"] = tuple(fields["step_ids"])
    return Checkpoint(**fields)


# --- planning ---------------------------------------------------------------------------------


def test_run_each_expansion(project: Path, store: Store) -> None:
    tasks = plan_review_tasks(make_request(store, project))
    assert [(t.run_each, t.target_file, t.files) for t in tasks] == [
        ("step", None, ["out/report.md", "out/p1.md", "out/p2.md"]),
        ("pages", "out/p1.md", ["out/p1.md"]),
        ("pages", "out/p2.md", ["out/p2.md"]),
        # `summary` was not submitted (optional): no task for it
    ]
    assert tasks[1].guidance == "Read the pages slowly."
    assert all(task.step_id == "write" for task in tasks)


def test_file_output_gives_one_task(project: Path, store: Store) -> None:
    request = make_request(
        store, project, outputs={"report": "out/report.md", "summary": "out/p1.md", "pages": []}
    )
    tasks = plan_review_tasks(request)
    assert [(t.run_each, t.target_file, t.files) for t in tasks] == [
        ("step", None, ["out/report.md", "out/p1.md"]),
        ("summary", None, ["out/p1.md"]),
    ]


def test_doc_spec_criteria_join_only_tasks_covering_that_output(
    project: Path, store: Store
) -> None:
    tasks = plan_review_tasks(make_request(store, project))
    assert tasks[0].criteria == {
        "Complete": "Is the work complete?",
        "Report spec: Summary first": "Does it open with a summary?",
    }
    assert tasks[1].criteria == {"Clear": "Is the page clear?"}


def test_missing_doc_spec_is_an_error(project: Path, store: Store) -> None:
    (project / ".deepwork" / "doc_specs" / "report.md").unlink()
    with pytest.raises(DocSpecError) as exc:
        plan_review_tasks(make_request(store, project))
    assert exc.value.code == "doc_spec.unreadable"


def test_doc_spec_outside_the_project_is_refused(project: Path, store: Store) -> None:
    job_file = project / ".deepwork" / "jobs" / "demo" / "job.yml"
    job_file.write_text(JOB_YML.replace(".deepwork/doc_specs/report.md", "../secret.txt"))
    with pytest.raises(DeepWorkError) as exc:
        plan_review_tasks(make_request(store, project))
    assert exc.value.code == "path.outside_project"


def test_concurrent_group_plans_every_steps_reviews(project: Path, store: Store) -> None:
    request = make_request(
        store,
        project,
        step_ids=["write", "appendix"],
        outputs={"report": "out/report.md", "extra": "out/extra.md"},
    )
    tasks = plan_review_tasks(request)
    assert [(t.step_id, t.run_each) for t in tasks] == [
        ("write", "step"),
        ("appendix", "extra"),
    ]


# --- payload ----------------------------------------------------------------------------------


def test_payload_with_inputs_and_outputs(project: Path, store: Store) -> None:
    request = make_request(store, project)
    task = plan_review_tasks(request)[0]
    assert build_review_payload(request, task) == (
        f"{INPUTS_BEGIN}\n"
        "-------------------- out/notes.md --------------------\n"
        "the notes\n"
        f"{INPUTS_END}\n"
        "\n"
        f"{OUTPUTS_BEGIN}\n"
        "-------------------- out/report.md --------------------\n"
        "the report\n"
        "-------------------- out/p1.md --------------------\n"
        "page one\n"
        "-------------------- out/p2.md --------------------\n"
        "page two\n"
        f"{OUTPUTS_END}\n"
    )
    assert task_file_count(request, task) == 4


def test_inputs_section_omitted_without_file_inputs(project: Path, store: Store) -> None:
    request = make_request(
        store, project, step_ids=["appendix"], outputs={"extra": "out/extra.md"}, input_files=[]
    )
    payload = build_review_payload(request, plan_review_tasks(request)[0])
    assert "BEGIN INPUTS" not in payload
    assert payload.startswith(OUTPUTS_BEGIN)


def test_inputs_of_another_step_are_not_included(project: Path, store: Store) -> None:
    request = make_request(
        store,
        project,
        step_ids=["write", "appendix"],
        outputs={"report": "out/report.md", "extra": "out/extra.md"},
    )
    appendix_task = plan_review_tasks(request)[1]
    assert "BEGIN INPUTS" not in build_review_payload(request, appendix_task)


def test_binary_file_becomes_placeholder_with_absolute_path(project: Path, store: Store) -> None:
    (project / "out" / "p1.md").write_bytes(b"\x89PNG\r\n\x1a\n\xff\xfe")
    (project / "out" / "p2.md").write_bytes(b"text\x00with nul")
    request = make_request(store, project)
    payload = build_review_payload(request, plan_review_tasks(request)[0])
    for name in ("p1.md", "p2.md"):
        assert (
            f"[Binary file — not included in review. Read from: {project / 'out' / name}]"
            in payload
        )
    assert "PNG" not in payload


def test_more_than_five_files_are_listed_not_inlined(project: Path, store: Store) -> None:
    pages = []
    for number in range(6):
        (project / "out" / f"many{number}.md").write_text(f"content {number}\n")
        pages.append(f"out/many{number}.md")
    request = make_request(store, project, outputs={"report": "out/report.md", "pages": pages})
    task = plan_review_tasks(request)[0]
    payload = build_review_payload(request, task)
    assert "content 0" not in payload
    assert "the report" not in payload
    for path in ["out/report.md", *pages]:
        assert f"- {path}\n" in payload
    assert "-------------------- out/notes.md" in payload  # one input: still inlined
    exactly_five = make_request(
        store, project, outputs={"report": "out/report.md", "pages": pages[:4]}
    )
    assert "content 3" in build_review_payload(exactly_five, plan_review_tasks(exactly_five)[0])


def test_max_inline_zero_lists_everything(project: Path, store: Store) -> None:
    request = make_request(store, project)
    payload = build_review_payload(request, plan_review_tasks(request)[0], max_inline_files=0)
    assert "the report" not in payload
    assert "the notes" not in payload
    assert "- out/report.md" in payload


def test_missing_file_and_empty_outputs(project: Path, store: Store) -> None:
    (project / "out" / "p1.md").unlink()
    request = make_request(store, project)
    payload = build_review_payload(request, plan_review_tasks(request)[0])
    assert f"[File not found: {project / 'out' / 'p1.md'}]" in payload
    empty = make_request(store, project, step_ids=["write"], outputs={"report": "out/report.md"})
    task = QualityReviewTask(step_id="write", run_each="step", files=[], criteria={"A": "b"})
    assert "[No files provided]" in build_review_payload(empty, task)


def test_directory_is_not_read(project: Path, store: Store) -> None:
    request = make_request(store, project, outputs={"report": "out", "pages": []})
    payload = build_review_payload(request, plan_review_tasks(request)[0])
    assert "[Not a regular file" in payload


def test_fifo_and_huge_files_are_not_inlined(project: Path, store: Store) -> None:
    import os

    from deepwork_core.gate.quality import MAX_INLINE_BYTES

    os.mkfifo(project / "out" / "p1.md.fifo")
    (project / "out" / "p2.md").write_text("y" * (MAX_INLINE_BYTES + 1))
    request = make_request(store, project, outputs={"report": "out/report.md", "pages": []})
    task = QualityReviewTask(
        step_id="write", run_each="step", files=["out/p1.md.fifo", "out/p2.md"], criteria={"A": "b"}
    )
    payload = build_review_payload(request, task)  # must not block on the FIFO
    assert "[Not a regular file" in payload
    assert "[File too large to include" in payload
    assert "yyyy" not in payload


# --- security ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "evil",
    ["symlink", "../secret.txt", "absolute", "sub/../../secret.txt", "symlinked_dir"],
)
def test_outside_files_never_reach_payload_or_self_review(
    project: Path, evil: str, store: Store
) -> None:
    secret = project.parent / "secret.txt"
    if evil == "symlink":
        (project / "out" / "link.md").symlink_to(secret)
        path = "out/link.md"
    elif evil == "absolute":
        path = str(secret)
    elif evil == "symlinked_dir":
        (project / "escape").symlink_to(project.parent)
        path = "escape/secret.txt"
    else:
        path = evil
    request = make_request(
        store,
        project,
        outputs={"report": path, "pages": [path]},
        input_files=[ResolvedInput("write", "notes", None, "gather", [path])],
    )
    tasks = plan_review_tasks(request)
    for task in tasks:
        for limit in (5, 0):
            payload = build_review_payload(request, task, max_inline_files=limit)
            assert SECRET not in payload
        assert "[Path outside the project — not included in review]" in build_review_payload(
            request, task
        )
    review_file = write_self_review_file(request, tasks)
    text = review_file.read_text()
    assert SECRET not in text
    assert "outside the project — not reviewed" in text


# --- prompt, schema, verdicts ----------------------------------------------------------------


def test_review_brief_lists_criteria_guidance_and_notes(project: Path, store: Store) -> None:
    request = make_request(store, project)
    tasks = plan_review_tasks(request)
    prompt = build_review_brief(request, tasks[1])
    assert "- **Clear**: Is the page clear?" in prompt
    assert "Read the pages slowly." in prompt
    assert "I wrote it carefully." in prompt
    assert "criteria_results" in prompt
    step_prompt = build_review_brief(request, tasks[0])
    assert "- **Report spec: Summary first**: Does it open with a summary?" in step_prompt


def _reply(passed: bool, results: list[tuple[str, bool]]) -> dict[str, Any]:
    return {
        "passed": passed,
        "feedback": "overall feedback",
        "criteria_results": [
            {"criterion": name, "passed": ok, "feedback": "" if ok else f"{name} is weak"}
            for name, ok in results
        ],
    }


TASK = QualityReviewTask(
    step_id="write",
    run_each="pages",
    target_file="out/p1.md",
    files=["out/p1.md"],
    criteria={"Clear": "Is it clear?", "Short": "Is it short?"},
)


def test_verdict_passes_only_when_every_criterion_passed() -> None:
    verdict = verdict_from_reply(TASK, _reply(True, [("Clear", True), ("Short", True)]))
    assert verdict == ReviewVerdict(
        step_id="write",
        review_run_each="pages",
        target_file="out/p1.md",
        passed=True,
        feedback="overall feedback",
        criteria_results=verdict.criteria_results,
    )
    assert [r.criterion for r in verdict.criteria_results] == ["Clear", "Short"]


def test_overall_flag_is_not_trusted() -> None:
    lying = verdict_from_reply(TASK, _reply(True, [("Clear", True), ("Short", False)]))
    assert lying.passed is False
    modest = verdict_from_reply(TASK, _reply(False, [("Clear", True), ("Short", True)]))
    assert modest.passed is True


def test_criterion_without_answer_fails() -> None:
    verdict = verdict_from_reply(TASK, _reply(True, [("Clear", True), ("Clear", True)]))
    assert verdict.passed is False
    short = verdict.criteria_results[1]
    assert (short.criterion, short.passed) == ("Short", False)


def test_contradicting_duplicate_answers_fail() -> None:
    verdict = verdict_from_reply(
        TASK, _reply(True, [("Clear", True), ("Clear", False), ("Short", True)])
    )
    assert verdict.passed is False


@pytest.mark.parametrize(
    "reply",
    [
        "a string",
        None,
        [],
        {"passed": True, "feedback": "ok"},
        {"passed": "yes", "feedback": "ok", "criteria_results": []},
        {**_reply(True, [("Clear", True), ("Short", True)]), "extra": 1},
    ],
)
def test_schema_invalid_reply_is_bad_output(reply: object) -> None:
    with pytest.raises(QualityGateError) as exc:
        verdict_from_reply(TASK, reply)
    assert exc.value.code == "quality_gate.bad_output"


def test_reply_schema_is_valid_json_schema() -> None:
    import jsonschema

    schema = review_reply_schema(TASK)
    jsonschema.Draft202012Validator.check_schema(schema)
    # Within the subset structured outputs document: no enum, no minItems above 1, one type each.
    text = json.dumps(schema)
    assert '"enum"' not in text
    assert "minItems" not in text
    assert '"type": [' not in text


@pytest.mark.parametrize(
    ("results", "unjudged"),
    [
        ([("Clear", True), ("Short", True)], []),
        ([("Clear", True)], ["Short"]),
        ([("Clear", True), ("Invented", True)], ["Short"]),
        ([], ["Clear", "Short"]),
    ],
)
def test_unjudged_criteria_are_the_ones_without_a_result(
    results: list[tuple[str, bool]], unjudged: list[str]
) -> None:
    reply = _reply(True, results)
    assert unjudged_criteria(TASK, reply) == unjudged
    verdict = verdict_from_reply(TASK, reply)
    assert [r.criterion for r in verdict.criteria_results if not r.passed] == unjudged


def test_combined_feedback_names_failed_reviews_and_criteria() -> None:
    failed = verdict_from_reply(TASK, _reply(False, [("Clear", False), ("Short", True)]))
    passed = verdict_from_reply(TASK, _reply(True, [("Clear", True), ("Short", True)]))
    text = combined_feedback([passed, failed])
    assert "pages (out/p1.md) failed: overall feedback" in text
    assert "- Clear: Clear is weak" in text
    assert "Short" not in text
    assert combined_feedback([passed]) == ""


# --- self-review ------------------------------------------------------------------------------


@pytest.mark.req("JOBS-REQ-001.4.10")
def test_self_review_file(project: Path, store: Store) -> None:
    request = make_request(store, project)
    tasks = plan_review_tasks(request)
    path = write_self_review_file(request, tasks)
    assert path == project / ".deepwork" / "tmp" / "quality_review_sess_123456_write.md"
    assert (project / ".deepwork" / "tmp" / ".gitignore").read_text() == "*\n"
    text = path.read_text()
    for expected in [
        "independent reviewer",
        "## Review 1 of 3",
        "- **Complete**: Is the work complete?",
        "- **Report spec: Summary first**: Does it open with a summary?",
        "- **Clear**: Is the page clear?",
        "- `out/report.md`",
        "- `out/p2.md`",
        "- `out/notes.md`",  # input from the earlier step
        "Read the pages slowly.",
        "I wrote it carefully.",
        "Overall: PASSED",
        "quality_review_override_reason",
    ]:
        assert expected in text
    assert "the report" not in text  # paths only, never contents
    feedback = self_review_feedback(path)
    assert str(path) in feedback
    assert "quality_review_override_reason" in feedback
    assert "sub-agent" in feedback


def test_self_review_file_is_rewritten_not_appended(project: Path, store: Store) -> None:
    request = make_request(store, project)
    tasks = plan_review_tasks(request)
    first = write_self_review_file(request, tasks).read_text()
    second = write_self_review_file(request, tasks).read_text()
    assert first == second


def test_self_review_refuses_a_bad_session_id(project: Path, store: Store) -> None:
    # A checkpoint carries a parsed `SessionId`: a bad id stops before any checkpoint is made.
    def review_file_of(session_id: str) -> Path:
        request = make_request(store, project, session_id=parse_session_id(session_id))
        return write_self_review_file(request, plan_review_tasks(request))

    with pytest.raises(DeepWorkError) as exc:
        review_file_of("../../escape")
    assert exc.value.code == "identifier.invalid"
    assert not (project / ".deepwork" / "tmp").exists()


def test_project_root_given_through_a_symlink_still_reads_files(
    project: Path, store: Store
) -> None:
    alias = project.parent / "alias"
    alias.symlink_to(project)
    request = make_request(store, project, project_root=alias)
    assert request.project_root == project
    payload = build_review_payload(request, plan_review_tasks(request)[0])
    assert "the report" in payload
