"""The fold from a session's events to the spans and measurements of its run (no SDK here).

`SessionBook.fold` takes each event as the log records it and returns what it completes: a span
(`SpanRecord`, with its ids, times and attributes) or a measurement (`Measurement`). Spans are
emitted when they end, with the start time of the event that began them:

- a workflow session: `invoke_workflow {job}.{workflow}`, from `started` to `completed` or
  `aborted`; a nested session's span sits under the step of its parent that started it;
- a step: `deepwork.step {step}`, from `step_begun` to `step_finished` (or to the jump, abort or
  completion that left it), with its attempts, outcome and scope-guard counts;
- a checkpoint: `deepwork.checkpoint {step}`, one per `finished_step` of the step, from
  `outputs_submitted` to its answer (`needs_work` ends it with an error status), numbered by
  `deepwork.checkpoint.attempt`;
- a review call: `invoke_agent {review}`, from the `review_usage` event's start to its end,
  under the checkpoint it judged (a failing verdict ends it with an error status);
- an approval: `deepwork.approval {step}`, from `approval_requested` to the decision.

Names and attributes are the OpenTelemetry GenAI conventions' (`gen_ai.*`) or DeepWork's own
(`deepwork.*`); only the names in `names` are used. Content (goals, feedback, comments) is
added only when `log_content` is set.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from deepwork_core.evidence.hashes import ShownOutput
from deepwork_core.state.event_kinds import (
    AbortedEvent,
    ApprovalEvent,
    ApprovalRequestedEvent,
    CompletedEvent,
    GoToStepEvent,
    KnownEvent,
    NeedsWorkEvent,
    OutputsSubmittedEvent,
    OverrideEvent,
    ReviewUsageEvent,
    ReviewVerdictEvent,
    StaleEvidenceEvent,
    StartedEvent,
    StepBegunEvent,
    StepFinishedEvent,
    UndeclaredChangesEvent,
)

from deepwork_mcp.telemetry import names as n
from deepwork_mcp.telemetry.emissions import Attrs, Emission, Measurement, SpanRecord
from deepwork_mcp.telemetry.ids import SpanRef, span_id_for, trace_id_for
from deepwork_mcp.telemetry.open_spans import OpenCheckpoint, OpenSession, OpenStep
from deepwork_mcp.telemetry.reviews import (
    review_attrs,
    review_error,
    review_measurements,
    review_span_attrs,
)


class SessionBook:
    """What is open in each session this process has seen, and the spans that close."""

    def __init__(self, *, platform: str | None = None, log_content: bool = False) -> None:
        self.platform = platform
        self.log_content = log_content
        self.sessions: dict[str, OpenSession] = {}
        #: Review spans handed to reviewer processes (their parent, their own id), waiting for
        #: their `review_usage`.
        self.pending_reviews: dict[tuple[str, str, str, str | None], list[tuple[SpanRef, int]]]
        self.pending_reviews = {}
        self._reviews = 0

    def knows(self, session_id: str) -> bool:
        return session_id in self.sessions

    def fold(
        self, event: KnownEvent, host: SpanRef | None = None, job_version: str | None = None
    ) -> list[Emission]:
        """What `event` completes. `host` is the span of the tool call that wrote it, when
        that call came with the host's `traceparent`; only a run's `started` uses it, and the
        version of its job, `job_version`."""
        if isinstance(event, StartedEvent):
            self._start(event, host)
            self.sessions[event.session_id].job_version = job_version
            return []
        if isinstance(event, ReviewUsageEvent):
            return self._review(event)
        session = self.sessions.get(event.session_id)
        if session is None:
            return []
        return self._fold_session(session, event)

    def awaits_approval(self, session_id: str, request_id: str | None = None) -> bool:
        """Whether `session_id` has an approval request (`request_id`, else any) undecided."""
        session = self.sessions.get(session_id)
        if session is None:
            return False
        return bool(session.approvals) if request_id is None else request_id in session.approvals

    def review_parent(self, session_id: str, step_id: str) -> SpanRef | None:
        """The span a review of `step_id` in `session_id` will sit under (None: unknown)."""
        session = self.sessions.get(session_id)
        return None if session is None else session.parent_of(step_id)

    def reserve_review(
        self, session_id: str, step_id: str, review: str, target: str | None
    ) -> SpanRef | None:
        """A span id for the next review call of this task, for the reviewer's TRACEPARENT."""
        parent = self.review_parent(session_id, step_id)
        if parent is None:
            return None
        self._reviews += 1
        ref = SpanRef(
            parent.trace_id, span_id_for(session_id, "review", self._reviews, review), parent.state
        )
        key = (session_id, step_id, review, target)
        self.pending_reviews.setdefault(key, []).append((parent, ref.span_id))
        return ref

    def call_parent(self, event: KnownEvent) -> SpanRef | None:
        """The span a tool call that writes `event` sits under when it came without the host's
        trace: the step it acted on, else the run (None: a session this book does not know)."""
        session = self.sessions.get(event.session_id)
        if session is None:
            return None
        step_ids = getattr(event, "step_ids", None) or [getattr(event, "step_id", None)]
        for step_id in step_ids:
            if isinstance(step_id, str) and step_id in session.steps:
                return session.steps[step_id].ref
        return session.ref

    # -- sessions -------------------------------------------------------------------------

    def _start(self, event: StartedEvent, host: SpanRef | None) -> None:
        parent = self.sessions.get(event.parent_session_id or "")
        state = ""
        if parent is not None:
            run_id, where = parent.run_id, parent.parent_of(None)
            trace_id, parent_span_id, state = where.trace_id, where.span_id, where.state
        elif host is not None:
            run_id, trace_id, parent_span_id = event.session_id, host.trace_id, host.span_id
            state = host.state
        else:
            run_id = event.parent_session_id or event.session_id
            trace_id, parent_span_id = trace_id_for(run_id), None
        ref = SpanRef(trace_id, span_id_for(event.session_id, "workflow"), state)
        self.sessions[event.session_id] = OpenSession(event, run_id, ref, parent_span_id)

    def _fold_session(self, session: OpenSession, event: KnownEvent) -> list[Emission]:
        out: list[Emission] = []
        if isinstance(event, StepBegunEvent):
            for step_id in event.step_ids:
                out += self._close_step(session, step_id, event.ts, "left")
                run = session.runs[step_id] = session.runs.get(step_id, 0) + 1
                ref = SpanRef(
                    session.ref.trace_id,
                    span_id_for(session.started.session_id, step_id, run),
                    session.ref.state,
                )
                session.steps[step_id] = OpenStep(event.ts, ref)
        elif isinstance(event, OutputsSubmittedEvent):
            for step_id in event.step_ids:
                out += self._submitted(session, step_id, event.ts)
        elif isinstance(event, NeedsWorkEvent):
            for step_id in event.step_ids:
                out += self._answer(session, step_id, event.ts, "needs_work", event.failed_reviews)
        elif isinstance(event, ReviewVerdictEvent):
            self._verdict(session, event)
        elif isinstance(event, OverrideEvent | UndeclaredChangesEvent):
            for step_id in event.step_ids:
                if (step := session.steps.get(step_id)) is None:
                    continue
                if isinstance(event, OverrideEvent):
                    step.overridden = True
                else:
                    step.undeclared = len(event.files)
        elif isinstance(event, StaleEvidenceEvent):
            session.stale += len(event.stale)
        elif isinstance(event, GoToStepEvent):
            for step_id in {*event.from_step_ids, *event.cleared_step_ids}:
                out += self._close_step(session, step_id, event.ts, "left")
        elif isinstance(event, StepFinishedEvent):
            for step_id in event.step_ids:
                out += self._close_step(session, step_id, event.ts, event.verdict.value)
        elif isinstance(event, ApprovalRequestedEvent):
            session.approvals[event.request_id] = event
            for step_id in event.step_ids:
                out += self._answer(session, step_id, event.ts, "awaiting_approval")
        elif isinstance(event, ApprovalEvent):
            out += self._approval(session, event)
        elif isinstance(event, CompletedEvent | AbortedEvent):
            out += self._end_session(session, event)
        return out

    def _end_session(
        self, session: OpenSession, event: CompletedEvent | AbortedEvent
    ) -> list[Emission]:
        status = "completed" if isinstance(event, CompletedEvent) else "aborted"
        out: list[Emission] = []
        for step_id in list(session.steps):
            out += self._close_step(session, step_id, event.ts, status)
        started = session.started
        attrs: Attrs = {
            n.GEN_AI_OPERATION_NAME: n.INVOKE_WORKFLOW,
            n.GEN_AI_WORKFLOW_NAME: session.label,
            n.GEN_AI_CONVERSATION_ID: started.session_id,
            n.DW_JOB: started.job,
            n.DW_WORKFLOW: started.workflow,
            n.DW_RUN_ID: session.run_id,
            n.DW_WORKFLOW_STATUS: status,
            n.DW_EVIDENCE_STALE: session.stale,
        }
        if self.platform is not None:
            attrs[n.DW_PLATFORM] = self.platform
        if session.job_version is not None:
            attrs[n.DW_JOB_VERSION] = session.job_version
        if started.instance_id is not None:
            attrs[n.DW_INSTANCE_ID] = started.instance_id
        if started.parent_session_id is not None:
            attrs[n.DW_PARENT_SESSION_ID] = started.parent_session_id
        if isinstance(event, CompletedEvent) and event.steps_completed is not None:
            attrs[n.DW_STEPS_COMPLETED] = event.steps_completed
        events: tuple[tuple[str, Attrs], ...] = ()
        if self.log_content:
            content: Attrs = {n.DW_CONTENT: started.goal or ""}
            if isinstance(event, AbortedEvent):
                content[n.DW_REASON] = event.reason
            events = ((n.EVENT_GOAL, content),)
        out.append(
            SpanRecord(
                n.INVOKE_WORKFLOW + " " + session.label,
                session.ref,
                session.parent_span_id,
                started.ts,
                event.ts,
                attrs,
                events=events,
            )
        )
        seconds = (event.ts - started.ts).total_seconds()
        low: Attrs = {
            n.DW_JOB: started.job,
            n.DW_WORKFLOW: started.workflow,
            n.DW_WORKFLOW_STATUS: status,
        }
        out.append(Measurement(n.M_WORKFLOW_DURATION, seconds, low))
        del self.sessions[started.session_id]
        return out

    # -- steps ----------------------------------------------------------------------------

    def _verdict(self, session: OpenSession, event: ReviewVerdictEvent) -> None:
        step = session.steps.get(event.step_id)
        if step is None:
            return
        number = event.attempt if event.attempt else len(step.attempts) + 1
        step.attempts[number] = step.attempts.get(number, True) and event.passed
        if self.log_content and event.feedback:
            step.feedback.append(event.feedback)

    def _close_step(
        self, session: OpenSession, step_id: str, ts: datetime, outcome: str
    ) -> list[Emission]:
        if step_id not in session.steps:
            return []
        closed = self._answer(session, step_id, ts, outcome)
        step = session.steps.pop(step_id)
        attempts = len(step.attempts)
        attrs: Attrs = {
            n.DW_JOB: session.started.job,
            n.DW_WORKFLOW: session.started.workflow,
            n.DW_STEP: step_id,
            n.DW_STEP_RUN: session.runs.get(step_id, 1),
            n.DW_STEP_OUTCOME: outcome,
            n.DW_STEP_ATTEMPTS: attempts,
            n.DW_STEP_OVERRIDDEN: step.overridden,
            n.DW_SCOPE_UNDECLARED: step.undeclared,
            n.GEN_AI_CONVERSATION_ID: session.started.session_id,
        }
        events = tuple(_content(n.EVENT_FEEDBACK, text) for text in step.feedback)
        span = SpanRecord(
            n.SPAN_STEP + " " + step_id,
            step.ref,
            session.ref.span_id,
            step.begun,
            ts,
            attrs,
            events=events,
        )
        out: list[Emission] = [*closed, span]
        low: Attrs = {
            n.DW_JOB: session.started.job,
            n.DW_WORKFLOW: session.started.workflow,
            n.DW_STEP: step_id,
        }
        if attempts:
            out.append(Measurement(n.M_STEP_ATTEMPTS, attempts, low))
            first = step.attempts[min(step.attempts)]
            out.append(Measurement(n.M_GATE_FIRST_PASS, 1, {**low, n.DW_GATE_PASSED: first}))
        return out

    def _submitted(self, session: OpenSession, step_id: str, ts: datetime) -> list[Emission]:
        """A `finished_step` of `step_id`: its checkpoint opens (one still open is resubmitted)."""
        step = session.steps.get(step_id)
        if step is None:
            return []
        out = self._answer(session, step_id, ts, "resubmitted")
        step.checkpoints += 1
        run = session.runs.get(step_id, 1)
        span_id = span_id_for(
            session.started.session_id, step_id, run, "checkpoint", step.checkpoints
        )
        ref = SpanRef(session.ref.trace_id, span_id, session.ref.state)
        step.checkpoint = OpenCheckpoint(ts, ref, step.checkpoints)
        return out

    def _answer(
        self,
        session: OpenSession,
        step_id: str,
        ts: datetime,
        outcome: str,
        failed_reviews: int | None = None,
    ) -> list[Emission]:
        """The open checkpoint of `step_id` answered `outcome` (`needs_work`: refused)."""
        step = session.steps.get(step_id)
        if step is None or step.checkpoint is None:
            return []
        checkpoint, step.checkpoint = step.checkpoint, None
        attrs: Attrs = {
            n.DW_JOB: session.started.job,
            n.DW_WORKFLOW: session.started.workflow,
            n.DW_STEP: step_id,
            n.DW_STEP_RUN: session.runs.get(step_id, 1),
            n.DW_CHECKPOINT_ATTEMPT: checkpoint.attempt,
            n.DW_CHECKPOINT_OUTCOME: outcome,
            n.GEN_AI_CONVERSATION_ID: session.started.session_id,
        }
        if failed_reviews is not None:
            attrs[n.DW_CHECKPOINT_FAILED] = failed_reviews
        error = n.ERROR_NEEDS_WORK if outcome == "needs_work" else None
        name = n.SPAN_CHECKPOINT + " " + step_id
        span = SpanRecord(
            name, checkpoint.ref, step.ref.span_id, checkpoint.begun, ts, attrs, error
        )
        return [span]

    def _approval(self, session: OpenSession, event: ApprovalEvent) -> list[Emission]:
        asked = session.approvals.pop(event.request_id, None)
        begun = asked.ts if asked is not None else event.ts
        step_id = event.step_ids[0] if event.step_ids else None
        matched = asked is not None and _hashes(asked.shown) == _hashes(event.shown)
        decision = "approved" if event.approved else "rejected"
        attrs: Attrs = {
            n.DW_JOB: session.started.job,
            n.DW_WORKFLOW: session.started.workflow,
            n.DW_STEP: step_id or "",
            n.DW_APPROVAL_CHANNEL: event.channel,
            n.DW_APPROVAL_DECISION: decision,
            n.DW_APPROVAL_EVIDENCE_MATCHED: matched,
            n.DW_APPROVAL_FILES: len(event.shown),
        }
        if event.signer:
            attrs[n.DW_APPROVAL_SIGNER] = event.signer
        events: tuple[tuple[str, Attrs], ...] = ()
        if self.log_content and event.comment:
            events = (_content(n.EVENT_COMMENT, event.comment),)
        ref = SpanRef(
            session.ref.trace_id,
            span_id_for(session.started.session_id, "approval", event.request_id),
        )
        parent = session.parent_of(step_id)
        span = SpanRecord(
            n.SPAN_APPROVAL + " " + (step_id or ""),
            ref,
            parent.span_id,
            begun,
            event.ts,
            attrs,
            events=events,
        )
        low: Attrs = {
            n.DW_JOB: session.started.job,
            n.DW_STEP: step_id or "",
            n.DW_APPROVAL_DECISION: decision,
        }
        seconds = (event.ts - begun).total_seconds()
        return [span, Measurement(n.M_APPROVAL_WAIT, seconds, low)]

    # -- reviews --------------------------------------------------------------------------

    def _review(self, event: ReviewUsageEvent) -> list[Emission]:
        if event.mode == "reused":  # no reviewer ran: counted, costing nothing
            return [Measurement(n.M_REVIEW_REUSED, 1, review_attrs(event))]
        if event.mode != "external":
            return []
        reviewed = event.reviewed_session_id or event.session_id
        session = self.sessions.get(reviewed)
        key = (reviewed, event.step_id, event.review, event.target_file)
        waiting = self.pending_reviews.get(key)
        parent = session.parent_of(event.step_id) if session is not None else None
        if parent is None:
            return review_measurements(event)
        if waiting:  # under the span it was reserved under, though its checkpoint has ended
            parent, span_id = waiting.pop(0)
        else:
            self._reviews += 1
            span_id = span_id_for(reviewed, "review", self._reviews, event.review)
        attrs = review_span_attrs(event)
        start = datetime.fromtimestamp(event.ts.timestamp() - event.seconds, tz=event.ts.tzinfo)
        error = review_error(event)
        ref = SpanRef(parent.trace_id, span_id)
        span = SpanRecord(
            n.INVOKE_AGENT + " " + event.review, ref, parent.span_id, start, event.ts, attrs, error
        )
        return [span, *review_measurements(event)]


def _hashes(shown: Sequence[ShownOutput]) -> set[tuple[str, str | None]]:
    return {(item.path, item.sha256) for item in shown}


def _content(name: str, text: str) -> tuple[str, Attrs]:
    return name, {n.DW_CONTENT: text}
