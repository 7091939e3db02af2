"""Moving back in a workflow and getting back into one (docs/navigation.md).

`go_back` (the `go_to_step` tool) moves a session back to an earlier entry of its workflow and
clears the progress from there on; `active_workflow` answers where the caller stands and repeats
the current step's brief. Both work on a `WorkflowEngine`'s store, catalog and instruction reader.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from deepwork_core.base.error_codes import ErrorCode
from deepwork_core.base.errors import DeepWorkError
from deepwork_core.base.identifiers import SessionId, check_text
from deepwork_core.engine.briefing import StepBrief, build_brief
from deepwork_core.engine.fanout.instances import active_fan_out
from deepwork_core.engine.nesting import begin_checkpoint
from deepwork_core.engine.results import StartResult
from deepwork_core.engine.workflow import WorkflowEngine
from deepwork_core.state.overview import ActiveEntry, active_entry
from deepwork_core.state.sessions import Session, StepRecord
from deepwork_core.state.stacks import Target, stack_items, target_session
from deepwork_core.state.usage.pair import RunUsage
from deepwork_core.state.usage.totals import run_id_of, run_usage


class NavigationError(DeepWorkError):
    """A `go_to_step` target that is not allowed (`navigation.*` codes)."""

    code = ErrorCode.NAVIGATION_ERROR
    agent_fixable = True


@dataclass(frozen=True, slots=True)
class ActiveWorkflow:
    """The caller's stack, bottom first, and the target session's current brief (if any)."""

    stack: list[ActiveEntry]
    brief: StepBrief | None
    #: What the reviews of the target session's run cost so far.
    review_usage: RunUsage | None = None


def _target_entry(entries: list[tuple[str, ...]], current: int, step_id: str) -> int:
    """The index of the entry holding `step_id`, which must not be after `current`."""
    valid = [s for entry in entries[: current + 1] for s in entry]
    listed = ", ".join(valid)
    for index, entry in enumerate(entries):
        if step_id in entry:
            if index > current:
                raise NavigationError(
                    f"step {step_id!r} comes after the current step; go_to_step only goes back. "
                    f"Valid targets: {listed}",
                    code=ErrorCode.NAVIGATION_FORWARD_JUMP,
                )
            return index
    raise NavigationError(
        f"step {step_id!r} is not in this workflow. Valid targets: {listed}",
        code=ErrorCode.NAVIGATION_UNKNOWN_STEP,
    )


def _rewind(
    session: Session, entries: list[tuple[str, ...]], index: int, now: datetime
) -> list[str]:
    """Clear the progress of entries `index`..current and begin entry `index`; return the
    cleared step ids."""
    cleared = [s for entry in entries[index : session.current_entry_index + 1] for s in entry]
    gone = set(cleared)
    for step_id in cleared:
        session.step_progress.pop(step_id, None)
    session.quality_log = [e for e in session.quality_log if not gone.intersection(e.step_ids)]
    session.current_entry_index = index
    session.current_step_ids = list(entries[index])
    for step_id in entries[index]:
        session.step_progress[step_id] = StepRecord(step_id=step_id, started_at=now)
    return cleared


def go_back(
    engine: WorkflowEngine,
    step_id: str,
    session_id: SessionId | None = None,
    agent_id: str | None = None,
) -> StartResult:
    """Move the session back to the entry holding `step_id` and begin it again.

    The outputs, attempts and verdicts of that entry and every later one are cleared from the
    session; files on disk are left alone and the event log keeps the history.
    """
    check_text(step_id, what="step_id")
    target = Target(session_id, agent_id)
    with engine.store.transaction() as tx:
        session = target_session(tx, target)
        if session.instance_of is not None:
            raise NavigationError(
                "an instance of a fanned-out step has only its step; call finished_step again, "
                "or go_to_step on its parent to run the whole step again",
            )
        job = engine.catalog.get(session.job_name)
        workflow = job.definition.workflows_by_name.get(session.workflow_name)
        entries = workflow.entries if workflow is not None else []
        index = _target_entry(entries, session.current_entry_index, step_id)
        from_steps = list(session.current_step_ids)
        left = session.step_progress.get(from_steps[0])
        baseline = left.began if left is not None else None
        cleared = _rewind(session, entries, index, engine.clock())
        engine.guards.rewound(session, job.definition, entries[index], index, baseline)
        # A `sub_workflow` step starts its workflow again, nested (the brief is its first step).
        brief = begin_checkpoint(engine.nesting, tx, job, session, entries[index], pushed=True)
        tx.save(session)
        engine.events.went_to_step(session, from_steps, cleared)
        stack = stack_items(tx, session.agent_id)
    engine.cancel_reviews(session)  # their step is cleared: no verdict of them could count
    return StartResult(brief, stack, session.branch_name, None)


def active_workflow(
    engine: WorkflowEngine, session_id: SessionId | None = None, agent_id: str | None = None
) -> ActiveWorkflow:
    """The caller's stack and the current brief of `session_id` (default: the stack's top)."""
    target = Target(session_id, agent_id)
    with engine.store.transaction() as tx:
        stack = tx.stack(agent_id)
        if session_id is None and not stack:
            return ActiveWorkflow([], None)
        session = target_session(tx, target)
        if session_id is not None:
            stack = tx.stack(session.agent_id)
        entries = [active_entry(s, s.agent_id) for s in stack]
        run_id = run_id_of(session, tx.load)
        job = engine.catalog.get(session.job_name)
        brief = build_brief(job, session, session.current_step_ids, engine.instructions)
        engine.fan.mend(tx, job, session)
        if active_fan_out(session):  # each instance's state
            brief = engine.fan.brief(tx, job, session, brief)
    return ActiveWorkflow(entries, brief, run_usage(engine.store.store, run_id))
