"""Calibration figures from the event logs: how the quality gate treats each step and criterion.

`deepwork stats` reads every session's event log while the project holds at most `DEFAULT_RUNS`
started sessions, and beyond that the logs of the newest `DEFAULT_RUNS` by their `started` event
(`runs=None` reads every one, which grows with the history); it counts, per job,
step and criterion (the definitions are in docs/evidence.md):

- a *run* of a step starts at each `step_begun` naming it (a `go_to_step` back starts another);
- an *attempt* is one round of reviewer verdicts (`review_verdict` events of one `attempt`
  number); it passed the step when every verdict of the step in it passed;
- *reviewed runs* are runs with at least one attempt; *first-try pass rate* is the share of them
  whose first attempt passed; *mean attempts* is the mean number of attempts per reviewed run;
- a run accepted with no review (its `step_finished` verdict `unreviewed`) has no attempt, so
  it counts in no pass figure;
- *overrides* counts `override` events naming the step;
- *median seconds* is the median time from `step_begun` to `step_finished` of finished runs;
- per criterion, *evaluations* and *failures* count the reviewer's answers on it.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import datetime
from typing import Annotated, Final, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

from deepwork_core.base.errors import DeepWorkError
from deepwork_core.base.identifiers import SessionId
from deepwork_core.evidence.verdicts import VerdictKind
from deepwork_core.state.calibration.report import CalibrationReport
from deepwork_core.state.calibration.rows import latest_reports
from deepwork_core.state.event_kinds import (
    EventName,
    EventRecord,
    OtherEvent,
    ReviewUsageEvent,
    parse_counted,
)
from deepwork_core.state.events import (
    events_of_kinds,
    logged_session_ids,
    newest_started,
    read_events,
)
from deepwork_core.state.store.port import Store
from deepwork_core.state.usage.totals import ReviewCosts, review_costs

#: Sessions whose logs `deepwork stats` reads when not told otherwise (`--runs`, `--all`).
DEFAULT_RUNS: Final = 200
#: The kinds of event the figures are counted from; the others are not read.
STATS_KINDS: Final = frozenset(
    {
        EventName.STARTED,
        EventName.STEP_BEGUN,
        EventName.REVIEW_VERDICT,
        EventName.OVERRIDE,
        EventName.STEP_FINISHED,
        EventName.COMPLETED,
        EventName.ABORTED,
        EventName.REVIEW_USAGE,
    }
)


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class CriterionStats(_Model):
    criterion: str
    evaluations: int
    failures: int
    failure_rate: float | None


class StepStats(_Model):
    step: str
    runs: int
    finished: int
    reviewed_runs: int
    first_try_pass_rate: float | None
    mean_attempts: float | None
    overrides: int
    median_seconds: float | None
    criteria: list[CriterionStats] = Field(default_factory=list)


class JobStats(_Model):
    job: str
    sessions: int
    completed: int
    aborted: int
    steps: list[StepStats] = Field(default_factory=list)


class SkippedLog(_Model):
    session_id: str
    error: str


class StatsWindow(_Model):
    """Which sessions the figures are over: the newest `limit` by their start, of `total`."""

    limit: int
    #: Sessions whose logs were read (at most `limit`).
    read: int
    #: Sessions with a `started` event in the project's store.
    total: int


class Stats(_Model):
    jobs: list[JobStats] = Field(default_factory=list)
    #: The newest sessions the figures are over when older ones were left out; None: every
    #: session's log was read.
    window: StatsWindow | None = None
    #: The latest `deepwork calibrate` report of each runner, its rates without the per-case
    #: results (docs/quality-gate.md, "Calibration").
    calibration: list[CalibrationReport] = Field(default_factory=list)
    skipped: list[SkippedLog] = Field(default_factory=list)
    #: What reviews cost per job, step and review, most expensive first (docs/quality-gate.md).
    review_costs: ReviewCosts = Field(default_factory=ReviewCosts)


class _Counted(BaseModel):
    """The fields `deepwork stats` counts of one line, with the header every known kind has
    (the kind's other fields are not read; a line that does not fit is read whole)."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    v: int = 1
    ts: datetime
    session_id: str


class _Started(_Counted):
    event: Literal["started"]
    job: str
    workflow: str


class _Begun(_Counted):
    event: Literal["step_begun"]
    step_ids: list[str]


class _Criterion(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)

    criterion: str
    passed: bool


class _Verdict(_Counted):
    event: Literal["review_verdict"]
    step_id: str
    passed: bool
    criteria: list[_Criterion] = Field(default_factory=list)
    attempt: int | None = None


class _Override(_Counted):
    event: Literal["override"]
    step_ids: list[str]
    reason: str


class _Finished(_Counted):
    event: Literal["step_finished"]
    step_ids: list[str]
    verdict: VerdictKind


class _Completed(_Counted):
    event: Literal["completed"]


class _Aborted(_Counted):
    event: Literal["aborted"]
    reason: str


_Line = Annotated[
    _Started | _Begun | _Verdict | _Override | _Finished | _Completed | _Aborted,
    Field(discriminator="event"),
]
_LINE: Final[TypeAdapter[_Line]] = TypeAdapter(_Line)
#: One counted line: its fields, what a review cost, or None (a line of no counted kind, or
#: one whose fields do not fit its kind, which the figures pass by).
_Read = _Line | ReviewUsageEvent | None


def _read_counted(raw: str, where: str) -> _Read:
    """One stored line as the figures read it; `events.corrupt` as `parse_line` raises it."""
    try:
        return _LINE.validate_json(raw)
    except ValueError:  # a review's costs, read whole, or a line that does not fit
        return _of_record(parse_counted(raw, where))


def _of_record(record: EventRecord) -> _Read:
    """What the figures read of an event already read whole."""
    if isinstance(record, ReviewUsageEvent):
        return record
    if isinstance(record, OtherEvent) or record.event not in _LINE_KINDS:
        return None
    try:
        return _LINE.validate_python(record.model_dump())
    except ValidationError:
        return None


_LINE_KINDS: Final = STATS_KINDS - {EventName.REVIEW_USAGE}


@dataclass
class _StepPass:
    begun: datetime
    #: attempt number -> whether every verdict of the step in that attempt passed.
    attempts: dict[int, bool] = field(default_factory=dict)
    finished: datetime | None = None

    @property
    def verdicts(self) -> list[bool]:
        return [self.attempts[number] for number in sorted(self.attempts)]


@dataclass
class _StepTally:
    runs: list[_StepPass] = field(default_factory=list)
    overrides: int = 0
    criteria: dict[str, list[bool]] = field(default_factory=dict)


@dataclass
class _JobTally:
    sessions: int = 0
    completed: int = 0
    aborted: int = 0
    steps: dict[str, _StepTally] = field(default_factory=dict)


def collect_stats(
    store: Store | None, *, job: str | None = None, runs: int | None = DEFAULT_RUNS
) -> Stats:
    """The figures over the event logs of the newest `runs` sessions of the project in `store`
    (every session's when None; only `job`'s when given); none for a project without a store
    (None)."""
    tallies: dict[str, _JobTally] = {}
    skipped: list[SkippedLog] = []
    seen: list[ReviewUsageEvent] = []
    window, logs = None, _event_logs(store, skipped)
    if store is not None and runs is not None:
        ids, total = newest_started(store, runs, job=job)
        if len(ids) >= runs and total > len(ids):  # older runs are left out: say which are read
            window = StatsWindow(limit=runs, read=len(ids), total=total)
            logs = _window_logs(store, ids, skipped)
    for events in logs:
        seen.extend(event for event in events if isinstance(event, ReviewUsageEvent))
        name = _job_of(events)
        if name is None or (job is not None and name != job):
            continue
        _tally_session(tallies.setdefault(name, _JobTally()), events)
    return Stats(
        jobs=[_job_stats(name, tallies[name]) for name in sorted(tallies)],
        window=window,
        skipped=skipped,
        review_costs=review_costs(seen, job=job),
        calibration=[r.model_copy(update={"results": []}) for r in latest_reports(store)],
    )


def _event_logs(store: Store | None, skipped: list[SkippedLog]) -> Iterator[list[_Read]]:
    """Every session's event log in `store`; one that cannot be read goes to `skipped`."""
    if store is None:
        return
    for session_id in logged_session_ids(store):
        try:
            events = read_events(store, session_id)
        except DeepWorkError as exc:
            skipped.append(SkippedLog(session_id=session_id, error=f"{exc.code}: {exc.message}"))
            continue
        yield [_of_record(event) for event in events]


def _window_logs(
    store: Store, session_ids: list[SessionId], skipped: list[SkippedLog]
) -> Iterator[list[_Read]]:
    """The counted events of each of `session_ids`, oldest session first; one whose log does
    not read goes to `skipped`, with why."""
    logs = events_of_kinds(store, session_ids, STATS_KINDS, _read_counted)
    for session_id in reversed(session_ids):
        events = logs.get(session_id)
        if events is not None:
            yield events
            continue
        try:
            read_events(store, session_id)
        except DeepWorkError as exc:
            skipped.append(SkippedLog(session_id=session_id, error=f"{exc.code}: {exc.message}"))


def _job_of(events: Iterable[_Read]) -> str | None:
    for event in events:
        if isinstance(event, _Started):
            return event.job
    return None


def _tally_session(tally: _JobTally, events: Iterable[_Read]) -> None:
    tally.sessions += 1
    current: dict[str, _StepPass] = {}
    for event in events:
        if isinstance(event, _Begun):
            for step in event.step_ids:
                run = _StepPass(begun=event.ts)
                current[step] = run
                tally.steps.setdefault(step, _StepTally()).runs.append(run)
        elif isinstance(event, _Verdict):
            _tally_verdict(tally, current, event)
        elif isinstance(event, _Override):
            for step in event.step_ids:
                tally.steps.setdefault(step, _StepTally()).overrides += 1
        elif isinstance(event, _Finished):
            for step in event.step_ids:
                if step in current and current[step].finished is None:
                    current[step].finished = event.ts
        elif isinstance(event, _Completed):
            tally.completed += 1
        elif isinstance(event, _Aborted):
            tally.aborted += 1


def _tally_verdict(tally: _JobTally, current: dict[str, _StepPass], event: _Verdict) -> None:
    """One reviewer verdict (one review of one step) of attempt `event.attempt`."""
    step = event.step_id
    run = current.get(step)
    if run is not None:
        attempt = event.attempt
        number = attempt if attempt is not None and attempt > 0 else len(run.attempts) + 1
        run.attempts[number] = run.attempts.get(number, True) and event.passed
    criteria = tally.steps.setdefault(step, _StepTally()).criteria
    for result in event.criteria:
        criteria.setdefault(result.criterion, []).append(result.passed)


def _job_stats(name: str, tally: _JobTally) -> JobStats:
    return JobStats(
        job=name,
        sessions=tally.sessions,
        completed=tally.completed,
        aborted=tally.aborted,
        steps=[_step_stats(step, tally.steps[step]) for step in sorted(tally.steps)],
    )


def _step_stats(step: str, tally: _StepTally) -> StepStats:
    reviewed = [run for run in tally.runs if run.verdicts]
    durations = [
        (run.finished - run.begun).total_seconds() for run in tally.runs if run.finished is not None
    ]
    return StepStats(
        step=step,
        runs=len(tally.runs),
        finished=len(durations),
        reviewed_runs=len(reviewed),
        first_try_pass_rate=_ratio(sum(run.verdicts[0] for run in reviewed), len(reviewed)),
        mean_attempts=_ratio(sum(len(run.verdicts) for run in reviewed), len(reviewed)),
        overrides=tally.overrides,
        median_seconds=statistics.median(durations) if durations else None,
        criteria=[
            CriterionStats(
                criterion=criterion,
                evaluations=len(outcomes),
                failures=outcomes.count(False),
                failure_rate=_ratio(outcomes.count(False), len(outcomes)),
            )
            for criterion, outcomes in sorted(tally.criteria.items())
        ],
    )


def _ratio(part: float, whole: int) -> float | None:
    return round(part / whole, 4) if whole else None
