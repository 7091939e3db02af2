"""The day cap (`deepwork_core.gate.costs.day_cap`, docs/quality-gate.md, "Budgets"): every
reviewer call holds its slice of what the day has left in the store, so servers sharing the
store never spend past `quality_gate.max_budget_usd_per_day` together, a killed server's hold
keeps counting, and the stop names the cap, the spending and the reset."""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path

import pytest
from deepwork_core.base.config import ReviewBudget, load_config
from deepwork_core.base.error_codes import ErrorCode
from deepwork_core.base.errors import DeepWorkError, QualityGateError
from deepwork_core.gate.calls import ReviewCalls
from deepwork_core.gate.costs.day_cap import DayCap, day_window
from deepwork_core.gate.quality import plan_review_tasks
from deepwork_core.gate.reviewer import ReviewBrief, ReviewerReply
from deepwork_core.state.store.opening import open_store
from deepwork_core.state.store.port import Store
from deepwork_core.state.store.tables.spend_rows import SpendRow, spent_today
from deepwork_core.state.usage.pair import RequestUsage

from tests.unit.core.gate.test_background import passing_reply
from tests.unit.core.gate.test_calls import usage_events
from tests.unit.core.gate.test_quality import make_request
from tests.unit.core.gate.test_quality import project as project

#: What one review would cost if its CLI had no budget to keep to.
FULL_COST = 0.3
#: Seconds a test waits on a thread of its own before it fails.
LONG = 30.0


class KeepsToItsBudget:
    """A reviewer that, like `claude --max-budget-usd`, spends at most the budget it is given."""

    name = "claude"

    def __init__(self) -> None:
        self.calls = 0
        self.lock = threading.Lock()

    def review(self, brief: ReviewBrief, cancelled: threading.Event) -> ReviewerReply:
        with self.lock:
            self.calls += 1
        cost = FULL_COST if brief.usd_left is None else min(FULL_COST, brief.usd_left)
        usage = RequestUsage(input_tokens=1000, output_tokens=50, cost_usd=cost, model="sonnet")
        return ReviewerReply(reply=passing_reply(brief.task), usage=usage)


class StopsAtItsBudget(KeepsToItsBudget):
    """A reviewer that, like `claude --max-budget-usd`, stops without a verdict once the review
    would cost more than the budget it is given (`subtype: error_max_budget_usd`)."""

    def review(self, brief: ReviewBrief, cancelled: threading.Event) -> ReviewerReply:
        if brief.usd_left is None or brief.usd_left >= FULL_COST:
            return super().review(brief, cancelled)
        with self.lock:
            self.calls += 1
        usage = RequestUsage(input_tokens=600, cost_usd=brief.usd_left, model="sonnet")
        stop = QualityGateError(
            "Reached maximum budget", code=ErrorCode.QUALITY_GATE_BUDGET_EXHAUSTED
        )
        return ReviewerReply.failed(usage, stop)


def today(store: Store) -> float:
    return spent_today(store, *day_window(store.now()))


@pytest.mark.parametrize(
    ("port", "how"),
    [
        (KeepsToItsBudget(), "No reviewer was started"),  # the third call: nothing left
        # The second call, given the 0.2 left, stops there without a verdict.
        (StopsAtItsBudget(), "The reviewer stopped at its slice of what the day had left (0.2"),
    ],
)
def test_a_spent_day_stops_the_review_and_says_which_cap_and_when(
    project: Path, store: Store, port: KeepsToItsBudget, how: str
) -> None:
    calls = ReviewCalls(port, reuse="off", max_usd_per_day=0.5)
    checkpoint = make_request(store, project)
    [task, *_] = plan_review_tasks(checkpoint)

    def judge_three_times() -> None:
        for _ in range(3):
            calls.judge(checkpoint, task, threading.Event())

    with pytest.raises(QualityGateError) as caught:
        judge_three_times()
    assert caught.value.code == ErrorCode.QUALITY_GATE_DAY_BUDGET_EXHAUSTED
    message = caught.value.message
    assert "quality_gate.max_budget_usd_per_day: 0.5 USD" in message
    assert "0.5000 USD spent or held today" in message
    assert "T00:00:00Z (in " in message
    assert how in message
    assert port.calls == 2
    assert today(store) == 0.5
    assert [e.cost_usd for e in usage_events(store, checkpoint.resolved_run_id)] == [0.3, 0.2]


def test_a_reviewer_stopped_at_the_runs_tighter_budget_names_the_runs_budget(
    project: Path, store: Store
) -> None:
    budget = ReviewBudget(max_cost_usd=0.1)
    calls = ReviewCalls(StopsAtItsBudget(), reuse="off", budget=budget, max_usd_per_day=0.5)
    checkpoint = make_request(store, project)
    [task, *_] = plan_review_tasks(checkpoint)
    with pytest.raises(QualityGateError) as stopped:
        calls.judge(checkpoint, task, threading.Event())
    assert stopped.value.code == ErrorCode.QUALITY_GATE_BUDGET_EXHAUSTED


class HeldInside(KeepsToItsBudget):
    """A reviewer that, once inside its call, waits there until released."""

    def __init__(self) -> None:
        super().__init__()
        self.inside = threading.Event()
        self.release = threading.Event()

    def review(self, brief: ReviewBrief, cancelled: threading.Event) -> ReviewerReply:
        self.inside.set()
        assert self.release.wait(LONG)
        return super().review(brief, cancelled)


class ReleasesWhenWaitedOn(threading.Event):
    """The `cancelled` event of a call on the second server: the first time the call waits for
    the day (nothing free, a running review holds it all), the review on the first server is
    let finish, and the wait ends once it has."""

    def __init__(self, first: HeldInside, running: threading.Thread) -> None:
        super().__init__()
        self.first, self.running, self.waits = first, running, 0

    def wait(self, timeout: float | None = None) -> bool:
        self.waits += 1
        self.first.release.set()
        self.running.join(LONG)
        return self.is_set()


def test_a_review_waits_for_one_running_on_another_server_to_give_back_its_slice(
    project: Path, tmp_path: Path
) -> None:
    url = f"sqlite:///{tmp_path / 'day.sqlite3'}"
    stores = [open_store(url, project, machine=name) for name in ("server-a", "server-b")]
    first, second = HeldInside(), KeepsToItsBudget()
    verdicts = []

    def judge_on(store: Store, port: KeepsToItsBudget, cancelled: threading.Event) -> None:
        calls = ReviewCalls(port, reuse="off", max_usd_per_day=0.5)
        checkpoint = make_request(store, project, session_id=f"sess_{store.project.machine}")
        [task, *_] = plan_review_tasks(checkpoint)
        verdicts.append(calls.judge(checkpoint, task, cancelled))

    running = threading.Thread(target=judge_on, args=(stores[0], first, threading.Event()))
    try:
        running.start()
        assert first.inside.wait(LONG)  # it holds all the day has left: 0.5
        waiting = ReleasesWhenWaitedOn(first, running)
        judge_on(stores[1], second, waiting)  # nothing free, but only held: it waits
        assert waiting.waits == 1
        assert [v.passed for v in verdicts] == [True, True]
        assert (first.calls, second.calls) == (1, 1)
        assert today(stores[1]) == 0.5  # 0.3, then the 0.2 that was left
    finally:
        first.release.set()
        running.join(LONG)
        for store in stores:
            store.close()


class StoppedInside(KeepsToItsBudget):
    """A reviewer stopped while it runs (changed outputs, `abort_workflow`): no reply."""

    def review(self, brief: ReviewBrief, cancelled: threading.Event) -> ReviewerReply:
        with self.lock:
            self.calls += 1
        cancelled.set()
        raise QualityGateError("the review was cancelled", code=ErrorCode.QUALITY_GATE_ERROR)


class CountsWaits(threading.Event):
    """A `cancelled` event that is set the first time its call waits for the day."""

    waits = 0

    def wait(self, timeout: float | None = None) -> bool:
        self.waits += 1
        self.set()
        return True


def test_a_review_stopped_mid_call_counts_its_whole_slice_and_nobody_waits_for_it(
    project: Path, store: Store
) -> None:
    checkpoint = make_request(store, project)
    [task, *_] = plan_review_tasks(checkpoint)
    stopped = ReviewCalls(StoppedInside(), reuse="off", max_usd_per_day=0.5)
    with pytest.raises(QualityGateError):
        stopped.judge(checkpoint, task, threading.Event())
    assert today(store) == 0.5  # it may have spent its whole slice
    later = CountsWaits()
    with pytest.raises(QualityGateError) as caught:
        ReviewCalls(KeepsToItsBudget(), reuse="off", max_usd_per_day=0.5).judge(
            checkpoint, task, later
        )
    assert caught.value.code == ErrorCode.QUALITY_GATE_DAY_BUDGET_EXHAUSTED
    assert later.waits == 0  # no reviewer holds it now: refused at once


def test_a_hold_of_a_killed_server_still_counts_after_a_restart(
    project: Path, tmp_path: Path
) -> None:
    url = f"sqlite:///{tmp_path / 'day.sqlite3'}"
    first = open_store(url, project)
    row = SpendRow("sess_1", "task-1", "demo/write/step", "standard", "", "claude")
    hold = DayCap(1.0).hold(first, row, slots=2)
    assert hold is not None
    assert hold.usd == 0.5
    first.close()  # the server died with its reviewer running: the hold is never settled
    second = open_store(url, project)
    try:
        assert today(second) == 0.5
        again = DayCap(1.0).hold(second, row, slots=1)
        assert again is not None
        assert again.usd == 0.5  # only what was left
        with pytest.raises(QualityGateError):
            DayCap(1.0).hold(second, row, slots=1)
    finally:
        second.close()


def test_four_servers_with_parallel_reviewers_never_overshoot_a_1_usd_day(
    project: Path, pg_url: str
) -> None:
    """Four stores on one PostgreSQL database stand for four servers (each its own connection
    and machine name), each with three reviewers at once, all on one 1 USD day."""
    servers = [open_store(pg_url, project, machine=f"server-{n}") for n in range(4)]
    port = KeepsToItsBudget()
    stops: list[str] = []
    errors: list[BaseException] = []

    def reviewers_of(store: Store) -> Callable[[], None]:
        calls = ReviewCalls(port, reuse="off", max_usd_per_day=1.0)

        def work() -> None:
            checkpoint = make_request(store, project, session_id=f"sess_{store.project.machine}")
            [task, *_] = plan_review_tasks(checkpoint)
            for _ in range(4):
                try:
                    calls.judge(checkpoint, task, threading.Event(), slots=3)
                except QualityGateError as exc:
                    stops.append(exc.code)
                except BaseException as exc:  # reported below
                    errors.append(exc)

        return work

    threads = [threading.Thread(target=reviewers_of(store)) for store in servers for _ in range(3)]
    try:
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=300)
        assert errors == []
        spent = today(servers[0])
        assert spent <= 1.0
        assert spent > 0.9  # the day was used, not refused early
        assert stops
        assert set(stops) == {ErrorCode.QUALITY_GATE_DAY_BUDGET_EXHAUSTED}
        assert port.calls + len(stops) == 4 * 3 * 4
    finally:
        for store in servers:
            store.close()


@pytest.mark.parametrize(
    ("text", "line", "field"),
    [
        ("  max_budget_usd_per_day: -1\n", 3, "quality_gate.max_budget_usd_per_day"),
        ("  prices:\n    my-model: {input: 1}\n", 4, "quality_gate.prices.my-model.output"),
        ("  prices:\n    my-model: {input: 1, output: nope}\n", 4, "quality_gate.prices"),
        ("  reuse: sometimes\n", 3, "quality_gate.reuse"),
    ],
)
def test_a_bad_cap_price_or_reuse_is_a_coded_error_naming_file_and_line(
    tmp_path: Path, text: str, line: int, field: str
) -> None:
    config = tmp_path / ".deepwork" / "config.yml"
    config.parent.mkdir()
    config.write_text("quality_gate:\n  external_runner: claude\n" + text)
    with pytest.raises(DeepWorkError) as caught:
        load_config(tmp_path)
    assert caught.value.code == ErrorCode.CONFIG_INVALID
    assert f"{config}:{line}: {field}" in caught.value.message


def test_reuse_off_reads_as_written_unquoted(tmp_path: Path) -> None:
    config = tmp_path / ".deepwork" / "config.yml"
    config.parent.mkdir()
    config.write_text("quality_gate:\n  reuse: off\n")  # YAML reads an unquoted off as false
    assert load_config(tmp_path).quality_gate.reuse == "off"
    config.write_text("quality_gate:\n  reuse: true\n")
    with pytest.raises(DeepWorkError) as caught:
        load_config(tmp_path)
    assert caught.value.code == ErrorCode.CONFIG_INVALID
