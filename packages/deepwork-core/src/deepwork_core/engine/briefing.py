"""What the agent is told when a checkpoint begins (`begin_step`, docs/runtime.md).

A checkpoint is one workflow entry: a single step or a concurrent group. The brief carries the
first step's instructions (with the concurrent-execution note naming every other step of a group),
the union of the group's expected outputs and reviews, and the file inputs resolved to the paths
earlier steps of the session actually submitted.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from deepwork_core.base.errors import FileReadError, PathOutsideProjectError
from deepwork_core.base.fsutil import read_text_file
from deepwork_core.base.identifiers import resolve_inside
from deepwork_core.engine.fanout.items import instance_instructions
from deepwork_core.engine.outputs import SYNTAX_HINTS
from deepwork_core.gate.checkpoint import ResolvedInput
from deepwork_core.jobs.discovery import LoadedJob
from deepwork_core.jobs.docspec import load_doc_spec, render_doc_spec_for_instructions
from deepwork_core.jobs.errors import JobCode, JobInvalidError
from deepwork_core.jobs.model import JobDefinition, Step, sub_workflow_instructions
from deepwork_core.jobs.steps.parts import InputType, OutputType, Review
from deepwork_core.state.sessions import Session

#: A step's instructions file larger than this is refused (`job.file_missing`).
MAX_INSTRUCTIONS_BYTES = 1024 * 1024


@dataclass(frozen=True, slots=True)
class ExpectedOutput:
    step_id: str
    name: str
    type: OutputType
    description: str
    required: bool

    @property
    def syntax_for_finished_step_tool(self) -> str:
        return SYNTAX_HINTS[self.type]


@dataclass(frozen=True, slots=True)
class StepReview:
    step_id: str
    review: Review


@dataclass(frozen=True, slots=True)
class InstanceView:
    """One instance as answers and pages show it."""

    index: int
    item: str
    session_id: str
    #: `running`, `needs_work`, `done` or `aborted`.
    state: str
    worktree: str | None = None
    abort_reason: str | None = None


@dataclass(frozen=True, slots=True)
class FanOutBrief:
    """What the answer that begins a fanned-out step lists."""

    step_id: str
    parent_session_id: str
    instances: list[InstanceView]
    max_parallel: int | None = None
    isolation: str = "shared"
    counts: dict[str, int] = field(default_factory=dict)
    #: The steps of a concurrent group run in worktrees (one instance each); empty for for_each.
    group: list[str] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class StepBrief:
    session_id: str
    step_ids: tuple[str, ...]
    job_dir: Path
    instructions: str
    common_job_info: str
    expected_outputs: list[ExpectedOutput]
    reviews: list[StepReview]
    inputs: list[ResolvedInput]
    #: The agent type the workflow is handed to (0.10-format workflows), if any.
    agent: str | None = None
    #: Set on the answer that begins a fanned-out step: its instances (docs/fan-out.md).
    fan_out: FanOutBrief | None = None

    @property
    def step_id(self) -> str:
        return self.step_ids[0]


class InstructionReader:
    """Reads step instruction files and doc specs, cached by path, revalidated by mtime and size."""

    def __init__(self, project_root: Path, *, reviews_run: bool = True) -> None:
        """`reviews_run` False: the quality gate is off, so briefs list no step reviews (none
        will run)."""
        self.project_root = project_root
        self.reviews_run = reviews_run
        self._cache: dict[Path, tuple[int, int, str]] = {}
        self._specs: dict[Path, tuple[int, int, str]] = {}

    def doc_spec_section(self, spec_path: str, output_name: str) -> str:
        """The rendered doc spec of an output (docs/job-format.md), for the step's instructions."""
        path = resolve_inside(self.project_root, spec_path, what=f"doc_spec of {output_name!r}")
        try:
            stat = path.stat()
        except OSError:
            stat = None
        cached = self._specs.get(path)
        if (
            stat is not None
            and cached is not None
            and cached[:2] == (stat.st_mtime_ns, stat.st_size)
        ):
            return cached[2]
        text = render_doc_spec_for_instructions(load_doc_spec(path))  # raises doc_spec.*
        if stat is not None:
            self._specs[path] = (stat.st_mtime_ns, stat.st_size, text)
        return text

    def read(self, job: LoadedJob, step: Step) -> str:
        """The step's instructions: inline, generated for a sub-workflow, or from its file."""
        if step.instructions is not None:
            return step.instructions
        if step.instructions_file is None:
            return sub_workflow_instructions(job.name, step)
        try:
            path = resolve_inside(job.job_dir.resolve(), step.instructions_file, what="file")
            stat = path.stat()
            cached = self._cache.get(path)
            if cached is not None and cached[:2] == (stat.st_mtime_ns, stat.st_size):
                return cached[2]
            text = read_text_file(path, limit=MAX_INSTRUCTIONS_BYTES)
        except (OSError, FileReadError, PathOutsideProjectError) as exc:
            raise JobInvalidError(
                f"job {job.name!r}, step {step.id!r}: cannot read instructions_file "
                f"{step.instructions_file!r} in {job.job_dir}: {exc}",
                code=JobCode.JOB_FILE_MISSING,
            ) from None
        self._cache[path] = (stat.st_mtime_ns, stat.st_size, text)
        return text


def resolve_inputs(
    session: Session, steps: Sequence[Step], definition: JobDefinition | None = None
) -> list[ResolvedInput]:
    """The inputs of `steps`, resolved against what `session` recorded and was given at start.

    With `definition`, an input from an earlier step's `string` output carries its text, and a
    file input from a step the session's workflow does not run is left out: a step shared by two
    workflows takes each file from the step that produces it in the workflow running it.
    """
    in_workflow = _workflow_step_ids(definition, session.workflow_name)
    resolved: list[ResolvedInput] = []
    for step in steps:
        for item in step.inputs:
            if item.file is not None and item.from_step is not None:
                if in_workflow is not None and item.from_step not in in_workflow:
                    continue
                record = session.step_progress.get(item.from_step)
                value = record.outputs.get(item.file) if record is not None else None
                if value is not None and _is_text(definition, item.from_step, item.file):
                    said = value if isinstance(value, str) else list(value)  # fanned out: a list
                    resolved.append(
                        ResolvedInput(step.id, item.file, None, item.from_step, value=said)
                    )
                    continue
                paths = [value] if isinstance(value, str) else list(value or [])
                resolved.append(ResolvedInput(step.id, item.file, None, item.from_step, paths))
            elif item.name is not None:
                given = session.inputs.get(item.name)
                text: str | list[str] | None = None
                if isinstance(given, str) and item.type is not InputType.FILE_PATH:
                    text = given
                elif given is not None and item.type is InputType.STRING:
                    text = list(given)  # a list of texts (a fan-out's items)
                paths = [] if given is None or text is not None else _as_paths(given)
                resolved.append(
                    ResolvedInput(step.id, item.name, item.description, None, paths, text)
                )
    return resolved


def _workflow_step_ids(definition: JobDefinition | None, workflow_name: str) -> set[str] | None:
    """The steps of the workflow; `None` when the definition or the workflow is not known."""
    workflow = definition.workflows_by_name.get(workflow_name) if definition else None
    return set(workflow.step_ids) if workflow is not None else None


def _is_text(definition: JobDefinition | None, step_id: str, output: str) -> bool:
    if definition is None or step_id not in definition.steps_by_id:
        return False
    spec = definition.step(step_id).outputs.get(output)
    return spec is not None and spec.type is OutputType.STRING


def _as_paths(value: str | list[str]) -> list[str]:
    return [value] if isinstance(value, str) else list(value)


def build_brief(
    job: LoadedJob, session: Session, step_ids: Sequence[str], reader: InstructionReader
) -> StepBrief:
    definition = job.definition
    steps = [definition.step(step_id) for step_id in step_ids]
    sections = [reader.read(job, steps[0]).rstrip("\n")]
    sections += [
        reader.doc_spec_section(spec.doc_spec, name).rstrip("\n")
        for step in steps
        for name, spec in step.outputs.items()
        if spec.doc_spec is not None
    ]
    if len(steps) > 1:
        sections.append(_concurrent_note(job, steps).rstrip("\n"))
    instructions = instance_instructions("\n\n".join(sections) + "\n", session, None)
    return StepBrief(
        session_id=session.session_id,
        step_ids=tuple(step_ids),
        job_dir=job.job_dir,
        instructions=instructions,
        common_job_info=definition.common_info(session.workflow_name),
        expected_outputs=[
            ExpectedOutput(step.id, name, spec.type, spec.description, spec.required)
            for step in steps
            for name, spec in step.outputs.items()
        ],
        reviews=[StepReview(step.id, review) for step in steps for review in step.reviews]
        if reader.reviews_run
        else [],
        inputs=resolve_inputs(session, steps, definition),
        agent=_workflow_agent(definition, session.workflow_name),
    )


def _workflow_agent(definition: JobDefinition, workflow_name: str) -> str | None:
    workflow = definition.workflows_by_name.get(workflow_name)
    return workflow.agent if workflow is not None else None


def _concurrent_note(job: LoadedJob, steps: Sequence[Step]) -> str:
    lines = [
        "**CONCURRENT STEPS**",
        "",
        f"This checkpoint is a group of {len(steps)} steps that run in parallel. Run each in its "
        "own sub-agent at the same time, then call `finished_step` ONCE "
        "with the outputs of all of them. Each step's outputs are checked against that step.",
        "",
    ]
    for position, step in enumerate(steps):
        if position == 0:
            where = "the instructions above"
        elif step.instructions_file is not None:
            where = f"instructions in `{job.job_dir / step.instructions_file}`"
        else:
            where = "instructions inline in the job's job.yml"
        outputs = ", ".join(step.outputs) or "none"
        lines.append(f"- `{step.id}` ({step.name}): {where}; outputs: {outputs}")
    return "\n".join(lines) + "\n"


def reviewer_inputs(
    session: Session, steps: Sequence[Step], definition: JobDefinition
) -> list[ResolvedInput]:
    """The inputs the reviewers see: files submitted by earlier steps (parameters left out)."""
    resolved = resolve_inputs(session, steps, definition)
    return [item for item in resolved if item.from_step is not None and item.paths]
