"""Beginning a fan-out and keeping its instances (docs/fan-out.md).

When a run reaches a step with `for_each`, `FanOutRunner.begin` creates one instance per item: a
session of its own, on a stack of its own (its agent id is its session id), standing at that
step with the item filled in. The parent notes every instance before any is created, so a crash
part-way is mended by `ensure`, which creates the missing ones and puts an active instance back
on its stack; an instance that completed is never begun again. A concurrent group with
`isolation: worktree` runs the same way, one instance per step of the group in declared order.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from pathlib import Path

from deepwork_core.base.error_codes import ErrorCode
from deepwork_core.base.errors import SessionError
from deepwork_core.base.identifiers import SessionId
from deepwork_core.engine.briefing import FanOutBrief, InstanceView, StepBrief, resolve_inputs
from deepwork_core.engine.fanout.items import (
    DEFAULT_MAX_INSTANCES,
    fan_out_items,
    fan_out_step,
    fans_out,
    worktree_group,
)
from deepwork_core.engine.fanout.notes import fan_out_note
from deepwork_core.engine.fanout.worktrees import Worktrees
from deepwork_core.engine.outputs import ValidatedOutputs
from deepwork_core.engine.results import FinishResult, FinishStatus
from deepwork_core.engine.safeguards.evidence import Safeguards
from deepwork_core.evidence.scope import undeclared
from deepwork_core.jobs.discovery import LoadedJob
from deepwork_core.jobs.model import JobDefinition, ScopeGuard, Step
from deepwork_core.jobs.steps.fan_out import Isolation
from deepwork_core.jobs.steps.parts import OutputType
from deepwork_core.state.session_events import SessionEvents
from deepwork_core.state.session_model import FanInstance, FanOut, InstanceOf
from deepwork_core.state.sessions import (
    OutputValue,
    Session,
    SessionStatus,
    StateTransaction,
    StepRecord,
    new_session_id,
)
from deepwork_core.state.stacks import settle_declared, stack_items


def active_fan_out(session: Session) -> bool:
    """True when `session` stands at a fanned-out step (or worktree group) whose instances it
    waits for."""
    fan = session.fan_out
    return (
        fan is not None
        and fan.entry_index == session.current_entry_index
        and session.current_step_ids == fan.step_ids
    )


def instance_state(session: Session) -> str:
    """`done`, `aborted`, `needs_work` (its last gate verdict failed) or `running`."""
    if session.status is SessionStatus.COMPLETED:
        return "done"
    if session.status is SessionStatus.ABORTED:
        return "aborted"
    last = session.quality_log[-1] if session.quality_log else None
    return "needs_work" if last is not None and last.passed is False else "running"


class FanOutRunner:
    """Creates, mends and completes the instances of fanned-out steps."""

    def __init__(
        self,
        project_root: Path,
        clock: Callable[[], datetime],
        events: SessionEvents,
        guards: Safeguards,
        max_instances: int | None = None,
    ) -> None:
        self.project_root = project_root
        self.clock = clock
        self.events = events
        #: Notes the repository for an instance (the scope guard's baseline).
        self.begin_guard = guards.begin_nested
        self.max_instances = DEFAULT_MAX_INSTANCES if max_instances is None else max_instances
        self.worktrees = Worktrees(project_root)

    def check(self, session: Session, definition: JobDefinition, step_ids: tuple[str, ...]) -> None:
        """Refuse a checkpoint whose fan-out cannot begin, before the session moves to it."""
        step = fan_out_step(definition, step_ids)
        if step is not None:
            fan_out_items(session, step, self.max_instances)

    def begin(
        self, tx: StateTransaction, job: LoadedJob, parent: Session, step_ids: tuple[str, ...]
    ) -> None:
        """Note one instance per item (or per step of a worktree group) on `parent`, then
        create them (parent saved first)."""
        group = worktree_group(job.definition, step_ids)
        step = job.definition.step(step_ids[0])
        items = list(step_ids) if group else fan_out_items(parent, step, self.max_instances)
        if parent.fan_out is not None:  # the step is begun again (go_to_step)
            self._abort_instances(tx, parent, "the step was begun again")
        fan = FanOut(
            step_id=step.id,
            entry_index=parent.current_entry_index,
            isolation=step.isolation.value,
            max_parallel=len(items) if group else step.max_parallel,
            group=list(step_ids) if group else [],
        )
        if step.isolation is Isolation.WORKTREE:
            fan.base_commit = self.worktrees.base_commit()
        for index, item in enumerate(items):
            instance = FanInstance(index=index, item=item, session_id=new_session_id())
            if step.isolation is Isolation.WORKTREE:
                instance.worktree, instance.branch = self.worktrees.place(parent, instance)
            fan.instances.append(instance)
        parent.fan_out = fan
        tx.save(parent)
        self.ensure(tx, job, parent)

    def mend(self, tx: StateTransaction, job: LoadedJob, session: Session) -> bool:
        """Begin the fan-out of a step a crash interrupted before its instances were noted,
        and make the noted instances that are missing; True when `session` waits for one."""
        if session.instance_of is not None:
            return False
        step_ids = tuple(session.current_step_ids)
        if fans_out(job.definition, step_ids) and not active_fan_out(session):
            self.begin(tx, job, session, step_ids)
        elif active_fan_out(session):
            self.ensure(tx, job, session)
        return active_fan_out(session)

    def ensure(self, tx: StateTransaction, job: LoadedJob, parent: Session) -> list[Session]:
        """The instances of `parent`'s fan-out in item order, each created if missing and back on
        its stack if active; a finished one is taken off any stack that still lists it."""
        fan = parent.fan_out
        if fan is None:
            return []
        listed = tx.all_stack_ids()
        sessions: list[Session] = []
        for instance in fan.instances:
            if not session_exists(tx, instance.session_id):
                if instance.worktree is not None and fan.base_commit is not None:
                    self.worktrees.create(instance, fan.base_commit)
                session = self._new_instance(job, parent, fan, instance)
                if instance.worktree is None:  # a worktree is judged on its own, at completion
                    self.begin_guard(session, job.definition, (fan.step_id,), None)
                tx.push(session)
                self.events.started(session)
            else:
                session = tx.load(instance.session_id)
                if session.status is SessionStatus.ACTIVE and instance.session_id not in listed:
                    tx.push(session)
                elif session.status is not SessionStatus.ACTIVE and instance.session_id in listed:
                    tx.remove_from_stack(instance.session_id)
            sessions.append(session)
        return sessions

    def _new_instance(
        self, job: LoadedJob, parent: Session, fan: FanOut, instance: FanInstance
    ) -> Session:
        step = job.definition.step(fan.instance_step(instance))
        now = self.clock()
        progress = {
            key: record.model_copy(deep=True)
            for key, record in parent.step_progress.items()
            if record.completed_at is not None
        }
        inputs = dict(parent.inputs)
        name = step.for_each
        if name is not None:  # a group's step has no item to put in
            for item in step.inputs:
                if item.file == name and item.from_step in progress:
                    progress[item.from_step].outputs[name] = instance.item
            if name in inputs or any(i.name == name for i in step.inputs):
                inputs[name] = instance.item
        progress[step.id] = StepRecord(step_id=step.id, started_at=now)
        return Session(
            session_id=instance.session_id,
            job_name=parent.job_name,
            workflow_name=parent.workflow_name,
            instance_id=parent.instance_id,
            goal=parent.goal,
            current_entry_index=fan.entry_index,
            current_step_ids=[step.id],
            step_progress=progress,
            parent_session_id=parent.session_id,
            agent_id=instance.session_id,
            started_for_step=step.id,
            inputs=inputs,
            branch_name=instance.branch or parent.branch_name,
            started_at=now,
            instance_of=InstanceOf(
                index=instance.index,
                item=instance.item,
                worktree=instance.worktree,
                branch=instance.branch,
                group=bool(fan.group),
            ),
        )

    def brief(
        self, tx: StateTransaction, job: LoadedJob, parent: Session, base: StepBrief
    ) -> StepBrief:
        """`base` (the parent's brief of the step) as the fan-out answer: the instance list."""
        from dataclasses import replace

        view = self.view(tx, job, parent)
        assert parent.fan_out is not None
        steps = [job.definition.step(step_id) for step_id in parent.fan_out.step_ids]
        return replace(
            base,
            instructions=fan_out_note(view),
            expected_outputs=[],
            reviews=[],
            inputs=resolve_inputs(parent, steps, job.definition),
            fan_out=view,
        )

    def view(self, tx: StateTransaction, job: LoadedJob, parent: Session) -> FanOutBrief:
        fan = parent.fan_out
        assert fan is not None
        views = []
        for instance, session in zip(fan.instances, self.ensure(tx, job, parent), strict=True):
            views.append(
                InstanceView(
                    instance.index,
                    instance.item,
                    instance.session_id,
                    instance_state(session),
                    instance.worktree,
                    session.abort_reason,
                )
            )
        counts = dict.fromkeys(("done", "running", "needs_work", "aborted"), 0)
        for shown in views:
            counts[shown.state] += 1
        return FanOutBrief(
            fan.step_id,
            parent.session_id,
            views,
            fan.max_parallel,
            fan.isolation,
            counts,
            group=list(fan.group),
        )

    def complete(
        self,
        tx: StateTransaction,
        job: LoadedJob,
        instance: Session,
        validated: ValidatedOutputs,
        notes: str | None,
    ) -> FinishResult:
        """Complete an instance whose checkpoint was accepted; its parent waits for fan-in."""
        now = self.clock()
        record = instance.step_progress[instance.current_step_id]
        record.completed_at = now
        record.outputs = validated.by_step.get(record.step_id, {})
        record.notes = notes
        instance.status = SessionStatus.COMPLETED
        instance.completed_at = now
        of = instance.instance_of
        if of is not None and of.worktree is not None:  # what fan-in may merge (fan_in.py)
            of.accepted_tree = self.worktrees.snapshot(of.worktree)
        tx.remove_from_stack(instance.session_id)  # before the save: `ensure` mends either order
        tx.save(instance)
        settle_declared(tx, instance, self.project_root)
        self.events.completed(instance)
        assert instance.parent_session_id is not None  # an instance has its parent
        parent = tx.load(instance.parent_session_id)
        fan = parent.fan_out
        waiting = 0
        if fan is not None:
            waiting = sum(
                1
                for other in fan.instances
                if session_exists(tx, other.session_id)
                and tx.load(other.session_id).status is SessionStatus.ACTIVE
            )
        of = instance.instance_of
        assert of is not None
        summary = (
            f"Step '{of.item}' of the concurrent group is done."
            if of.group
            else f"Instance {of.index + 1} ({of.item}) of step '{record.step_id}' is done."
        )
        if fan is not None and of.worktree is not None:
            step = job.definition.step(record.step_id)
            summary += self._worktree_scope(fan.instances[of.index], record, step)
        if waiting:
            summary += f" {waiting} instance(s) still running."
        else:
            summary += (
                f" Every instance has finished: call finished_step with session_id "
                f"'{parent.session_id}' and outputs {{}} to fan in."
            )
        return FinishResult(
            FinishStatus.WORKFLOW_COMPLETE,
            stack_items(tx, parent.agent_id),
            summary=summary,
            all_outputs=dict(record.outputs),
        )

    def worktree_undeclared(
        self, session: Session, definition: JobDefinition, validated: ValidatedOutputs
    ) -> list[str] | None:
        """The scope guard inside an instance's worktree: the files it changed there that are
        neither outputs nor under the step's `may_change`, relative to the worktree; None when
        the instance has no worktree or the guard is off (docs/fan-out.md)."""
        of = session.instance_of
        if of is None or of.worktree is None or definition.scope_guard is ScopeGuard.OFF:
            return None
        step = definition.step(session.current_step_id)
        folder = f"{of.worktree}/"
        declared = [p.removeprefix(folder) for v in validated.merged.values() for p in _paths(v)]
        return undeclared(self.worktrees.changed(of.worktree), declared, step.may_change)

    def _worktree_scope(self, instance: FanInstance, record: StepRecord, step: Step) -> str:
        """The answer's note of an instance's undeclared changes in its worktree."""
        folder = f"{instance.worktree}/"
        declared = [p.removeprefix(folder) for v in record.outputs.values() for p in _paths(v)]
        changed = self.worktrees.changed(instance.worktree or "")
        extra = undeclared(changed, declared, step.may_change)
        if not extra:
            return ""
        return (
            " Files it changed in its worktree that the step does not declare (they are merged "
            f"with it unless undone there): {', '.join(extra)}."
        )

    def submitted(
        self, session: Session, outputs: Mapping[str, object], steps: Sequence[Step]
    ) -> Mapping[str, object]:
        """An instance's outputs as paths of the project: worktree-relative ones get its folder;
        the text of a `string` output of `steps` is no path and stays as it is."""
        of = session.instance_of
        if of is None or of.worktree is None:
            return outputs
        texts = {
            name
            for step in steps
            for name, spec in step.outputs.items()
            if spec.type is OutputType.STRING
        }
        return {
            name: value if name in texts else _under(of.worktree, value)
            for name, value in outputs.items()
        }

    def aborted(self, tx: StateTransaction, session: Session, reason: str) -> None:
        """An aborted instance's worktree goes; an aborted parent's active instances are
        aborted with it."""
        if active_fan_out(session):
            self._abort_instances(tx, session, f"its parent was aborted: {reason}")
        of = session.instance_of
        if of is None or of.worktree is None or session.parent_session_id is None:
            return
        parent = tx.load(session.parent_session_id)
        for instance in parent.fan_out.instances if parent.fan_out else []:
            if instance.session_id == session.session_id and not instance.cleaned:
                self.worktrees.remove(instance)
                instance.cleaned = True
                tx.save(parent)

    def _abort_instances(self, tx: StateTransaction, parent: Session, reason: str) -> None:
        """Abort every active instance of `parent`'s fan-out and remove every worktree left."""
        fan = parent.fan_out
        assert fan is not None
        for instance in fan.instances:
            if session_exists(tx, instance.session_id):
                session = tx.load(instance.session_id)
                if session.status is SessionStatus.ACTIVE:
                    session.status = SessionStatus.ABORTED
                    session.abort_reason = reason
                    session.completed_at = self.clock()
                    tx.remove_from_stack(session.session_id)
                    tx.save(session)
                    self.events.aborted(session, reason)
            if instance.worktree is not None and not instance.cleaned:
                self.worktrees.remove(instance)
                instance.cleaned = True
        tx.save(parent)


def session_exists(tx: StateTransaction, session_id: SessionId) -> bool:
    """True when `session_id` has been saved (a crash may have left a noted instance unmade)."""
    try:
        tx.load(session_id)
    except SessionError as exc:
        if exc.code != ErrorCode.SESSION_NOT_FOUND:
            raise
        return False
    return True


def _paths(value: OutputValue) -> list[str]:
    return [value] if isinstance(value, str) else list(value)


def _under(folder: str, value: object) -> object:
    if isinstance(value, str):
        return f"{folder}/{value}"
    if isinstance(value, list):
        return [f"{folder}/{v}" if isinstance(v, str) else v for v in value]
    return value
