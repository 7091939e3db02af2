"""The quality gate end to end through the tools (JOBS-REQ-001.4.8–001.4.14, docs/quality-gate.md).

Self-review mode writes the review file; external mode runs a fake reviewer CLI (a real
subprocess, first on PATH) that records its argv and stdin, so the tests see exactly what a
reviewer got. The external tests run once per runner (`claude`, `codex`, `gemini`), each double
answering in its CLI's format.
"""

from __future__ import annotations

import re
import shutil
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest
from deepwork_core.state.store.port import Store
from deepwork_mcp.server import create_server
from fastmcp import Client

from tests.fixtures.configs import config
from tests.fixtures.reviewer import RUNNERS, ScriptedReviewer
from tests.fixtures.state_rows import session_json
from tests.fixtures.tool_calls import call_error, call_ok
from tests.fixtures.workflow_project import make_project, write_files


@pytest.fixture
def root(tmp_path: Path) -> Path:
    return make_project(tmp_path / "project")


def review_brief(call: dict[str, Any]) -> str:
    """The criteria, guidance and notes: the start of stdin, before the files."""
    stdin: str = call["stdin"]
    return stdin.split("====================", 1)[0]


def state(store: Store, session_id: str) -> dict[str, Any]:
    data: dict[str, Any] = session_json(store, session_id)
    return data


#: What the command line of each runner must hold (docs/quality-gate.md).
ARGV_HAS = {
    "claude": ["--print", "--output-format", "stream-json", "--verbose", "--json-schema"],
    "codex": ["exec", "--json", "--output-schema", "--sandbox", "read-only", "--ephemeral"],
    "gemini": ["--output-format", "stream-json", "--approval-mode", "default", "--prompt"],
}
#: The code of a reviewer that is not logged in, and the words its message carries.
NOT_LOGGED_IN = {
    "claude": ("quality_gate.is_error", "Not logged in"),
    "codex": ("quality_gate.execution_error", "401 Unauthorized"),
    "gemini": ("quality_gate.is_error", "Auth method"),
}


@pytest.fixture
async def external(
    root: Path, reviewer_on_path: ScriptedReviewer, runner: str
) -> AsyncIterator[Client[Any]]:
    server = create_server(root, config(external_runner=runner, max_attempts=3))
    async with Client(server) as client:
        yield client


async def start_reviewed(client: Client[Any], root: Path) -> str:
    started = await call_ok(
        client, "start_workflow", goal="g", job_name="reviewed", workflow_name="main"
    )
    write_files(root, "report.md", "final.md", "a1.md", "a2.md")
    session_id: str = started["begin_step"]["session_id"]
    return session_id


# --- self-review mode ----------------------------------------------------------------------------


@pytest.mark.req("JOBS-REQ-001.4.8")
@pytest.mark.req("JOBS-REQ-001.4.10")
async def test_self_review_writes_the_review_file_and_needs_work(
    root: Path, make_store: Callable[..., Store]
) -> None:
    server = create_server(root, config())
    async with Client(server) as client:
        session_id = await start_reviewed(client, root)
        result = await call_ok(
            client, "finished_step", outputs={"report": "report.md"}, notes="my notes"
        )
        assert result["status"] == "needs_work"
        review_file = root / ".deepwork/tmp" / f"quality_review_{session_id}_write.md"
        assert review_file.is_file()
        text = review_file.read_text()
        assert "Does the report cover the topic?" in text
        assert "`report.md`" in text
        assert "my notes" in text
        assert str(review_file) in result["feedback"]
        assert "sub-agent" in result["feedback"]
        assert "quality_review_override_reason" in result["feedback"]
        # Still on the same step; asking again gives the same answer.
        again = await call_ok(client, "finished_step", outputs={"report": "report.md"})
        assert again["status"] == "needs_work"
        assert again["stack"][0]["step"] == "write"

        done = await call_ok(
            client,
            "finished_step",
            outputs={"report": "report.md"},
            quality_review_override_reason="A sub-agent reviewed it: every criterion passed.",
        )
        assert done["status"] == "next_step"
    log = state(make_store(root), session_id)["quality_log"]
    assert [entry["kind"] for entry in log] == ["self_review", "self_review", "override"]
    assert log[0]["review_file"] == f".deepwork/tmp/quality_review_{session_id}_write.md"
    assert log[2]["override_reason"] == "A sub-agent reviewed it: every criterion passed."


async def test_self_review_lists_inputs_from_earlier_steps(root: Path) -> None:
    server = create_server(root, config())
    async with Client(server) as client:
        session_id = await start_reviewed(client, root)
        await call_ok(
            client,
            "finished_step",
            outputs={"report": "report.md"},
            quality_review_override_reason="ok",
        )
        await call_ok(client, "finished_step", outputs={"final": "final.md"})
    text = (root / ".deepwork/tmp" / f"quality_review_{session_id}_polish.md").read_text()
    assert "Inputs from earlier steps" in text
    assert "`report.md`" in text
    assert "Compare with the report from the write step." in text


# --- external runner: verdicts ------------------------------------------------------------------


@pytest.mark.req("JOBS-REQ-001.4.8")
@pytest.mark.req("JOBS-REQ-001.4.14")
async def test_passing_review_advances(
    external: Client[Any],
    root: Path,
    reviewer_on_path: ScriptedReviewer,
    runner: str,
    make_store: Callable[..., Store],
) -> None:
    session_id = await start_reviewed(external, root)
    progress: list[tuple[float, float | None, str | None]] = []

    async def on_progress(done: float, total: float | None, message: str | None) -> None:
        progress.append((done, total, message))

    result = await external.call_tool(
        "finished_step", {"outputs": {"report": "report.md"}}, progress_handler=on_progress
    )
    assert result.structured_content is not None
    assert result.structured_content["status"] == "next_step"
    [call] = reviewer_on_path.calls()
    assert call["program"] == runner
    argv = call["argv"]
    assert all(arg in argv for arg in ARGV_HAS[runner])
    if runner == "claude":
        assert argv[-2:] == ["-p", "--"]
    assert call["cwd"] == str(root)
    assert "==================== BEGIN OUTPUTS ====================" in call["stdin"]
    assert "content\nreport.md" in call["stdin"]
    assert "BEGIN INPUTS" not in call["stdin"]  # the first step has no file inputs
    assert "Does the report cover the topic?" in review_brief(call)
    assert progress
    assert progress[-1][:2] == (1, 1)
    # Issue 43, item 15: each notification carries the tokens the run's reviews used so far.
    tokens = re.search(r"; ([\d,]+) tokens so far$", progress[-1][2] or "")
    assert tokens is not None, progress[-1][2]
    log = state(make_store(root), session_id)["quality_log"]
    assert [(e["kind"], e["attempt"], e["passed"]) for e in log] == [("review", 1, True)]
    assert log[0]["reviews"][0]["criteria_results"][0]["criterion"] == "Complete"


@pytest.mark.req("JOBS-REQ-001.4.11")
@pytest.mark.req("JOBS-REQ-001.4.12")
@pytest.mark.req("JOBS-REQ-001.4.13")
async def test_failing_reviews_count_attempts_then_error_at_the_limit(
    external: Client[Any],
    root: Path,
    reviewer_on_path: ScriptedReviewer,
    make_store: Callable[..., Store],
) -> None:
    reviewer_on_path.answer("fail")
    session_id = await start_reviewed(external, root)
    for attempt in (1, 2):
        result = await call_ok(external, "finished_step", outputs={"report": "report.md"})
        assert result["status"] == "needs_work"
        assert "The report is too short." in result["feedback"]
        assert "Complete failed" in result["feedback"]
        [review] = result["failed_reviews"]
        assert review["review_run_each"] == "step"
        assert review["passed"] is False
        assert review["target_file"] is None
        assert review["criteria_results"] == [
            {"criterion": "Complete", "passed": False, "feedback": "Complete failed"}
        ]
        assert (
            state(make_store(root), session_id)["step_progress"]["write"]["quality_attempts"]
            == attempt
        )
    text = await call_error(
        external, "finished_step", "quality_gate.max_attempts", outputs={"report": "report.md"}
    )
    assert "3 attempts" in text
    assert "The report is too short." in text
    assert len(reviewer_on_path.calls()) == 3

    reviewer_on_path.answer("pass")
    passed = await call_ok(external, "finished_step", outputs={"report": "report.md"})
    assert passed["status"] == "next_step"
    log = state(make_store(root), session_id)["quality_log"]
    assert [(e["kind"], e["attempt"], e["passed"]) for e in log] == [
        ("review", 1, False),
        ("review", 2, False),
        ("review", 3, False),
        ("review", 4, True),
    ]


@pytest.mark.req("JOBS-REQ-001.4.9")
async def test_override_skips_the_reviewer_and_is_recorded(
    external: Client[Any],
    root: Path,
    reviewer_on_path: ScriptedReviewer,
    make_store: Callable[..., Store],
) -> None:
    session_id = await start_reviewed(external, root)
    result = await call_ok(
        external,
        "finished_step",
        outputs={"report": "report.md"},
        quality_review_override_reason="trivial change",
    )
    assert result["status"] == "next_step"
    assert reviewer_on_path.calls() == []
    [entry] = state(make_store(root), session_id)["quality_log"]
    assert (entry["kind"], entry["override_reason"]) == ("override", "trivial change")


async def test_inputs_from_earlier_steps_are_in_the_payload(
    external: Client[Any], root: Path, reviewer_on_path: ScriptedReviewer
) -> None:
    await start_reviewed(external, root)
    (root / "report.md").write_text("THE ORIGINAL REPORT\n")
    await call_ok(external, "finished_step", outputs={"report": "report.md"})
    (root / "final.md").write_text("THE POLISHED TEXT\n")
    result = await call_ok(
        external,
        "finished_step",
        outputs={"final": "final.md", "appendix": ["a1.md", "a2.md"]},
    )
    assert result["status"] == "workflow_complete"
    calls = reviewer_on_path.calls()[1:]
    # One review of `final` and one per appendix file.
    assert len(calls) == 3
    final_call = next(c for c in calls if "Is the text polished?" in review_brief(c))
    payload = final_call["stdin"]
    inputs = payload.index("==================== BEGIN INPUTS ====================")
    outputs = payload.index("==================== BEGIN OUTPUTS ====================")
    assert inputs < payload.index("THE ORIGINAL REPORT") < outputs
    assert payload.index("THE POLISHED TEXT") > outputs
    assert "Compare with the report from the write step." in review_brief(final_call)
    appendix_payloads = [
        c["stdin"] for c in calls if "Is the appendix relevant?" in review_brief(c)
    ]
    assert len(appendix_payloads) == 2
    assert any("a1.md" in p and "a2.md" not in p for p in appendix_payloads)


async def test_doc_spec_criteria_are_added_to_the_review(
    external: Client[Any], root: Path, reviewer_on_path: ScriptedReviewer
) -> None:
    started = await call_ok(
        external, "start_workflow", goal="g", job_name="speced", workflow_name="main"
    )
    assert "Monthly report" in started["begin_step"]["step_instructions"]
    write_files(root, "report.md")
    await call_ok(external, "finished_step", outputs={"report": "report.md"})
    [call] = reviewer_on_path.calls()
    prompt = review_brief(call)
    assert "Is the report accurate?" in prompt
    assert "Monthly report: Has summary" in prompt
    assert "one-paragraph summary" in prompt


async def test_a_doc_spec_without_a_review_is_reviewed_once(
    external: Client[Any], root: Path, reviewer_on_path: ScriptedReviewer
) -> None:
    """Issue 43, item 10: the spec's own review runs once, not twice with the same brief."""
    job = root / ".deepwork" / "jobs" / "speced" / "job.yml"
    text = job.read_text()
    job.write_text(text[: text.index("    reviews:")] + "    reviews: []\n")
    await call_ok(external, "start_workflow", goal="g", job_name="speced", workflow_name="main")
    write_files(root, "report.md")
    done = await call_ok(external, "finished_step", outputs={"report": "report.md"})
    assert done["status"] == "workflow_complete"
    [call] = reviewer_on_path.calls()
    assert "Monthly report: Has summary" in review_brief(call)


# --- external runner: failures, each distinct -----------------------------------------------


#: The code each runner's failure ends with through the server, per mode of the double (each in
#: its CLI's own format): claude names the result's subtype; codex's `turn.failed` is always an
#: execution error; gemini names max turns, and any other error type is an execution error.
FAILURE_CODES = {
    "garbage": ("bad_output", "bad_output", "bad_output"),
    "no_structured": ("bad_output", "bad_output", "bad_output"),
    "exit": ("exit_code", "exit_code", "exit_code"),
    "truncated": ("truncated", "truncated", "truncated"),
    "is_error": ("is_error", "execution_error", "is_error"),
    "error_max_turns": ("max_turns", "execution_error", "max_turns"),
    "error_during_execution": ("execution_error", "execution_error", "execution_error"),
    "error_max_structured_output_retries": (
        "structured_output_retries",
        "execution_error",
        "execution_error",
    ),
    "error_unheard_of": ("unknown_subtype", "execution_error", "execution_error"),
}


@pytest.mark.parametrize("mode", sorted(FAILURE_CODES))
async def test_reviewer_failures_are_distinct_tool_errors(
    external: Client[Any],
    root: Path,
    reviewer_on_path: ScriptedReviewer,
    runner: str,
    mode: str,
    make_store: Callable[..., Store],
) -> None:
    reviewer_on_path.answer(mode)
    session_id = await start_reviewed(external, root)
    code = "quality_gate." + FAILURE_CODES[mode][RUNNERS.index(runner)]
    text = await call_error(external, "finished_step", code, outputs={"report": "report.md"})
    if mode == "is_error":
        assert NOT_LOGGED_IN[runner][1] in text
    if mode == "exit":
        assert "something broke" in text
    if mode.startswith("error_"):
        assert mode in text  # the reviewer's own words reach the agent
    saved = state(make_store(root), session_id)
    # The attempt was recorded before the reviewer ran, and the failure is in the audit trail.
    assert saved["step_progress"]["write"]["quality_attempts"] == 1
    assert [(e["kind"], e["error_code"]) for e in saved["quality_log"]] == [("error", code)]
    assert saved["current_step_ids"] == ["write"]


async def test_missing_reviewer_binary(
    root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    empty = tmp_path / "empty-bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    server = create_server(root, config(external_runner="claude"))
    async with Client(server) as client:
        await start_reviewed(client, root)
        text = await call_error(
            client, "finished_step", "quality_gate.not_installed", outputs={"report": "report.md"}
        )
    assert "claude" in text
    assert "--external-runner none" in text  # issue 43, item 21: the way to self-review


def _alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"  # a zombie is dead, only not yet reaped


@pytest.mark.slow
async def test_reviewer_timeout_kills_the_whole_process_group(
    root: Path, reviewer_on_path: ScriptedReviewer, make_store: Callable[..., Store]
) -> None:
    reviewer_on_path.answer("sleep")
    server = create_server(root, config(external_runner="claude", timeout_seconds=2))
    async with Client(server) as client:
        session_id = await start_reviewed(client, root)
        await call_error(
            client, "finished_step", "quality_gate.timeout", outputs={"report": "report.md"}
        )
    [(_, grandchild)] = reviewer_on_path.processes()
    deadline = time.monotonic() + 10
    while _alive(grandchild) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(grandchild), "the reviewer's child outlived the timeout"
    assert (
        state(make_store(root), session_id)["quality_log"][0]["error_code"]
        == "quality_gate.timeout"
    )


# --- nothing from outside the project reaches a reviewer ---------------------------------------


@pytest.mark.parametrize("path", ["../secret.md", "/etc/passwd", "sub/../../secret.md", "link.md"])
async def test_outside_paths_never_reach_the_reviewer(
    external: Client[Any], root: Path, reviewer_on_path: ScriptedReviewer, path: str
) -> None:
    (root.parent / "secret.md").write_text("TOP SECRET\n")
    (root / "link.md").symlink_to(root.parent / "secret.md")
    await start_reviewed(external, root)
    await call_error(external, "finished_step", "path.outside_project", outputs={"report": path})
    assert reviewer_on_path.calls() == []
    assert shutil.which("claude") is not None  # the reviewer was available, just never called


async def test_a_huge_criterion_reaches_the_reviewer_on_stdin(
    root: Path, reviewer_on_path: ScriptedReviewer
) -> None:
    job = root / ".deepwork" / "jobs" / "reviewed" / "job.yml"
    question = "Is every point covered? " + "Consider this detail. " * 10_000  # ~220 KB
    text = job.read_text().replace("Does the report cover the topic?", question)
    assert question in text
    job.write_text(text)
    server = create_server(root, config(external_runner="claude"))
    async with Client(server) as client:
        await start_reviewed(client, root)
        done = await call_ok(client, "finished_step", outputs={"report": "report.md"})
    assert done["status"] == "next_step"
    [call] = reviewer_on_path.calls()
    assert question.strip() in review_brief(call)
    assert sum(len(arg) for arg in call["argv"]) < 10_000  # argv stays small
