"""The engine's recorder: which event each session transition writes, stamped by its clock.

The events and their fields are the models of `deepwork_core.state.event_kinds`
(docs/navigation.md, "The event log"); this class builds them from the session at each
transition and `deepwork_core.state.events` appends the lines.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from pathlib import Path

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


class SessionEvents:
    """Writes the events of the sessions of one project, stamped by the engine's clock."""

    def __init__(self, project_root: Path, clock: Callable[[], datetime]) -> None:
        self.project_root = project_root
        self.clock = clock

    def started(self, session: Session) -> None:
        append_event(
            self.project_root,
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
            self.project_root,
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
            self.project_root,
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
                self.project_root,
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
                ),
            )

    def override(self, session_id: str, step_ids: Sequence[str], reason: str) -> None:
        append_event(
            self.project_root,
            OverrideEvent(
                ts=self.clock(), session_id=session_id, step_ids=list(step_ids), reason=reason
            ),
        )

    def needs_work(
        self, session_id: str, step_ids: Sequence[str], attempt: int, failed: int
    ) -> None:
        append_event(
            self.project_root,
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
            self.project_root,
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
            self.project_root,
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
            self.project_root,
            CompletedEvent(ts=self.clock(), session_id=session.session_id, steps_completed=done),
        )
