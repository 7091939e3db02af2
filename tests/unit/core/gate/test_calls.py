"""The gate's policy around one reviewer call (`deepwork_core.gate.calls`, docs/quality-gate.md),
with a `Reviewer` double in this process answering from a script: what each call is briefed,
stall retries and their events, the usage event of every call whose output was read, and
cancellation. The real CLIs' side is tests/unit/mcp/reviewers/test_cli.py."""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path

import pytest
from deepwork_core.base.config import ReviewBudget, ReviewModels
from deepwork_core.base.error_codes import ErrorCode
from deepwork_core.base.errors import QualityGateError
from deepwork_core.gate.calls import ReviewCalls
from deepwork_core.gate.quality import build_review_message, plan_review_tasks
from deepwork_core.gate.reviewer import ReviewBrief, ReviewerReply
from deepwork_core.state.event_kinds import ReviewStalledEvent, ReviewUsageEvent
from deepwork_core.state.events import read_events
from deepwork_core.state.store.port import Store
from deepwork_core.state.usage.pair import RequestUsage

from tests.unit.core.gate.test_background import passing_reply
from tests.unit.core.gate.test_quality import make_request
from tests.unit.core.gate.test_quality import project as project

Answer = Callable[[ReviewBrief], ReviewerReply]
STALLED = QualityGateError("silent", code=ErrorCode.QUALITY_GATE_REVIEWER_STALLED)


class ScriptedPort:
    """A `Reviewer` answering each call with the next of `answers` (a reply, or an error)."""

    name = "scripted"

    def __init__(self, *answers: Answer | QualityGateError) -> None:
        self.answers = list(answers)
        self.briefs: list[ReviewBrief] = []

    def review(self, brief: ReviewBrief, cancelled: threading.Event) -> ReviewerReply:
        self.briefs.append(brief)
        answer = self.answers.pop(0)
        if isinstance(answer, QualityGateError):
            raise answer
        return answer(brief)


def passes(brief: ReviewBrief) -> ReviewerReply:
    usage = RequestUsage(input_tokens=100, output_tokens=10, cost_usd=0.02, model="m-cli")
    return ReviewerReply(reply=passing_reply(brief.task), usage=usage)


def runs_out(brief: ReviewBrief) -> ReviewerReply:
    error = QualityGateError("Reached error_max_budget_usd", code=ErrorCode.QUALITY_GATE_EXIT_CODE)
    return ReviewerReply.failed(RequestUsage(input_tokens=7, cost_usd=None), error)


def usage_events(store: Store, session_id: str) -> list[ReviewUsageEvent]:
    return [e for e in read_events(store, session_id) if isinstance(e, ReviewUsageEvent)]


def test_a_call_is_briefed_by_the_gate(project: Path, store: Store) -> None:
    checkpoint = make_request(store, project)
    task = plan_review_tasks(checkpoint)[0].model_copy(update={"depth": "thorough"})
    port = ScriptedPort(passes)
    calls = ReviewCalls(
        port,
        base_timeout=100,
        stall_timeout=7.0,
        models=ReviewModels(thorough="deep-model"),
        budget=ReviewBudget(max_cost_usd=2.0),
    )
    verdict = calls.judge(checkpoint, task, threading.Event(), slots=4)
    assert verdict.passed
    [brief] = port.briefs
    assert brief.task == task
    assert brief.message == build_review_message(checkpoint, task)
    assert (brief.project_root, brief.session_id) == (project, checkpoint.session_id)
    assert brief.model == "deep-model"
    assert brief.usd_left == 0.5  # the budget shared by the four calls that may run at once
    assert 0 < brief.timeout <= 100
    assert brief.stall_timeout == 7.0
    [event] = usage_events(store, checkpoint.resolved_run_id)
    assert event.usage == RequestUsage(
        input_tokens=100, output_tokens=10, cost_usd=0.02, model="m-cli"
    )
    assert (event.outcome, event.runner, event.depth) == ("passed", "scripted", "thorough")


def test_a_stalled_call_is_started_again_and_each_stall_is_an_event(
    project: Path, store: Store
) -> None:
    checkpoint = make_request(store, project)
    [task, *_] = plan_review_tasks(checkpoint)
    port = ScriptedPort(STALLED, passes)
    verdict = ReviewCalls(port, stall_timeout=3.0, stall_retries=1).judge(
        checkpoint, task, threading.Event()
    )
    assert verdict.passed
    assert len(port.briefs) == 2
    events = read_events(store, checkpoint.resolved_run_id)
    stalls = [e for e in events if isinstance(e, ReviewStalledEvent)]
    assert [(e.try_number, e.retrying, e.waited_seconds) for e in stalls] == [(1, True, 3.0)]
    assert [e.outcome for e in usage_events(store, checkpoint.resolved_run_id)] == ["passed"]


def test_a_reviewer_silent_every_time_is_stalled_and_costs_nothing(
    project: Path, store: Store
) -> None:
    checkpoint = make_request(store, project)
    [task, *_] = plan_review_tasks(checkpoint)
    port = ScriptedPort(STALLED, STALLED, STALLED)
    with pytest.raises(QualityGateError) as caught:
        ReviewCalls(port, stall_timeout=2.0, stall_retries=2).judge(
            checkpoint, task, threading.Event()
        )
    assert caught.value.code == ErrorCode.QUALITY_GATE_REVIEWER_STALLED
    assert "3 time(s) in a row (6 s waited in all)" in caught.value.message
    events = read_events(store, checkpoint.resolved_run_id)
    stalls = [e for e in events if isinstance(e, ReviewStalledEvent)]
    assert [(e.try_number, e.retrying) for e in stalls] == [(1, True), (2, True), (3, False)]
    assert usage_events(store, checkpoint.resolved_run_id) == []


def test_a_failed_call_logs_what_it_used_with_its_code_and_the_model_asked(
    project: Path,
    store: Store,
) -> None:
    checkpoint = make_request(store, project)
    [task, *_] = plan_review_tasks(checkpoint)
    calls = ReviewCalls(ScriptedPort(runs_out), models=ReviewModels(standard="asked-model"))
    with pytest.raises(QualityGateError) as caught:
        calls.judge(checkpoint, task, threading.Event())
    assert caught.value.code == ErrorCode.QUALITY_GATE_EXIT_CODE
    [event] = usage_events(store, checkpoint.resolved_run_id)
    assert event.outcome == "quality_gate.exit_code"
    assert event.usage == RequestUsage(input_tokens=7, cost_usd=None, model="asked-model")


def test_a_cancelled_task_starts_no_reviewer(project: Path, store: Store) -> None:
    checkpoint = make_request(store, project)
    [task, *_] = plan_review_tasks(checkpoint)
    port = ScriptedPort(passes)
    cancelled = threading.Event()
    cancelled.set()
    with pytest.raises(QualityGateError) as caught:
        ReviewCalls(port).judge(checkpoint, task, cancelled)
    assert caught.value.code == ErrorCode.QUALITY_GATE_ERROR
    assert port.briefs == []


def test_a_spent_budget_starts_no_reviewer(project: Path, store: Store) -> None:
    checkpoint = make_request(store, project)
    [task, *_] = plan_review_tasks(checkpoint)
    port = ScriptedPort(passes, passes)
    # Reuse off: the same task again would otherwise take the verdict just judged, for free.
    calls = ReviewCalls(port, budget=ReviewBudget(max_tokens=50), reuse="off")
    calls.judge(checkpoint, task, threading.Event())  # 110 tokens: the run spent its budget
    with pytest.raises(QualityGateError) as caught:
        calls.judge(checkpoint, task, threading.Event())
    assert caught.value.code == ErrorCode.QUALITY_GATE_BUDGET_EXHAUSTED
    assert len(port.briefs) == 1
