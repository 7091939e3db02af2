"""The engine's recorder: which event each session transition writes, stamped by its clock.

The events and their fields are the models of `deepwork_core.state.event_kinds`
(docs/navigation.md, "The event log"); this class builds them from the session at each
transition and `deepwork_core.state.events` appends the lines.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from datetime import datetime

from deepwork_core.evidence.verdicts import ReviewVerdict
from deepwork_core.state.event_kinds import (
    AbortedEvent,
    CompletedEvent,
    GoToStepEvent,
    NeedsWorkEvent,
    OutputsSubmittedEvent,
    OverrideEvent,
    ReviewVerdictEvent,
    StartedEvent,
    StepBegunEvent,
)
from deepwork_core.state.events import append_event
from deepwork_core.state.sessions import OutputValue, Session
from deepwork_core.state.store.port import Store


class SessionEvents:
    """Writes the events of the sessions of one project to its store, stamped by the engine's
    clock."""

    def __init__(self, store: Store, clock: Callable[[], datetime]) -> None:
        self.store = store
        self.clock = clock

    def started(self, session: Session) -> None:
        append_event(
            self.store,
            StartedEvent(
                ts=self.clock(),
                session_id=session.session_id,
                job=session.job_name,
                workflow=session.workflow_name,
                goal=session.goal,
                instance_id=session.instance_id,
                agent_id=session.agent_id,
                parent_session_id=session.parent_session_id,
                branch=session.branch_name,
            ),
        )
        self.step_begun(session)

    def step_begun(self, session: Session) -> None:
        append_event(
            self.store,
            StepBegunEvent(
                ts=self.clock(),
                session_id=session.session_id,
                step_ids=list(session.current_step_ids),
                entry_index=session.current_entry_index,
            ),
        )

    def outputs_submitted(
        self,
        session_id: str,
        step_ids: Sequence[str],
        outputs: Mapping[str, OutputValue],
        notes: str | None,
    ) -> None:
        append_event(
            self.store,
            OutputsSubmittedEvent(
                ts=self.clock(),
                session_id=session_id,
                step_ids=list(step_ids),
                outputs=dict(outputs),
                notes=notes,
            ),
        )

    def verdicts(self, session_id: str, verdicts: Sequence[ReviewVerdict], attempt: int) -> None:
        for verdict in verdicts:
            append_event(
                self.store,
                ReviewVerdictEvent(
                    ts=self.clock(),
                    session_id=session_id,
                    step_id=verdict.step_id,
                    review=verdict.review_run_each,
                    target_file=verdict.target_file,
                    passed=verdict.passed,
                    feedback=verdict.feedback,
                    criteria=list(verdict.criteria_results),
                    attempt=attempt,
                    **({"reused_from": verdict.reused_from} if verdict.reused_from else {}),
                ),
            )

    def override(self, session_id: str, step_ids: Sequence[str], reason: str) -> None:
        append_event(
            self.store,
            OverrideEvent(
                ts=self.clock(), session_id=session_id, step_ids=list(step_ids), reason=reason
            ),
        )

    def needs_work(
        self, session_id: str, step_ids: Sequence[str], attempt: int, failed: int
    ) -> None:
        append_event(
            self.store,
            NeedsWorkEvent(
                ts=self.clock(),
                session_id=session_id,
                step_ids=list(step_ids),
                attempt=attempt,
                failed_reviews=failed,
            ),
        )

    def went_to_step(
        self, session: Session, from_step_ids: Sequence[str], cleared: Sequence[str]
    ) -> None:
        append_event(
            self.store,
            GoToStepEvent(
                ts=self.clock(),
                session_id=session.session_id,
                from_step_ids=list(from_step_ids),
                to_step_ids=list(session.current_step_ids),
                cleared_step_ids=list(cleared),
            ),
        )
        self.step_begun(session)

    def aborted(self, session: Session, reason: str) -> None:
        append_event(
            self.store,
            AbortedEvent(
                ts=self.clock(),
                session_id=session.session_id,
                step_ids=list(session.current_step_ids),
                reason=reason,
            ),
        )

    def completed(self, session: Session) -> None:
        done = sum(1 for r in session.step_progress.values() if r.completed_at is not None)
        append_event(
            self.store,
            CompletedEvent(ts=self.clock(), session_id=session.session_id, steps_completed=done),
        )
