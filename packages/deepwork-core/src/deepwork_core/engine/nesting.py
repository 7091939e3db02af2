"""Steps that run another workflow nested: `sub_workflow` (docs/job-format.md).

When a checkpoint is a single step with a `sub_workflow`, the engine starts that workflow (of
the same job, or of `workflow_job`) on top of the stack and hands out its first checkpoint
instead. The nested session remembers the step it runs for (`started_for_step`); when it
completes, that step of the parent completes with it, taking the nested workflow's outputs it
declares, and the parent moves on.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime

from deepwork_core.base.error_codes import ErrorCode
from deepwork_core.base.errors import WorkflowNotFoundError
from deepwork_core.engine.briefing import InstructionReader, StepBrief, build_brief
from deepwork_core.engine.fanout.instances import FanOutRunner
from deepwork_core.engine.fanout.items import fans_out
from deepwork_core.engine.start_inputs import start_parameters
from deepwork_core.evidence.scope import RepoSnapshot
from deepwork_core.jobs.discovery import JobCatalog, LoadedJob
from deepwork_core.jobs.model import JobDefinition, Step
from deepwork_core.jobs.steps.parts import SubWorkflowRef
from deepwork_core.state.sessions import (
    OutputValue,
    Session,
    StateTransaction,
    StepRecord,
    new_session_id,
)

#: How many workflows may be on the stack when a sub-workflow step starts another one.
MAX_DEPTH = 12


@dataclass(frozen=True, slots=True)
class Nesting:
    """What starting nested workflows needs from the engine."""

    catalog: JobCatalog
    reader: InstructionReader
    #: Told of every session this starts (the engine's event log).
    started: Callable[[Session], None]
    #: The engine's clock: when a nested session starts.
    clock: Callable[[], datetime]
    #: Notes the repository for a nested session's first steps (the scope guard's baseline),
    #: given the baseline of the step that starts it (`Safeguards.begin_nested`).
    begin_guard: Callable[[Session, JobDefinition, tuple[str, ...], RepoSnapshot | None], None]
    #: Begins the instances of a `for_each` step or a worktree group (docs/fan-out.md).
    fan: FanOutRunner | None = None


def begin_checkpoint(
    nesting: Nesting,
    tx: StateTransaction,
    job: LoadedJob,
    session: Session,
    step_ids: tuple[str, ...],
    *,
    pushed: bool = False,
) -> StepBrief:
    """The brief of a checkpoint of `session`; a `sub_workflow` step starts its workflow nested,
    and the brief is that workflow's first checkpoint.

    Unless `pushed`, `session` is new. The new sessions (it and every nested one) go on the
    stack only once the brief could be built, so a failed start leaves the stack as it was;
    `nesting.started` is told of each.
    """
    fanned = session.instance_of is None and fans_out(job.definition, step_ids)
    if fanned and nesting.fan is not None:
        nesting.fan.check(session, job.definition, step_ids)  # refused before anything exists
        if not pushed:
            tx.push(session)
            nesting.started(session)
        nesting.fan.begin(tx, job, session, step_ids)
        brief = build_brief(job, session, step_ids, nesting.reader)
        return nesting.fan.brief(tx, job, session, brief)
    new: list[Session] = [] if pushed else [session]
    depth = len(tx.stack_ids(session.agent_id)) + len(new)
    ref = sub_workflow_ref(job.definition, step_ids)
    while ref is not None:
        if depth >= MAX_DEPTH:
            raise WorkflowNotFoundError(
                f"step {session.current_step_id!r} of {session.workflow_label!r} would nest "
                f"workflows more than {MAX_DEPTH} deep; check the sub_workflow references for a "
                "loop",
                code=ErrorCode.WORKFLOW_SUB_WORKFLOW_DEPTH,
            )
        baseline = session.step_progress[session.current_step_id].began
        job, session = start_child(nesting.catalog, job, session, ref, nesting.clock())
        nesting.begin_guard(session, job.definition, tuple(session.current_step_ids), baseline)
        new.append(session)
        depth += 1
        step_ids = tuple(session.current_step_ids)
        ref = sub_workflow_ref(job.definition, step_ids)
    brief = build_brief(job, session, step_ids, nesting.reader)
    for fresh in new:
        tx.push(fresh)
        nesting.started(fresh)
    return brief


def sub_workflow_ref(definition: JobDefinition, step_ids: tuple[str, ...]) -> SubWorkflowRef | None:
    """The workflow a checkpoint runs nested, when it is one `sub_workflow` step."""
    if len(step_ids) != 1:
        return None
    return definition.step(step_ids[0]).sub_workflow


def start_child(
    catalog: JobCatalog,
    job: LoadedJob,
    parent: Session,
    ref: SubWorkflowRef,
    now: datetime,
) -> tuple[LoadedJob, Session]:
    """The nested session `parent`'s current step starts (not yet pushed)."""
    child_job = catalog.get(ref.workflow_job or job.name)
    workflow = child_job.definition.workflows_by_name.get(ref.workflow_name)
    if workflow is None:
        raise WorkflowNotFoundError(
            f"step {parent.current_step_id!r} of {parent.workflow_label!r} runs workflow "
            f"{ref.workflow_name!r} of job {child_job.name!r}, which does not exist",
            code=ErrorCode.WORKFLOW_NOT_FOUND,
        )
    known = {**parent.inputs, **parent.all_outputs()}
    parameters = start_parameters(child_job.definition, workflow)
    first = workflow.entries[0]
    child = Session(
        session_id=new_session_id(),
        job_name=child_job.name,
        workflow_name=workflow.name,
        instance_id=parent.instance_id,
        goal=parent.goal,
        current_step_ids=list(first),
        step_progress={step_id: StepRecord(step_id=step_id, started_at=now) for step_id in first},
        parent_session_id=parent.session_id,
        agent_id=parent.agent_id,
        started_for_step=parent.current_step_id,
        inputs={name: value for name, value in known.items() if name in parameters},
        branch_name=parent.branch_name,
        started_at=now,
        start_commit=parent.start_commit,
    )
    return child_job, child


def waiting_parent(tx: StateTransaction, finished: Session) -> Session | None:
    """The parent whose sub-workflow step `finished` (just removed from the stack) ran for."""
    if finished.started_for_step is None:
        return None
    parent = tx.top(finished.agent_id)
    if parent is None or parent.session_id != finished.parent_session_id:
        return None
    return parent if parent.current_step_ids == [finished.started_for_step] else None


def handed_up_outputs(step: Step, finished: Session) -> dict[str, OutputValue]:
    """The nested workflow's outputs that the parent's step declares."""
    produced = finished.all_outputs()
    return {name: produced[name] for name in step.outputs if name in produced}
