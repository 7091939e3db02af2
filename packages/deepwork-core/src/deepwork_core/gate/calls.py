"""One review task through the `Reviewer` port: the gate's policy around each reviewer call
(docs/quality-gate.md).

`ReviewCalls.judge` runs in the background worker that claimed the task, synchronously, and
returns the task's verdict or raises `QualityGateError`:

- a verdict kept in the store for the same brief over the same bytes is reused when
  `quality_gate.reuse` allows (`deepwork_core.gate.reuse`): no reviewer runs, a `review_usage`
  event with `mode: reused` and cost 0 is logged, and the verdict says where it was judged;
- the review message is built at the task's depth, and the task gets a deadline: the base
  timeout plus `per_extra_file` for each file beyond five, across every try;
- before each call the run's budget is checked and the call reserves its slice of what is left
  (`BudgetLedger`, shared with the `slots` calls that may run alongside it), and its slice of the
  day's budget in the store (`DayCap`, shared by every server); a spent budget starts no
  reviewer (`quality_gate.budget_exhausted`, `quality_gate.day_budget_exhausted`);
- a reviewer silent for `stall_timeout` seconds is stopped by the adapter, and started again up
  to `stall_retries` times, each stall a `review_stalled` event; then
  `quality_gate.reviewer_stalled`;
- a reply that leaves a criterion unjudged is asked for once more; if the second also leaves one
  out, the verdict fails naming it (and is not kept for reuse);
- every call whose output was read is one `review_usage` event in the run's log (tokens and
  cost as the reviewer reported them, `cost_usd` None where it reports none) and one row of the
  store's spend ledger, and its budget slices are given back once its real cost is there.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from deepwork_core.base.config import (
    DEFAULT_REUSE,
    DEFAULT_REVIEW_DEPTH,
    DEFAULT_REVIEW_TIMEOUT,
    DEFAULT_SECONDS_PER_EXTRA_FILE,
    DEFAULT_STALL_RETRIES,
    DEFAULT_STALL_TIMEOUT,
    TIMEOUT_FREE_FILES,
    ModelPrice,
    ReuseMode,
    ReviewBudget,
    ReviewModels,
)
from deepwork_core.base.error_codes import ErrorCode
from deepwork_core.base.errors import QualityGateError
from deepwork_core.evidence.verdicts import ReviewVerdict
from deepwork_core.gate.budget import (
    BudgetLedger,
    check_budget,
    review_event_fields,
    review_usage_event,
)
from deepwork_core.gate.checkpoint import Checkpoint
from deepwork_core.gate.costs.day_cap import DayCap, DayHold
from deepwork_core.gate.costs.estimates import Estimator, rule_of
from deepwork_core.gate.costs.prices import Prices
from deepwork_core.gate.costs.quotes import ReviewPrice
from deepwork_core.gate.quality import (
    DEFAULT_MAX_INLINE_FILES,
    build_review_message,
    task_file_count,
    unjudged_criteria,
    verdict_from_reply,
)
from deepwork_core.gate.reuse import VerdictReuse, reuse_key
from deepwork_core.gate.reviewer import ReviewBrief, Reviewer, ReviewerReply
from deepwork_core.gate.tasks import QualityReviewTask
from deepwork_core.state.event_kinds import ReviewStalledEvent
from deepwork_core.state.events import append_event
from deepwork_core.state.store.tables.spend_rows import SpendRow, record_spent
from deepwork_core.state.store.tables.verdict_rows import StoredVerdict


class ReviewCalls:
    """How the gate asks `reviewer` about a task (see the module). Safe to use from several
    worker threads at once."""

    def __init__(
        self,
        reviewer: Reviewer,
        *,
        base_timeout: float = DEFAULT_REVIEW_TIMEOUT,
        per_extra_file: float = DEFAULT_SECONDS_PER_EXTRA_FILE,
        max_inline_files: int = DEFAULT_MAX_INLINE_FILES,
        stall_timeout: float | None = DEFAULT_STALL_TIMEOUT,
        stall_retries: int = DEFAULT_STALL_RETRIES,
        models: ReviewModels | None = None,
        budget: ReviewBudget | None = None,
        reuse: ReuseMode = DEFAULT_REUSE,
        prices: dict[str, ModelPrice] | None = None,
        max_usd_per_day: float | None = None,
    ) -> None:
        """`stall_timeout` None: a silent reviewer is never stopped. `models`: the model per
        review depth. `budget`: what a workflow run may spend on reviews. `reuse`: which kept
        verdicts a task takes. `prices`: `quality_gate.prices`. `max_usd_per_day`: the day cap."""
        self.reviewer = reviewer
        self.base_timeout = base_timeout
        self.per_extra_file = per_extra_file
        self.max_inline_files = max_inline_files
        self.stall_timeout = stall_timeout
        self.stall_retries = stall_retries
        self.models = models if models is not None else ReviewModels()
        self.budget = budget if budget is not None else ReviewBudget()
        self.ledger = BudgetLedger(self.budget)
        self.reuse = VerdictReuse(reuse)
        self.prices = Prices(prices)
        self.day = DayCap(max_usd_per_day)
        self.estimator = Estimator(
            reviewer.name, self.models, self.prices, self.reuse, max_inline_files
        )

    @property
    def shares_spending(self) -> bool:
        """Whether parallel calls share what is left of the run's cost budget or of the day's
        (`deepwork_core.gate.background` counts them)."""
        return self.budget.max_cost_usd is not None or self.day.max_usd is not None

    def timeout_for(self, file_count: int) -> float:
        """Per-task deadline: the base plus `per_extra_file` for each file beyond five."""
        return self.base_timeout + self.per_extra_file * max(0, file_count - TIMEOUT_FREE_FILES)

    def model_for(self, task: QualityReviewTask) -> str | None:
        """The model asked for at the task's depth (None: the CLI's own)."""
        return self.models.for_depth(task.depth or DEFAULT_REVIEW_DEPTH)

    def price(self, checkpoint: Checkpoint, tasks: Sequence[QualityReviewTask]) -> ReviewPrice:
        """What `tasks` are expected to cost (`deepwork_core.gate.costs.estimates`)."""
        return self.estimator.review(checkpoint, tasks)

    def judge(
        self,
        checkpoint: Checkpoint,
        task: QualityReviewTask,
        cancelled: threading.Event,
        *,
        slots: int = 1,
    ) -> ReviewVerdict:
        """The verdict of `task` (see the module); `slots`: how many calls of the run may run
        alongside this one, sharing what is left of its cost budget. Stops soon after
        `cancelled` is set (then `quality_gate.error`)."""
        key = None
        if self.reuse.mode != "off":
            key = reuse_key(checkpoint, task, self.reviewer.name, self.model_for(task))
            found = self.reuse.lookup(checkpoint.store, key)
            if found is not None:
                return self._reused(checkpoint, task, found)
        if self.budget.max_cost_usd is not None or self.budget.max_tokens is not None:
            check_budget(checkpoint.store, checkpoint.resolved_run_id, self.budget)
        call = self._start(checkpoint, task, slots)
        verdict, complete = self._verdict(call, cancelled)
        if key is not None and complete:
            self._keep(call, key, verdict)
        return verdict

    def _start(self, checkpoint: Checkpoint, task: QualityReviewTask, slots: int) -> _Call:
        message = build_review_message(checkpoint, task, self.max_inline_files)
        deadline = time.monotonic() + self.timeout_for(task_file_count(checkpoint, task))
        row = SpendRow(
            session_id=checkpoint.session_id,
            task_ref=uuid.uuid4().hex,
            rule=rule_of(checkpoint, task),
            depth=task.depth or DEFAULT_REVIEW_DEPTH,
            model=self.model_for(task) or "",
            runner=self.reviewer.name,
        )
        return _Call(checkpoint, task, message, deadline, slots, row)

    def _verdict(self, call: _Call, cancelled: threading.Event) -> tuple[ReviewVerdict, bool]:
        """The task's verdict, asked once more when a criterion was left unjudged; and whether
        every criterion was judged (only then is it kept)."""
        task = call.task
        try:
            answer = self._ask(call, cancelled)
            if unjudged_criteria(task, answer.reply.reply):
                # Asked once more; a second incomplete reply fails the unjudged criteria.
                self._log_usage(call, answer, "unjudged")
                answer = self._ask(call, cancelled)
            complete = not unjudged_criteria(task, answer.reply.reply)
            try:
                verdict = verdict_from_reply(task, answer.reply.reply)
            except QualityGateError as exc:
                self._log_usage(call, answer, exc.code)
                raise
            self._log_usage(call, answer, "passed" if verdict.passed else "failed")
            return verdict, complete
        finally:
            self._release(call)  # stopped before its usage was logged

    def _reused(
        self, checkpoint: Checkpoint, task: QualityReviewTask, found: StoredVerdict
    ) -> ReviewVerdict:
        """A kept verdict as this task's: logged as a `reused` use costing 0."""
        verdict = self.reuse.reused(found, task)
        event = review_usage_event(
            checkpoint,
            task,
            mode="reused",
            outcome="passed" if verdict.passed else "failed",
            runner=self.reviewer.name,
            model=self.model_for(task),
            cost_usd=0.0,
            reused_from=found.origin,
            saved_usd=found.cost_usd,
        )
        append_event(checkpoint.store, event)
        return verdict

    def _keep(self, call: _Call, key: str, verdict: ReviewVerdict) -> None:
        """Keep a fresh verdict for reuse, if the files it judged are still the ones hashed."""
        checkpoint, task = call.checkpoint, call.task
        if reuse_key(checkpoint, task, self.reviewer.name, self.model_for(task)) != key:
            return  # a file changed while the reviewer read it: the background drops it too
        cost = round(call.spent, 6)
        self.reuse.keep(
            checkpoint.store, key, verdict, session_id=checkpoint.session_id, cost_usd=cost
        )

    def _ask(self, call: _Call, cancelled: threading.Event) -> _Answer:
        """One reviewer call with its slices of the budgets held (`BudgetLedger`, `DayCap`);
        its usage is logged (and its error raised) when it failed."""
        checkpoint = call.checkpoint
        call.share = self.ledger.reserve(checkpoint.store, checkpoint.resolved_run_id, call.slots)
        asked = time.monotonic()
        try:
            call.hold = self.day.hold(
                checkpoint.store,
                call.row,
                call.slots,
                wait=self._waiter(cancelled),
                live_for=self.base_timeout,
            )
        except BaseException:
            self._release(call)
            raise
        started = time.monotonic()
        call.deadline += started - asked  # waiting for the day is not the review's time
        try:
            reply = self._call(call, cancelled)
        except BaseException:
            if call.hold is not None and not call.started:  # no reviewer ran: nothing spent
                self.day.release(checkpoint.store, call.hold)
            elif call.hold is not None:  # it counts in full: the reviewer may have spent it
                self.day.keep_whole(checkpoint.store, call.hold)
            call.hold = None
            self._release(call)
            raise
        answer = _Answer(reply, time.monotonic() - started)
        if reply.error is not None:
            day_slice = call.hold.usd if call.hold is not None else None
            run_slice = call.share
            self._log_usage(call, answer, reply.error.code)
            raise self._stop(checkpoint, reply.error.error(), day_slice, run_slice)
        return answer

    def _waiter(self, cancelled: threading.Event) -> Callable[[float], bool]:
        """How a call waits for running reviews to give back the day's slices they hold: at
        most `base_timeout` in all, and not once `cancelled` is set."""
        until = time.monotonic() + self.base_timeout

        def wait(seconds: float) -> bool:
            if time.monotonic() >= until:
                return False
            return not cancelled.wait(seconds)

        return wait

    def _stop(
        self,
        checkpoint: Checkpoint,
        error: QualityGateError,
        day_slice: float | None,
        run_slice: float | None,
    ) -> QualityGateError:
        """The error of a failed call; a CLI that stopped at the budget it was given stopped at
        the tighter of its slices, and a slice of the day names the day cap."""
        if error.code != ErrorCode.QUALITY_GATE_BUDGET_EXHAUSTED or day_slice is None:
            return error
        if run_slice is not None and run_slice < day_slice:
            return error
        return self.day.stopped_at(checkpoint.store, day_slice)

    def _call(self, call: _Call, cancelled: threading.Event) -> ReviewerReply:
        """The call, started again after a stall up to `stall_retries` times."""
        total = self.stall_retries + 1
        for try_number in range(1, total + 1):
            if cancelled.is_set():
                raise QualityGateError(
                    "the review was cancelled", code=ErrorCode.QUALITY_GATE_ERROR
                )
            try:
                call.started = True
                return self.reviewer.review(self._brief(call), cancelled)
            except QualityGateError as exc:
                if exc.code == ErrorCode.QUALITY_GATE_NOT_INSTALLED:
                    call.started = False  # no process ran
                if exc.code != ErrorCode.QUALITY_GATE_REVIEWER_STALLED:
                    raise
                self._log_stall(call, try_number, retrying=try_number < total)
        waited = total * (self.stall_timeout or 0.0)
        raise QualityGateError(
            f"the reviewer for {call.task.label} sent no event for {self.stall_timeout or 0:g} s "
            f"and was stopped, {total} time(s) in a row ({waited:g} s waited in all). This was "
            "not counted as an attempt.",
            code=ErrorCode.QUALITY_GATE_REVIEWER_STALLED,
        )

    def _brief(self, call: _Call) -> ReviewBrief:
        task = call.task
        slices = [usd for usd in (call.share, call.hold.usd if call.hold else None) if usd]
        return ReviewBrief(
            task=task,
            message=call.message,
            project_root=call.checkpoint.project_root,
            session_id=call.checkpoint.session_id,
            model=self.model_for(task),
            usd_left=min(slices) if slices else None,
            timeout=max(0.0, call.deadline - time.monotonic()),
            stall_timeout=self.stall_timeout,
        )

    def _log_stall(self, call: _Call, try_number: int, *, retrying: bool) -> None:
        checkpoint = call.checkpoint
        event = ReviewStalledEvent(
            **review_event_fields(checkpoint, call.task),
            waited_seconds=self.stall_timeout or 0.0,
            try_number=try_number,
            retrying=retrying,
        )
        append_event(checkpoint.store, event)

    def _log_usage(self, call: _Call, answer: _Answer, outcome: str) -> None:
        """One `review_usage` event in the run's log (docs/quality-gate.md) and one row of the
        spend ledger, settling the call's hold on the day."""
        checkpoint, task, usage = call.checkpoint, call.task, answer.reply.usage
        if usage.model is None:  # the CLI did not say: the model it was asked for
            usage = usage.model_copy(update={"model": self.model_for(task)})
        counted = self.prices.counted(usage, usage.model)
        call.spent += counted
        if call.hold is not None:
            self.day.settle(checkpoint.store, call.hold, counted, usage.tokens)
            call.hold = None
        else:
            record_spent(checkpoint.store, call.row, counted, usage.tokens)
        event = review_usage_event(
            checkpoint,
            task,
            usage,
            seconds=round(answer.seconds, 3),
            outcome=str(outcome),
            runner=self.reviewer.name,
        )
        append_event(checkpoint.store, event)
        self._release(call)  # the real cost is in the log now

    def _release(self, call: _Call) -> None:
        if call.share is not None:
            self.ledger.release(call.checkpoint.resolved_run_id, call.share)
            call.share = None


@dataclass(slots=True)
class _Call:
    """One review task being asked."""

    checkpoint: Checkpoint
    task: QualityReviewTask
    message: str
    deadline: float
    #: Calls of the run that may run alongside this one (they share what is left).
    slots: int
    #: The task in the spend ledger.
    row: SpendRow
    #: The USD this call holds in the run's ledger while it runs (None: none).
    share: float | None = None
    #: Its slice of the day, held in the store while it runs (None: no day cap).
    hold: DayHold | None = None
    #: Whether a reviewer process was started for the current call.
    started: bool = False
    #: What the task's calls cost so far (as counted against the caps).
    spent: float = 0.0


@dataclass(frozen=True, slots=True)
class _Answer:
    reply: ReviewerReply
    seconds: float
