"""Verdicts reused by content (`deepwork_core.gate.reuse`, docs/quality-gate.md, "Verdicts
reused"): a task whose brief, runner, model and every seen file are unchanged takes the kept
verdict for nothing; one changed byte, another store, a failed verdict (under `passes`) or
`reuse: off` calls the reviewer again."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
from deepwork_core.base.config import ReviewModels
from deepwork_core.gate.calls import ReviewCalls
from deepwork_core.gate.quality import plan_review_tasks
from deepwork_core.gate.reviewer import ReviewBrief, ReviewerReply
from deepwork_core.state.store.opening import open_store
from deepwork_core.state.store.port import Store
from deepwork_core.state.usage.pair import RequestUsage
from deepwork_core.state.usage.totals import run_usage

from tests.unit.core.gate.test_calls import ScriptedPort, passes, usage_events
from tests.unit.core.gate.test_quality import make_request
from tests.unit.core.gate.test_quality import project as project


def fails(brief: ReviewBrief) -> ReviewerReply:
    results = [
        {"criterion": name, "passed": False, "feedback": "no"} for name in brief.task.criteria
    ]
    reply = {"passed": False, "feedback": "not yet", "criteria_results": results}
    usage = RequestUsage(input_tokens=90, output_tokens=9, cost_usd=0.03, model="m-cli")
    return ReviewerReply(reply=reply, usage=usage)


def judge_all(calls: ReviewCalls, store: Store, project: Path, **changes: object) -> list[bool]:
    checkpoint = make_request(store, project, **changes)
    return [
        calls.judge(checkpoint, task, threading.Event()).reused_from is not None
        for task in plan_review_tasks(checkpoint)
    ]


def test_an_unchanged_task_reuses_its_passed_verdict_for_nothing(
    project: Path, store: Store
) -> None:
    port = ScriptedPort(*[passes] * 3)
    calls = ReviewCalls(port)
    assert judge_all(calls, store, project) == [False, False, False]
    checkpoint = make_request(store, project, session_id="sess_second")
    [task, *_] = plan_review_tasks(checkpoint)
    verdict = calls.judge(checkpoint, task, threading.Event())
    assert len(port.briefs) == 3  # no reviewer for the reused one
    assert verdict.passed
    assert verdict.reused_from is not None
    assert (verdict.reused_from.session_id, verdict.reused_from.step_id) == (
        "sess_123456",
        "write",
    )
    assert verdict.reused_from.text.startswith("reused from sess_123456/write, 20")
    reused = usage_events(store, "sess_second")
    assert [(e.mode, e.cost_usd, e.saved_usd) for e in reused] == [("reused", 0.0, 0.02)]
    totals = run_usage(store, checkpoint.resolved_run_id)
    assert (totals.calls, totals.cost_usd, totals.reused_verdicts, totals.saved_usd) == (
        0,
        0.0,
        1,
        0.02,
    )


def test_one_changed_byte_re_runs_exactly_the_tasks_that_saw_it(
    project: Path, store: Store
) -> None:
    port = ScriptedPort(*[passes] * 5)
    calls = ReviewCalls(port)
    judge_all(calls, store, project)
    (project / "out" / "p2.md").write_text("page twO\n")
    # The step task saw every page and the p2 task saw p2: both run again; p1's is reused.
    assert judge_all(calls, store, project) == [False, True, False]
    assert len(port.briefs) == 5


def test_one_changed_byte_in_an_input_re_runs_exactly_the_tasks_shown_it(
    project: Path, store: Store
) -> None:
    port = ScriptedPort(*[passes] * 5)
    calls = ReviewCalls(port)

    def judged() -> list[bool]:
        checkpoint = make_request(store, project)
        step, p1, p2 = plan_review_tasks(checkpoint)
        p1 = p1.model_copy(update={"depth": "light"})  # a light review is shown no inputs
        return [
            calls.judge(checkpoint, task, threading.Event()).reused_from is not None
            for task in (step, p1, p2)
        ]

    assert judged() == [False, False, False]
    notes = project / "out" / "notes.md"
    notes.write_bytes(notes.read_bytes()[:-1] + b"!")
    assert judged() == [False, True, False]  # the step and p2 tasks read the notes; p1 did not
    assert len(port.briefs) == 5


def test_a_failed_verdict_is_judged_again_unless_reuse_all(project: Path, store: Store) -> None:
    port = ScriptedPort(*[fails] * 6)
    assert judge_all(ReviewCalls(port), store, project) == [False] * 3
    assert judge_all(ReviewCalls(port), store, project) == [False] * 3
    assert judge_all(ReviewCalls(port, reuse="all"), store, project) == [True] * 3
    assert len(port.briefs) == 6


def test_reuse_off_neither_takes_nor_keeps(project: Path, store: Store) -> None:
    port = ScriptedPort(*[passes] * 6)
    assert judge_all(ReviewCalls(port, reuse="off"), store, project) == [False] * 3
    assert judge_all(ReviewCalls(port), store, project) == [False] * 3  # nothing was kept
    assert len(port.briefs) == 6


@pytest.mark.parametrize(
    "other",
    [
        {"models": ReviewModels(standard="another-model")},
        {"runner": "another-runner"},
    ],
)
def test_another_model_or_runner_is_another_key(
    project: Path, store: Store, other: dict[str, object]
) -> None:
    port = ScriptedPort(*[passes] * 6)
    judge_all(ReviewCalls(port), store, project)
    if "runner" in other:
        port.name = str(other["runner"])
        again = ReviewCalls(port)
    else:
        again = ReviewCalls(port, models=other["models"])  # type: ignore[arg-type]
    assert judge_all(again, store, project) == [False] * 3


def test_a_project_on_another_store_reuses_nothing(
    project: Path, store: Store, tmp_path: Path
) -> None:
    port = ScriptedPort(*[passes] * 6)
    judge_all(ReviewCalls(port), store, project)
    elsewhere = open_store(f"sqlite:///{tmp_path / 'other.sqlite3'}", project)
    try:
        assert judge_all(ReviewCalls(port), elsewhere, project) == [False] * 3
    finally:
        elsewhere.close()
    assert len(port.briefs) == 6
