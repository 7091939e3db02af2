"""Background reviews through the real server over stdio (docs/quality-gate.md, "Background
reviews"): `deepwork serve` as a subprocess with the scripted reviewer CLIs first on its PATH,
each test once per runner (`claude`, `codex`, `gemini`).

The long review is the double's `gated` mode: it waits until the test releases it, so a review
"takes 90 s" exactly as long as the test says, without the test sleeping.
"""

from __future__ import annotations

import json
import os
import re
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable
from contextlib import suppress
from pathlib import Path
from typing import Any

import pytest
from deepwork_core.state.event_kinds import ReviewVerdictEvent
from deepwork_core.state.events import read_events
from deepwork_core.state.sessions import SessionStore
from deepwork_core.state.store.port import Store

from tests.fixtures.reviewer import ScriptedReviewer
from tests.fixtures.stdio_server import Server, serve
from tests.fixtures.workflow_project import make_project, write_files

WAIT_SECONDS = 2
#: What a call may take beyond `wait_seconds` (docs/quality-gate.md).
GRACE_SECONDS = 2
APPENDICES = [f"a{n}.md" for n in range(1, 10)]


@pytest.fixture
def root(tmp_path: Path, runner: str) -> Path:
    root = make_project(tmp_path / "project")
    (root / ".deepwork" / "config.yml").write_text(
        "quality_gate:\n"
        f"  external_runner: {runner}\n"
        f"  wait_seconds: {WAIT_SECONDS}\n"
        "  max_parallel: 10\n"
        "  deepreview_rules: false\n"
    )
    return root


def state(make_store: Callable[..., Store], root: Path, session_id: str) -> dict[str, Any]:
    """The session as the store holds it (sessions are rows of the store)."""
    data: dict[str, Any] = (
        SessionStore(make_store(root), root).load(session_id).model_dump(mode="json")
    )
    return data


def job_rows(root: Path) -> list[tuple[str, str, int]]:
    """(what it judges, state, claims) of every review job in the store, oldest first."""
    db = sqlite3.connect(root / ".deepwork/tmp/deepwork.sqlite3")
    try:
        rows = db.execute(
            "SELECT payload, state, attempts FROM review_jobs ORDER BY enqueued_at, job_id"
        ).fetchall()
    finally:
        db.close()
    return [(json.loads(a)["label"], str(b), int(c)) for a, b, c in rows]


async def timed_finish(server: Server, **outputs: Any) -> tuple[dict[str, Any], float]:
    started = time.monotonic()
    answer = await server.ok("finished_step", outputs=outputs)
    return answer, time.monotonic() - started


async def start(server: Server, root: Path) -> str:
    started = await server.ok("start_workflow", goal="g", job_name="reviewed", workflow_name="main")
    write_files(root, "report.md", "final.md", *APPENDICES)
    session_id: str = started["begin_step"]["session_id"]
    return session_id


@pytest.mark.slow
async def test_a_long_review_answers_reviewing_then_the_third_call_its_verdict(
    root: Path, scripted_reviewer: ScriptedReviewer, runner: str, make_store: Callable[..., Store]
) -> None:
    scripted_reviewer.answer("gated")
    async with serve(root, env=scripted_reviewer.env) as server:
        session_id = await start(server, root)
        first, took = await timed_finish(server, report="report.md")
        assert first["status"] == "reviewing", first
        assert took < WAIT_SECONDS + GRACE_SECONDS
        [review] = first["reviews"]
        assert review["judges"] == "write: all outputs"
        assert review["state"] in ("queued", "running")
        assert "same outputs" in first["feedback"]
        # The price before the run, per review and in total, with its basis.
        assert review["expected"]["basis"] == "estimated from size"
        assert first["price"]["basis"] == "1 estimated from size"
        assert review["expected"]["tokens"] == first["price"]["tokens"] > 0
        assert f"Reviews {first['price']['text']}." in first["feedback"]

        second, took = await timed_finish(server, report="report.md")
        assert second["status"] == "reviewing"
        assert took < WAIT_SECONDS + GRACE_SECONDS
        assert [r["review_id"] for r in second["reviews"]] == [review["review_id"]]
        listed = await server.ok("get_active_workflow")
        assert listed["stack"][0]["attempts"] == 0  # reviewing is never an attempt

        scripted_reviewer.release()
        third, _ = await timed_finish(server, report="report.md")
        assert third["status"] == "next_step", third
    [call] = scripted_reviewer.calls()  # the second call joined the review in flight
    assert call["program"] == runner
    session = state(make_store, root, session_id)
    assert [(e["kind"], e["attempt"], e["passed"]) for e in session["quality_log"]] == [
        ("review", 1, True)
    ]
    assert session["step_progress"]["write"]["quality_attempts"] == 1
    assert job_rows(root) == [("write: all outputs", "done", 1)]


@pytest.mark.slow
async def test_changed_outputs_cancel_the_reviews_in_flight(
    root: Path, scripted_reviewer: ScriptedReviewer
) -> None:
    scripted_reviewer.answer("gated")
    async with serve(root, env=scripted_reviewer.env) as server:
        await start(server, root)
        first, _ = await timed_finish(server, report="report.md")
        assert first["status"] == "reviewing"
        [old] = first["reviews"]
        (root / "report.md").write_text("a better report\n")
        second, took = await timed_finish(server, report="report.md")
        assert second["status"] == "reviewing"
        assert took < WAIT_SECONDS + GRACE_SECONDS
        [new] = second["reviews"]
        assert new["review_id"] != old["review_id"]
        scripted_reviewer.release()
        third, _ = await timed_finish(server, report="report.md")
        assert third["status"] == "next_step", third
    assert job_rows(root) == [
        ("write: all outputs", "cancelled", 1),
        ("write: all outputs", "done", 1),
    ]
    first_pid = scripted_reviewer.calls()[0]["pid"]
    with pytest.raises(ProcessLookupError):  # the cancelled review's process was stopped
        os.kill(first_pid, 0)
    reviewed = [call["stdin"] for call in scripted_reviewer.calls()]
    assert "a better report" in reviewed[-1]


class _Killed(Exception):
    pass


@pytest.mark.slow
async def test_ten_reviews_survive_a_killed_server_with_ten_verdicts(
    root: Path, scripted_reviewer: ScriptedReviewer, make_store: Callable[..., Store]
) -> None:
    outputs = {"final": "final.md", "appendix": APPENDICES}
    with suppress(Exception):  # the first client loses its server mid-review
        async with serve(root, "first", env=scripted_reviewer.env) as first:
            session_id = await start(first, root)
            assert (await first.ok("finished_step", outputs={"report": "report.md"}))[
                "status"
            ] == "next_step"
            scripted_reviewer.answer("gated")
            answer = await first.ok("finished_step", outputs=outputs)
            assert answer["status"] == "reviewing"
            assert len(answer["reviews"]) == 10
            for _ in range(10):  # each call waits wait_seconds: no sleeping here
                if len(scripted_reviewer.calls()) == 11:
                    break
                await first.ok("finished_step", outputs=outputs)
            assert len(scripted_reviewer.calls()) == 11  # all ten run at once
            os.kill(first.pid, signal.SIGKILL)
            raise _Killed
    assert {state for _, state, _ in job_rows(root)[1:]} == {"claimed"}
    async with serve(root, "second", env=scripted_reviewer.env) as second:
        again = await second.ok("finished_step", outputs=outputs)
        assert again["status"] == "reviewing"
        assert [r["review_id"] for r in again["reviews"]] == [
            r["review_id"] for r in answer["reviews"]
        ]
        for _ in range(20):  # the dead server's leases run out, then its jobs are claimed again
            if len(scripted_reviewer.calls()) == 21:
                break
            await second.ok("finished_step", outputs=outputs)
        assert len(scripted_reviewer.calls()) == 21
        scripted_reviewer.release()
        done = again
        for _ in range(5):
            done = await second.ok("finished_step", outputs=outputs)
            if done["status"] != "reviewing":
                break
        assert done["status"] == "workflow_complete", done
    rows = job_rows(root)
    assert len(rows) == 11
    assert all(row_state == "done" for _, row_state, _ in rows)
    assert [tries for _, _, tries in rows[1:]] == [2] * 10  # claimed again once each
    log = state(make_store, root, session_id)["quality_log"]
    assert [(e["kind"], e["passed"], len(e["reviews"])) for e in log] == [
        ("review", True, 1),
        ("review", True, 10),
    ]
    verdicts = [
        event
        for event in read_events(make_store(root), session_id)
        if isinstance(event, ReviewVerdictEvent) and event.step_id == "polish"
    ]
    assert len(verdicts) == 10


#: The scaled "90 s review": it lasts between two and three `wait_seconds`, as 90 s does for
#: `wait_seconds: 40`, with 2 s of margin on each side for a loaded machine. At real scale the
#: test would hold CI for 90 s per runner; the `gated` test above covers any length.
LONG_WAIT_SECONDS = 4
LONG_REVIEW_SECONDS = 10


@pytest.mark.slow
async def test_a_review_longer_than_two_waits_answers_reviewing_twice_then_its_verdict(
    root: Path, scripted_reviewer: ScriptedReviewer, runner: str, make_store: Callable[..., Store]
) -> None:
    config = (root / ".deepwork" / "config.yml").read_text()
    (root / ".deepwork" / "config.yml").write_text(
        config.replace(f"wait_seconds: {WAIT_SECONDS}", f"wait_seconds: {LONG_WAIT_SECONDS}")
    )
    scripted_reviewer.take(LONG_REVIEW_SECONDS)
    async with serve(root, env=scripted_reviewer.env) as server:
        session_id = await start(server, root)
        answers = []
        for _ in range(3):
            answer, took = await timed_finish(server, report="report.md")
            assert took < LONG_WAIT_SECONDS + GRACE_SECONDS, (answer["status"], took)
            answers.append(answer["status"])
    assert answers == ["reviewing", "reviewing", "next_step"]
    [call] = scripted_reviewer.calls()
    assert call["program"] == runner
    log = state(make_store, root, session_id)["quality_log"]
    assert [(e["kind"], e["attempt"], e["passed"]) for e in log] == [("review", 1, True)]


@pytest.mark.slow
async def test_each_finished_review_is_a_progress_notification_to_a_client_that_asked(
    root: Path, scripted_reviewer: ScriptedReviewer
) -> None:
    """The official client's progress callback gets one notification per finished review of
    the call, counting up to all of them, each naming the review and how it went."""
    outputs = {"final": "final.md", "appendix": APPENDICES}
    async with serve(root, env=scripted_reviewer.env) as server:
        await start(server, root)
        assert (await server.ok("finished_step", outputs={"report": "report.md"}))[
            "status"
        ] == "next_step"
        scripted_reviewer.answer("gated")
        scripted_reviewer.answer("fail", when="a3.md")
        first = await server.ok("finished_step", outputs=outputs)
        assert first["status"] == "reviewing"
        scripted_reviewer.release()
        for _ in range(10):
            heard: list[tuple[float, float | None, str | None]] = []

            async def on_progress(done: float, total: float | None, message: str | None) -> None:
                heard.append((done, total, message))  # noqa: B023 (read before the next call)

            result = await server.session.call_tool(
                "finished_step", {"outputs": outputs}, progress_callback=on_progress
            )
            assert not result.is_error
            answer = result.structured_content or {}
            if answer.get("status") != "reviewing":
                break
        assert answer["status"] == "needs_work", answer
    assert [(done, total) for done, total, _ in heard] == [(n, 10) for n in range(1, 11)]
    assert all(re.search(r"; [\d,]+ tokens so far$", message or "") for _, _, message in heard)
    messages = [(message or "").rsplit("; ", 1)[0] for _, _, message in heard]
    assert sorted(messages) == sorted(
        [
            f"review polish: output 'appendix' ({name}): passed"
            for name in APPENDICES
            if name != "a3.md"
        ]
        + [
            "review polish: output 'appendix' (a3.md): failed",
            "review polish: output 'final': passed",
        ]
    )


def cli_json(root: Path, *command: str) -> Any:
    """`deepwork <command> --json --path root` as its own process, its output parsed."""
    done = subprocess.run(
        [sys.executable, "-m", "deepwork_mcp", *command, "--json", "--path", str(root)],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return json.loads(done.stdout)


def write_step_stats(root: Path) -> dict[str, Any]:
    [job] = [job for job in cli_json(root, "stats")["jobs"] if job["job"] == "reviewed"]
    [step] = [step for step in job["steps"] if step["step"] == "write"]
    return dict(step)


@pytest.mark.slow
async def test_reviewing_is_never_an_attempt_in_the_stack_status_stats_or_max_attempts(
    root: Path, scripted_reviewer: ScriptedReviewer, make_store: Callable[..., Store]
) -> None:
    config = (root / ".deepwork" / "config.yml").read_text()
    (root / ".deepwork" / "config.yml").write_text(config + "  max_attempts: 2\n")
    scripted_reviewer.answer("gated_fail")
    async with serve(root, env=scripted_reviewer.env) as server:
        session_id = await start(server, root)
        for _ in range(3):
            answer = await server.ok("finished_step", outputs={"report": "report.md"})
            assert answer["status"] == "reviewing"
        assert (await server.ok("get_active_workflow"))["stack"][0]["attempts"] == 0
        [stack] = cli_json(root, "status")["stacks"]
        assert [entry["attempts"] for entry in stack["entries"]] == [0]
        assert write_step_stats(root)["reviewed_runs"] == 0
        scripted_reviewer.release()
        # Three `reviewing` answers, then the first attempt: needs work, not the limit of 2.
        answer = await server.ok("finished_step", outputs={"report": "report.md"})
        assert answer["status"] == "needs_work", answer
        assert (await server.ok("get_active_workflow"))["stack"][0]["attempts"] == 1
        [stack] = cli_json(root, "status")["stacks"]
        assert [entry["attempts"] for entry in stack["entries"]] == [1]
        assert write_step_stats(root)["mean_attempts"] == 1
        (root / "report.md").write_text("a second try\n")
        scripted_reviewer.answer("fail")
        for _ in range(5):  # the second attempt is the last
            result = await server.session.call_tool(
                "finished_step", {"outputs": {"report": "report.md"}}
            )
            if (result.structured_content or {}).get("status") != "reviewing":
                break
        assert result.is_error
        assert "quality_gate.max_attempts" in str(result.content)
    log = state(make_store, root, session_id)["quality_log"]
    assert [(e["kind"], e["attempt"], e["passed"]) for e in log] == [
        ("review", 1, False),
        ("review", 2, False),
    ]


#: What a host reads before the first call: tools/list and the instructions, at most 7,000
#: bytes (issue 30), less the JSON-RPC envelope around the listing (34 bytes).
LISTING_BUDGET = 7000 - 34


async def test_reviewing_needs_no_new_tool_and_the_listing_stays_within_its_budget(
    tmp_path: Path,
) -> None:
    """As the Claude Code plugin starts it (`--external-runner claude`), over real stdio: the
    `reviewing` status is one value of `finished_step`'s answer, not another tool."""
    root = make_project(tmp_path / "project")
    async with serve(root, "listing", "--external-runner", "claude") as server:
        listing = await server.session.list_tools()
        init = await server.session.initialize()
    tools = {tool.name: tool for tool in listing.tools}
    assert sorted(tools) == [  # the tools of before background reviews, and no other
        "abort_workflow",
        "finished_step",
        "get_active_workflow",
        "get_configured_reviews",
        "get_review_instructions",
        "get_workflows",
        "go_to_step",
        "mark_review_as_passed",
        "start_workflow",
    ]
    schema = json.dumps(tools["finished_step"].output_schema)
    assert '"reviewing"' in schema
    size = len(listing.model_dump_json(by_alias=True, exclude_none=True).encode())
    size += len((init.instructions or "").encode())
    assert size <= LISTING_BUDGET, size
