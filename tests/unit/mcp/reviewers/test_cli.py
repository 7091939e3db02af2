"""The external reviewer through real subprocesses: the fake `claude`, `codex` and `gemini` first
on PATH, each call run by the CLI adapter (`CliReviewer`) under the gate's policy
(`ReviewCalls`), several at once by the gate's background workers."""

from __future__ import annotations

import dataclasses
import json
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from deepwork_core.base.config import ReviewBudget
from deepwork_core.base.errors import QualityGateError
from deepwork_core.gate.background import BackgroundReviews
from deepwork_core.gate.calls import ReviewCalls
from deepwork_core.gate.checkpoint import Checkpoint, ResolvedInput
from deepwork_core.gate.quality import (
    REVIEWER_SYSTEM_PROMPT,
    build_review_message,
    plan_review_tasks,
    reply_schema_json,
)
from deepwork_core.gate.review_queue import ReviewPayload
from deepwork_core.jobs.parser import load_job
from deepwork_core.state.event_kinds import ReviewUsageEvent
from deepwork_core.state.events import read_events
from deepwork_core.state.store.port import Store
from deepwork_core.state.store.tables.review_jobs import ReviewJobs
from deepwork_mcp.reviewers.cli import CliReviewer

from tests.fixtures.reviewer import ScriptedReviewer

#: Long enough that a test never waits it out.
LONG = 60.0

JOB_YML = """\
name: demo
version: "1.0.0"
summary: Demo job
common_job_info_provided_to_all_steps_at_runtime: Shared.
workflows:
  - name: main
    summary: Main
    steps: [gather, write]
steps:
  - id: gather
    name: Gather
    description: Gather
    instructions_file: steps/gather.md
    outputs:
      notes: {type: file, description: Notes, required: true}
    reviews: []
  - id: write
    name: Write
    description: Write
    instructions_file: steps/write.md
    inputs:
      - file: notes
        from_step: gather
    dependencies: [gather]
    outputs:
      report: {type: file, description: Report, required: true}
      pages: {type: files, description: Pages, required: false}
    reviews:
      - run_each: step
        quality_criteria:
          Cited: Are sources cited?
          Clear: Is it clear?
      - run_each: pages
        quality_criteria:
          Short: Is the page short?
"""


class Env:
    def __init__(self, root: Path, fake: ScriptedReviewer, store: Store) -> None:
        self.root = root
        self.fake = fake
        self.vars = fake.env
        self.store = store

    def reviewer(self, runner: str = "claude", **policy: Any) -> ReviewCalls:
        """The gate's calls through the CLI adapter of `runner`, the fake first on PATH; no
        verdict reused unless `policy` says (each call here must reach the CLI)."""
        policy = {"reuse": "off", **policy}
        return ReviewCalls(CliReviewer(runner, env=self.vars), **policy)

    def calls(self) -> list[dict[str, Any]]:
        return self.fake.calls()

    def request(self, pages: list[str] | None = None) -> Checkpoint:
        job_dir = self.root / ".deepwork" / "jobs" / "demo"
        outputs: dict[str, str | list[str]] = {"report": "out/report.md"}
        if pages is not None:
            outputs["pages"] = pages
        return Checkpoint(
            project_root=self.root,
            store=self.store,
            session_id="sess_abcdef",
            job=load_job(job_dir),
            step_ids=("write",),
            outputs=outputs,
            input_files=[ResolvedInput("write", "notes", None, "gather", ["notes.md"])],
            notes="author notes here",
        )


@pytest.fixture
def env(
    tmp_path: Path, scripted_reviewer: ScriptedReviewer, make_store: Callable[..., Store]
) -> Env:
    root = (tmp_path / "project").resolve()
    job_dir = root / ".deepwork" / "jobs" / "demo"
    (job_dir / "steps").mkdir(parents=True)
    (job_dir / "job.yml").write_text(JOB_YML)
    for step in ("gather", "write"):
        (job_dir / "steps" / f"{step}.md").write_text("Do it.\n")
    (root / "out").mkdir()
    (root / "out" / "report.md").write_text("The report.\n")
    (root / "notes.md").write_text("The notes.\n")
    return Env(root, scripted_reviewer, make_store(root))


@contextmanager
def background(env: Env, calls: ReviewCalls, max_parallel: int) -> Iterator[BackgroundReviews]:
    """The gate's background workers over the project's store."""
    job = env.request().job
    jobs = ReviewJobs(env.store, ReviewPayload)
    reviews = BackgroundReviews(env.root, calls, lambda _name: job, max_parallel, jobs=jobs)
    try:
        yield reviews
    finally:
        reviews.close()


def write_pages(env: Env, count: int) -> list[str]:
    """`count` page files under `out/`, their project-relative paths."""
    pages = []
    for number in range(count):
        (env.root / "out" / f"p{number}.md").write_text(f"page {number}\n")
        pages.append(f"out/p{number}.md")
    return pages


def judge_all(calls: ReviewCalls, request: Checkpoint, tasks: list[Any]) -> list[Any]:
    """The verdict of each task, one after the other, in this thread."""
    return [calls.judge(request, task, threading.Event()) for task in tasks]


def set_mode(env: Env, mode: str) -> None:
    env.fake.answer(mode)


def run(env: Env, reviewer: ReviewCalls, request: Checkpoint) -> list[Any]:
    return judge_all(reviewer, request, plan_review_tasks(request))


def process_gone(pid: int) -> bool:
    """True when `pid` no longer runs (absent, or a zombie waiting for init to reap it)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return True
    return stat.rsplit(")", 1)[1].split()[0] in {"Z", "X"}


def assert_all_gone(pids: list[int]) -> None:
    deadline = time.monotonic() + 10
    while not all(process_gone(pid) for pid in pids) and time.monotonic() < deadline:
        time.sleep(0.02)  # SIGKILL delivery is asynchronous; poll briefly for the exit
    assert [pid for pid in pids if not process_gone(pid)] == []


def recorded_pids(env: Env) -> list[int]:
    return [pid for pair in env.fake.processes() for pid in pair]


# --- outcomes ---------------------------------------------------------------------------------


def test_pass_sends_exact_argv_and_payload_on_stdin(env: Env) -> None:
    request = env.request()
    tasks = plan_review_tasks(request)
    verdicts = judge_all(env.reviewer(), request, tasks)

    assert [v.passed for v in verdicts] == [True]
    assert [r.criterion for r in verdicts[0].criteria_results] == ["Cited", "Clear"]
    [call] = env.calls()
    assert call["argv"] == [
        "--print",
        "--output-format",
        "stream-json",
        "--verbose",
        "--system-prompt",
        REVIEWER_SYSTEM_PROMPT,
        "--json-schema",
        reply_schema_json(tasks[0]),
        "-p",
        "--",
    ]
    assert call["stdin"] == build_review_message(request, tasks[0])
    assert "The notes." in call["stdin"]  # input from the earlier step
    assert "The report." in call["stdin"]
    assert Path(call["cwd"]).resolve() == env.root


def test_fail_gives_failed_verdict_with_criteria(env: Env) -> None:
    set_mode(env, "fail_first")
    [verdict] = run(env, env.reviewer(), env.request())
    assert verdict.passed is False  # computed from the criteria, the reply's flag said True
    assert verdict.feedback == "reviewed"
    failed = [r for r in verdict.criteria_results if not r.passed]
    assert [(r.criterion, r.feedback) for r in failed] == [("Cited", "needs sources")]


@pytest.mark.parametrize(
    ("mode", "code"),
    [
        ("garbage", "quality_gate.bad_output"),
        ("no_structured", "quality_gate.bad_output"),
        ("bad_schema", "quality_gate.bad_output"),
        ("is_error", "quality_gate.is_error"),
        ("exit", "quality_gate.exit_code"),
        ("flood", "quality_gate.output_too_large"),
        ("truncated", "quality_gate.truncated"),
        ("error_max_budget_usd", "quality_gate.budget_exhausted"),
        ("error_max_turns", "quality_gate.max_turns"),
        ("error_during_execution", "quality_gate.execution_error"),
        ("error_max_structured_output_retries", "quality_gate.structured_output_retries"),
        ("error_unheard_of", "quality_gate.unknown_subtype"),
    ],
)
def test_broken_replies_have_distinct_codes(env: Env, mode: str, code: str) -> None:
    set_mode(env, mode)
    with pytest.raises(QualityGateError) as exc:
        run(env, env.reviewer(), env.request())
    assert exc.value.code == code
    if mode == "is_error":
        assert "Invalid API key" in exc.value.message
    if mode == "exit":
        assert "3" in exc.value.message
        assert "something broke" in exc.value.message
    if mode.startswith("error_"):
        assert f"subtype {mode}" in exc.value.message  # the reviewer's own words, bounded


#: The code codex's and gemini's doubles end with, per broken reply, in their CLIs' formats:
#: every codex `turn.failed` is an execution error; gemini names max turns and a missing login.
OTHER_RUNNER_CODES = {
    "garbage": ("bad_output", "bad_output"),
    "no_structured": ("bad_output", "bad_output"),
    "bad_schema": ("bad_output", "bad_output"),
    "is_error": ("execution_error", "is_error"),
    "exit": ("exit_code", "exit_code"),
    "flood": ("output_too_large", "output_too_large"),
    "truncated": ("truncated", "truncated"),
    "error_max_turns": ("execution_error", "max_turns"),
    "error_during_execution": ("execution_error", "execution_error"),
    "error_unheard_of": ("execution_error", "execution_error"),
}


@pytest.mark.parametrize("mode", sorted(OTHER_RUNNER_CODES))
@pytest.mark.parametrize("runner", ["codex", "gemini"])
def test_codex_and_gemini_broken_replies_have_distinct_codes(
    env: Env, runner: str, mode: str
) -> None:
    set_mode(env, mode)
    with pytest.raises(QualityGateError) as exc:
        run(env, env.reviewer(runner=runner), env.request())
    codex_code, gemini_code = OTHER_RUNNER_CODES[mode]
    assert exc.value.code == f"quality_gate.{codex_code if runner == 'codex' else gemini_code}"
    assert {call["program"] for call in env.calls()} == {runner}


@pytest.mark.parametrize("runner", ["codex", "gemini"])
def test_codex_and_gemini_verdicts_are_computed_and_reasked_like_claudes(
    env: Env, runner: str
) -> None:
    set_mode(env, "partial_once")
    [verdict] = run(env, env.reviewer(runner=runner), env.request())
    assert verdict.passed is True
    assert len(env.calls()) == 2  # the incomplete reply was asked again once
    set_mode(env, "fail_first")
    [verdict] = run(env, env.reviewer(runner=runner), env.request())
    assert verdict.passed is False  # the reply's own flag said passed


def test_a_reply_missing_a_criterion_is_asked_again_once(env: Env) -> None:
    set_mode(env, "partial_once")
    [verdict] = run(env, env.reviewer(), env.request())
    assert verdict.passed is True
    assert len(env.calls()) == 2


def test_a_criterion_left_unjudged_twice_fails_naming_it(env: Env) -> None:
    set_mode(env, "partial")  # answers "Something else" instead of the last criterion
    [verdict] = run(env, env.reviewer(), env.request())
    assert len(env.calls()) == 2
    assert verdict.passed is False
    [failed] = [r for r in verdict.criteria_results if not r.passed]
    assert failed.criterion == "Clear"
    assert "unjudged" in (failed.feedback or "")


def test_missing_binary(env: Env, tmp_path: Path) -> None:
    empty = tmp_path / "empty-bin"
    empty.mkdir()
    env.vars["PATH"] = str(empty)
    with pytest.raises(QualityGateError) as exc:
        run(env, env.reviewer(), env.request())
    assert exc.value.code == "quality_gate.not_installed"
    absolute = CliReviewer(executable=str(tmp_path / "nowhere" / "claude"), env=env.vars)
    with pytest.raises(QualityGateError) as exc:
        run(env, ReviewCalls(absolute), env.request())
    assert exc.value.code == "quality_gate.not_installed"
    assert env.calls() == []


def test_executable_is_looked_up_on_path_at_call_time(
    env: Env, monkeypatch: pytest.MonkeyPatch
) -> None:
    reviewer = ReviewCalls(CliReviewer())  # inherits our environment
    env.fake.install(monkeypatch)
    [verdict] = run(env, reviewer, env.request())
    assert verdict.passed is True


def test_no_tasks_runs_nothing(env: Env) -> None:
    with background(env, env.reviewer(), max_parallel=4) as reviews:
        assert reviews.run(env.request(), [], LONG) == ()
    assert env.calls() == []


# --- bounds -----------------------------------------------------------------------------------


@pytest.mark.slow
def test_timeout_kills_the_whole_process_group(env: Env) -> None:
    set_mode(env, "sleep")
    reviewer = env.reviewer(base_timeout=3)
    with pytest.raises(QualityGateError) as exc:
        run(env, reviewer, env.request())
    assert exc.value.code == "quality_gate.timeout"
    pids = recorded_pids(env)
    assert len(pids) == 2  # the fake and its `sleep` child
    assert_all_gone(pids)


@pytest.mark.slow
def test_cancellation_kills_the_process_group(env: Env) -> None:
    set_mode(env, "sleep")
    reviewer = env.reviewer(base_timeout=120)
    [task] = plan_review_tasks(env.request())
    cancelled = threading.Event()
    errors: list[QualityGateError] = []

    def judge() -> None:
        try:
            reviewer.judge(env.request(), task, cancelled)
        except QualityGateError as exc:
            errors.append(exc)

    worker = threading.Thread(target=judge)
    worker.start()
    deadline = time.monotonic() + 20
    while not env.fake.processes() and time.monotonic() < deadline:
        time.sleep(0.02)  # wait until the fake has started its child
    cancelled.set()
    worker.join(timeout=30)
    assert not worker.is_alive()
    assert [error.code for error in errors] == ["quality_gate.error"]
    pids = recorded_pids(env)
    assert len(pids) == 2
    assert_all_gone(pids)


@pytest.mark.slow
def test_first_failure_cancels_the_other_reviewers(env: Env) -> None:
    for name, body in [("slow1.md", "SLOW PAGE"), ("slow2.md", "SLOW PAGE")]:
        (env.root / "out" / name).write_text(body)
    (env.root / "out" / "bad.md").write_text("BAD PAGE")
    request = env.request(pages=["out/slow1.md", "out/slow2.md", "out/bad.md"])
    # The step review inlines all pages, so give it a mode of its own via the report.
    (env.root / "out" / "report.md").write_text("SLOW REPORT")
    env.fake.answer("sleep", when="SLOW REPORT")
    env.fake.answer("sleep", when="SLOW PAGE")
    env.fake.answer("garbage", when="BAD PAGE")
    env.fake.garbage_after(3)
    with (
        background(env, env.reviewer(base_timeout=120), max_parallel=4) as reviews,
        pytest.raises(QualityGateError) as exc,
    ):
        reviews.run(request, plan_review_tasks(request), LONG)
    assert exc.value.code == "quality_gate.bad_output"
    pids = recorded_pids(env)
    assert len(pids) == 6
    assert_all_gone(pids)


@pytest.mark.slow
def test_parallel_cap_is_respected(env: Env) -> None:
    pages = write_pages(env, 6)
    env.fake.hold_until(2)
    request = env.request(pages=pages)
    tasks = plan_review_tasks(request)
    assert len(tasks) == 7
    progress: list[tuple[int, int]] = []

    def record(done: int, total: int, message: str) -> None:
        progress.append((done, total))

    with background(env, env.reviewer(), max_parallel=2) as reviews:
        verdicts = reviews.run(request, tasks, LONG, record)

    assert isinstance(verdicts, tuple)
    assert [v.target_file for v in verdicts] == [None, *pages]  # task order kept
    assert all(v.passed for v in verdicts)
    seen = env.fake.most_running()
    assert len(seen) == 7
    assert max(seen) == 2  # never more than the cap, and the cap was actually reached
    assert progress[-1] == (7, 7)
    assert [done for done, _ in progress] == sorted(done for done, _ in progress)


def test_timeout_grows_with_files_beyond_five() -> None:
    reviewer = ReviewCalls(CliReviewer(), base_timeout=240, per_extra_file=30)
    assert reviewer.timeout_for(1) == 240
    assert reviewer.timeout_for(5) == 240
    assert reviewer.timeout_for(8) == 330


# --- security ---------------------------------------------------------------------------------


def test_symlink_to_outside_file_never_reaches_the_reviewer(env: Env, tmp_path: Path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("OUTSIDE-SECRET-991\n")
    (env.root / "out" / "link.md").symlink_to(secret)
    (env.root / "notes-link.md").symlink_to(secret)
    request = env.request(pages=["out/link.md"])
    request = dataclasses.replace(
        request, input_files=[ResolvedInput("write", "notes", None, "gather", ["notes-link.md"])]
    )
    judge_all(env.reviewer(), request, plan_review_tasks(request))
    calls = env.calls()
    assert len(calls) == 2
    for call in calls:
        assert "OUTSIDE-SECRET-991" not in call["stdin"]
        assert "OUTSIDE-SECRET-991" not in json.dumps(call["argv"])


# --- budget -----------------------------------------------------------------------------------


def _budget_pages(env: Env) -> Checkpoint:
    pages = write_pages(env, 3)
    env.fake.spend(0.40)
    env.fake.hold_until(4)  # the four calls really run at once
    return env.request(pages=pages)


def _given(env: Env) -> list[float]:
    return [float(c["argv"][c["argv"].index("--max-budget-usd") + 1]) for c in env.calls()]


@pytest.mark.slow
def test_parallel_reviewers_share_the_budget_instead_of_each_spending_it(env: Env) -> None:
    request = _budget_pages(env)
    tasks = plan_review_tasks(request)
    assert len(tasks) == 4
    reviewer = env.reviewer(budget=ReviewBudget(max_cost_usd=1.0))

    with (
        background(env, reviewer, max_parallel=4) as reviews,
        pytest.raises(QualityGateError) as exc,
    ):
        reviews.run(request, tasks, LONG)

    assert exc.value.code == "quality_gate.budget_exhausted"
    given = _given(env)
    assert len(given) == 4
    assert sum(given) <= 1.0 + 1e-6  # each started with its slice, not with the whole budget
    spent = sum(
        e.cost_usd
        for e in read_events(env.store, request.resolved_run_id)
        if isinstance(e, ReviewUsageEvent) and e.cost_usd is not None
    )
    assert spent <= 1.0 + 1e-6


@pytest.mark.slow
def test_parallel_calls_in_worker_threads_share_the_budget_instead_of_each_spending_it(
    env: Env,
) -> None:
    request = _budget_pages(env)
    tasks = plan_review_tasks(request)
    reviewer = env.reviewer(budget=ReviewBudget(max_cost_usd=1.0))
    errors: list[str] = []

    def one(task: Any) -> None:
        try:  # as the gate's workers judge a checkpoint's jobs, all enqueued before any runs
            reviewer.judge(request, task, threading.Event(), slots=len(tasks))
        except QualityGateError as exc:
            errors.append(exc.code)

    threads = [threading.Thread(target=one, args=(task,)) for task in tasks]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    given = _given(env)
    assert len(given) == 4
    assert sum(given) <= 1.0 + 1e-6  # each started with its slice, not with the whole budget
    assert "quality_gate.budget_exhausted" in errors
