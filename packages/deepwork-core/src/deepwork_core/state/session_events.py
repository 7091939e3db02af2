"""The events a workflow session records, with their fields (docs/navigation.md, "The event
log"). The engine calls these at each transition; `deepwork_core.state.events` writes the lines.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

from deepwork_core.evidence.verdicts import ReviewVerdict
from deepwork_core.state.events import EventName, append_event
from deepwork_core.state.sessions import OutputValue, Session


class SessionEvents:
    """Writes the events of the sessions of one project, stamped by the engine's clock."""

    def __init__(self, project_root: Path, clock: Callable[[], datetime]) -> None:
        self.project_root = project_root
        self.clock = clock

    def _write(self, session_id: str, name: EventName, fields: Mapping[str, Any]) -> None:
        append_event(self.project_root, session_id, name, fields, now=self.clock())

    def started(self, session: Session) -> None:
        self._write(
            session.session_id,
            EventName.STARTED,
            {
                "job": session.job_name,
                "workflow": session.workflow_name,
                "goal": session.goal,
                "instance_id": session.instance_id,
                "agent_id": session.agent_id,
                "parent_session_id": session.parent_session_id,
                "branch": session.branch_name,
            },
        )
        self.step_begun(session)

    def step_begun(self, session: Session) -> None:
        self._write(
            session.session_id,
            EventName.STEP_BEGUN,
            {
                "step_ids": list(session.current_step_ids),
                "entry_index": session.current_entry_index,
            },
        )

    def outputs_submitted(
        self,
        session_id: str,
        step_ids: Sequence[str],
        outputs: Mapping[str, OutputValue],
        notes: str | None,
    ) -> None:
        self._write(
            session_id,
            EventName.OUTPUTS_SUBMITTED,
            {"step_ids": list(step_ids), "outputs": dict(outputs), "notes": notes},
        )

    def verdicts(self, session_id: str, verdicts: Sequence[ReviewVerdict], attempt: int) -> None:
        for verdict in verdicts:
            self._write(
                session_id,
                EventName.REVIEW_VERDICT,
                {
                    "step_id": verdict.step_id,
                    "review": verdict.review_run_each,
                    "target_file": verdict.target_file,
                    "passed": verdict.passed,
                    "feedback": verdict.feedback,
                    "criteria": [c.model_dump(mode="json") for c in verdict.criteria_results],
                    "attempt": attempt,
                },
            )

    def override(self, session_id: str, step_ids: Sequence[str], reason: str) -> None:
        self._write(session_id, EventName.OVERRIDE, {"step_ids": list(step_ids), "reason": reason})

    def needs_work(
        self, session_id: str, step_ids: Sequence[str], attempt: int, failed: int
    ) -> None:
        self._write(
            session_id,
            EventName.NEEDS_WORK,
            {"step_ids": list(step_ids), "attempt": attempt, "failed_reviews": failed},
        )

    def went_to_step(
        self, session: Session, from_step_ids: Sequence[str], cleared: Sequence[str]
    ) -> None:
        self._write(
            session.session_id,
            EventName.GO_TO_STEP,
            {
                "from_step_ids": list(from_step_ids),
                "to_step_ids": list(session.current_step_ids),
                "cleared_step_ids": list(cleared),
            },
        )
        self.step_begun(session)

    def aborted(self, session: Session, reason: str) -> None:
        self._write(
            session.session_id,
            EventName.ABORTED,
            {"step_ids": list(session.current_step_ids), "reason": reason},
        )

    def completed(self, session: Session) -> None:
        done = sum(1 for r in session.step_progress.values() if r.completed_at is not None)
        self._write(session.session_id, EventName.COMPLETED, {"steps_completed": done})
