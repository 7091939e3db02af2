"""What the engine hands the quality gate, and what the gate answers (see `docs/quality-gate.md`).

One `Checkpoint` travels from the engine to the gate's planner, payload and prompt builders
unchanged; the gate answers with one of three verdicts, told apart by type:
`GatePassed` (advance), `GateNeedsWork` (a reviewer failed the outputs) and
`GateSelfReviewRequested` (self-review mode: the agent must have the outputs reviewed).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from deepwork_core.briefing import ResolvedInput
from deepwork_core.models import JobDefinition
from deepwork_core.sessions import OutputValue
from deepwork_core.verdicts import ReviewVerdict

#: `async (done, total, message)`: reports reviewer progress to the client. The engine only
#: passes it through to the gate, which runs it on the event loop.
ProgressReporter = Callable[[int, int, str], Awaitable[None]]


@dataclass(frozen=True, slots=True)
class Checkpoint:
    """One `finished_step` call under review: its steps with their validated outputs."""

    #: Absolute and resolved: containment checks compare resolved paths.
    project_root: Path
    session_id: str
    job: JobDefinition
    #: The step, or every step of a concurrent group (the first one names the self-review file).
    step_ids: tuple[str, ...]
    #: Output name → project-relative path (`file`) or paths (`files`), for all `step_ids`.
    outputs: dict[str, OutputValue]
    #: The file inputs of `step_ids` (each with its `from_step`), as earlier steps submitted them.
    input_files: list[ResolvedInput]
    notes: str | None = None
    #: The external gate's attempt number; 0 when attempts are not counted.
    attempt: int = 0

    def __post_init__(self) -> None:
        object.__setattr__(self, "project_root", self.project_root.resolve())


@dataclass(frozen=True, slots=True, kw_only=True)
class GatePassed:
    """Every review passed, or no review applies: the workflow advances."""

    feedback: str
    reviews: tuple[ReviewVerdict, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class GateNeedsWork:
    """A reviewer failed the outputs; `feedback` says what to fix."""

    feedback: str
    reviews: tuple[ReviewVerdict, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class GateSelfReviewRequested:
    """Self-review mode: the agent has the outputs reviewed per `review_file` (project-relative)."""

    feedback: str
    review_file: str


GateVerdict = GatePassed | GateNeedsWork | GateSelfReviewRequested


class Gate(Protocol):
    """The quality gate as the engine sees it."""

    @property
    def external(self) -> bool:
        """True when a separate reviewer decides (attempts are counted and capped)."""
        ...

    def evaluate(self, checkpoint: Checkpoint, progress: ProgressReporter | None) -> GateVerdict:
        """Review `checkpoint`. Raises `QualityGateError` when no verdict could be had."""
        ...
