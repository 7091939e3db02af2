"""What is open in a session while its events are folded (`runbook`): the run's span, each
step's span, and the step's checkpoint waiting for its answer, with what each will say when it
ends (docs/telemetry.md)."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from deepwork_core.state.event_kinds import ApprovalRequestedEvent, StartedEvent

from deepwork_mcp.telemetry.ids import SpanRef


@dataclass
class OpenCheckpoint:
    """One `finished_step` of a step, waiting for its answer."""

    begun: datetime
    ref: SpanRef
    attempt: int


@dataclass
class OpenStep:
    """A step's span, from `step_begun`, with its gate attempts and its checkpoints."""

    begun: datetime
    ref: SpanRef
    checkpoint: OpenCheckpoint | None = None
    checkpoints: int = 0
    #: attempt number -> whether every verdict of that attempt passed.
    attempts: dict[int, bool] = field(default_factory=dict)
    overridden: bool = False
    undeclared: int = 0
    feedback: list[str] = field(default_factory=list)


@dataclass
class OpenSession:
    """A session's span, from `started`, with its open steps and undecided approvals."""

    started: StartedEvent
    run_id: str
    ref: SpanRef
    parent_span_id: int | None
    steps: dict[str, OpenStep] = field(default_factory=dict)
    runs: dict[str, int] = field(default_factory=dict)
    approvals: dict[str, ApprovalRequestedEvent] = field(default_factory=dict)
    stale: int = 0
    job_version: str | None = None

    @property
    def label(self) -> str:
        return f"{self.started.job}.{self.started.workflow}"

    def parent_of(self, step_id: str | None) -> SpanRef:
        """The open checkpoint of `step_id`, else its span, else the first open step's, else
        the session's."""
        if step_id is not None and step_id in self.steps:
            step = self.steps[step_id]
            return step.ref if step.checkpoint is None else step.checkpoint.ref
        return next(iter(self.steps.values())).ref if self.steps else self.ref
