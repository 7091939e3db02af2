"""What the engine hands the quality gate, and what the gate answers (see `docs/quality-gate.md`).

One `Checkpoint` travels from the engine to the gate's planner, payload and prompt builders
unchanged (on the review queue as a `CheckpointRecord`); the gate answers with one of four
verdicts, told apart by type: `GatePassed` (advance), `GateNeedsWork` (a reviewer failed
the outputs), `GateSelfReviewRequested` (self-review mode: the agent must have the outputs
reviewed) and `GateReviewing` (background reviews still run after `quality_gate.wait_seconds`).
Each carries `warnings` (`<code>: <message>`), which the engine passes on in its answer.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from deepwork_core.base.identifiers import SessionId
from deepwork_core.evidence.verdicts import ReviewVerdict, VerdictKind
from deepwork_core.evidence.watch import ChangeWatch
from deepwork_core.gate.costs.quotes import ReviewPrice, TaskPrice
from deepwork_core.jobs.model import JobDefinition, Step
from deepwork_core.state.sessions import OutputValue
from deepwork_core.state.store.port import Store

UNDECLARED_BEGIN = "==================== BEGIN UNDECLARED CHANGES ===================="
UNDECLARED_END = "==================== END UNDECLARED CHANGES ===================="
#: What the reviewer is told about the scope guard's findings (docs/evidence.md).
UNDECLARED_NOTE = (
    "Files changed during this step that it declares neither as outputs nor under its "
    "may_change globs. Judge whether each change belongs to the step's work; read them from "
    "the project. A change that breaks a criterion fails it."
)

#: `(done, total, message)`: reports review progress to the client, one call per finished
#: review. Called from the engine's thread; the server's adapter hands it to its event loop.
ProgressReporter = Callable[[int, int, str], None]


@dataclass(frozen=True, slots=True)
class ResolvedInput:
    """A step input: a user parameter or what an earlier step submitted.

    `paths` are files; `value` is text (a `string` output of an earlier step, or a value given
    at `start_workflow`; a file path given at start is in `paths`), or a list of texts (the
    outputs of a fanned-out `string` output, or a list given for a `string` argument).
    """

    step_id: str
    name: str
    description: str | None
    from_step: str | None
    paths: list[str] = field(default_factory=list)
    value: str | list[str] | None = None


@dataclass(frozen=True, slots=True)
class Checkpoint:
    """One `finished_step` call under review: its steps with their validated outputs."""

    #: Absolute and resolved: containment checks compare resolved paths.
    project_root: Path
    #: The project's open store: the gate's review jobs, the run's budget and usage events.
    store: Store
    session_id: SessionId
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
    #: What the agent says it did, checked against the steps' `process_requirements`.
    work_summary: str | None = None
    #: Files the steps changed without declaring them (the scope guard, docs/evidence.md).
    undeclared_changes: tuple[str, ...] = ()
    #: The run's top-level session (None: this session): its log holds the run's review usage
    #: and its budget is counted there (docs/quality-gate.md).
    run_id: SessionId | None = None
    #: How many entries the session's quality log had when this was submitted: each recorded
    #: verdict or error starts a new round of background reviews, and a verdict is recorded
    #: only while the log is still that long (docs/quality-gate.md, "Background reviews").
    log_length: int = 0
    #: The project's change watch, when it has one: the `.deepreview` files are listed once
    #: and kept fresh by it (docs/quality-gate.md). Not carried on the review queue.
    watch: ChangeWatch | None = None

    @property
    def resolved_run_id(self) -> SessionId:
        return self.run_id or self.session_id

    def undeclared_section(self) -> list[str]:
        """The reviewer payload's section on undeclared changes; none when there are none."""
        if not self.undeclared_changes:
            return []
        listed = [f"- {path}" for path in self.undeclared_changes]
        return ["\n".join([UNDECLARED_BEGIN, UNDECLARED_NOTE, *listed, UNDECLARED_END])]

    def undeclared_lines(self) -> list[str]:
        """The same for the self-review file (Markdown)."""
        if not self.undeclared_changes:
            return []
        listed = [f"- `{path}`" for path in self.undeclared_changes]
        return ["", "## Undeclared changes", "", UNDECLARED_NOTE, "", *listed]

    def __post_init__(self) -> None:
        object.__setattr__(self, "project_root", self.project_root.resolve())


class CheckpointRecord(BaseModel):
    """A `Checkpoint` as the review queue carries it (docs/quality-gate.md, "Background
    reviews"): its fields as JSON, the job by name; the worker that reads it knows the project."""

    #: Keys a newer version added are ignored, so its jobs still run here.
    model_config = ConfigDict(extra="ignore", frozen=True)

    session_id: str
    job_name: str
    step_ids: tuple[str, ...]
    outputs: dict[str, OutputValue]
    input_files: list[ResolvedInput]
    notes: str | None = None
    attempt: int = 0
    work_summary: str | None = None
    undeclared_changes: tuple[str, ...] = ()
    run_id: str | None = None
    log_length: int = 0

    @classmethod
    def of(cls, checkpoint: Checkpoint) -> CheckpointRecord:
        carried = {name: getattr(checkpoint, name) for name in _CARRIED}
        return cls(job_name=checkpoint.job.name, **carried)

    def checkpoint(self, project_root: Path, store: Store, job: JobDefinition) -> Checkpoint:
        """The checkpoint again, in `project_root` with its open `store`, of `job` (the one
        named `job_name`)."""
        carried = {name: getattr(self, name) for name in _CARRIED}
        carried["outputs"], carried["input_files"] = dict(self.outputs), list(self.input_files)
        return Checkpoint(project_root=project_root, store=store, job=job, **carried)


#: The fields a `CheckpointRecord` carries as they are: all but the project root, the store and
#: the job.
_CARRIED: tuple[str, ...] = tuple(
    name for name in CheckpointRecord.model_fields if name != "job_name"
)


@dataclass(frozen=True, slots=True, kw_only=True)
class GatePassed:
    """Every review passed, or no review applies: the workflow advances."""

    feedback: str
    #: One verdict per review task; empty when no review applied, so none ran.
    reviews: tuple[ReviewVerdict, ...] = ()
    warnings: tuple[str, ...] = ()

    @property
    def kind(self) -> VerdictKind:
        """`REVIEWER` when a reviewer judged the outputs; `UNREVIEWED` when no review ran."""
        return VerdictKind.REVIEWER if self.reviews else VerdictKind.UNREVIEWED


@dataclass(frozen=True, slots=True, kw_only=True)
class GateNeedsWork:
    """A reviewer failed the outputs; `feedback` says what to fix."""

    feedback: str
    reviews: tuple[ReviewVerdict, ...] = ()
    warnings: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class GateSelfReviewRequested:
    """Self-review mode: the agent has the outputs reviewed per `review_file` (project-relative)."""

    feedback: str
    review_file: str
    warnings: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class ReviewProgress:
    """One background review as a `reviewing` answer shows it."""

    review_id: str
    #: What it judges, e.g. `draft: output 'report' (out/b.md)`.
    judges: str
    #: `queued`, `running`, `passed` or `failed`.
    state: str
    #: What it is expected to cost, and on what basis (docs/quality-gate.md).
    expected: TaskPrice | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class GateReviewing:
    """Background reviews still run: the agent calls `finished_step` again, same outputs."""

    feedback: str
    reviews: tuple[ReviewProgress, ...]
    warnings: tuple[str, ...] = ()
    #: What the reviews are expected to cost in all (None: the gate cannot say).
    price: ReviewPrice | None = None


GateVerdict = GatePassed | GateNeedsWork | GateSelfReviewRequested | GateReviewing


def has_own_reviews(steps: Sequence[Step]) -> bool:
    """True when a step declares reviews or process requirements, or names a doc spec on an
    output (its criteria are a review of their own)."""
    return any(
        step.reviews
        or step.process_requirements
        or any(spec.doc_spec for spec in step.outputs.values())
        for step in steps
    )
