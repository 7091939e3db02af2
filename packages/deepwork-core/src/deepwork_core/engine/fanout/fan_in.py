"""Fan-in: the parent's step completes once every instance has (docs/fan-out.md).

`fan_in` is the one entry point the engine calls when `finished_step` names a parent standing at
a fanned-out step. It checks that every instance finished, merges worktree instances into the
run's branch one at a time in item order (stopping at a conflict, with the run's tree as before
that merge), re-checks each merged output against the bytes its verdict covered, removes the
worktrees that are done with, and returns the step's outputs as one list per output. A concurrent
group run in worktrees fans in the same way, its steps merged in declared order, each step
keeping its own outputs.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

from deepwork_core.base.error_codes import ErrorCode
from deepwork_core.engine.fanout.instances import (
    FanOutRunner,
    active_fan_out,
    gathered,
    require_all_done,
    session_exists,
)
from deepwork_core.engine.fanout.items import FanOutError
from deepwork_core.engine.fanout.worktrees import Leftover, Worktrees
from deepwork_core.engine.outcomes import CheckpointContext
from deepwork_core.engine.outputs import ValidatedOutputs
from deepwork_core.engine.results import EvidenceReport, FinishResult
from deepwork_core.evidence.hashes import OutputEvidence, sha256_file
from deepwork_core.jobs.discovery import JobCatalog, LoadedJob
from deepwork_core.state.fan_out import FanInstance
from deepwork_core.state.sessions import (
    OutputValue,
    Session,
    SessionStatus,
    SessionStore,
    StateTransaction,
)

#: The engine's `Outcomes.advance`: record a checkpoint's outputs and move its session on.
Advance = Callable[[CheckpointContext], FinishResult]


def complete_fan_in(
    runner: FanOutRunner,
    tx: StateTransaction,
    job: LoadedJob,
    parent: Session,
    notes: str | None,
    advance: Advance,
) -> FinishResult:
    """Complete a fanned-out step from its instances, then move the parent on with `advance`
    (with the `notes` of the call that fanned in)."""
    done = fan_in(runner, tx, job, parent)
    parent.evidence.extend(done.evidence)
    outputs = ValidatedOutputs(done.outputs)
    result = advance(CheckpointContext.of(tx, parent, job, outputs, notes))
    result = replace(result, evidence=EvidenceReport(stale_evidence=[], undeclared_changes=[]))
    return replace(result, warnings=done.warnings) if done.warnings else result


def recover(runner: FanOutRunner, store: SessionStore, catalog: JobCatalog) -> list[str]:
    """At the first use of a project: mend fan-outs a crash interrupted and remove worktrees
    nothing needs (`sweep`); the folders removed."""
    if not store.stack_path.exists():
        # Nothing runs, so nothing is in flight: every instance folder or branch is a leftover
        # (a crash can land between `git worktree add` making the branch and the state naming it).
        leftovers = sorted({*runner.worktrees.on_disk(), *runner.worktrees.branches()})
        for folder in leftovers:
            runner.worktrees.remove_orphan(folder)
        return leftovers
    with store.transaction() as tx:
        return sweep(runner, tx, catalog)


@dataclass(frozen=True, slots=True)
class FanIn:
    """What fan-in hands the engine: the outputs of each step, their evidence, and warnings."""

    outputs: dict[str, dict[str, OutputValue]]
    evidence: list[OutputEvidence]
    warnings: list[str]


def fan_in(runner: FanOutRunner, tx: StateTransaction, job: LoadedJob, parent: Session) -> FanIn:
    """Complete the fan-out of `parent`'s current step, or raise a `fan_out.*` error."""
    fan = parent.fan_out
    assert fan is not None
    step = job.definition.step(fan.step_id)
    sessions = runner.ensure(tx, job, parent)
    require_all_done(sessions, step.allow_partial)
    warnings: list[str] = []
    strip: dict[str, str] = {}
    for instance, session in zip(fan.instances, sessions, strict=True):
        if instance.worktree is None:
            continue
        strip[session.session_id] = instance.worktree
        if session.status is SessionStatus.COMPLETED and not instance.merged:
            if runner.worktrees.gone(instance):
                # Merged and removed by a fan-in whose state a crash rolled back: the store
                # commits the transaction whole, git's side of it was already done.
                instance.merged = True
            else:
                _merge_one(runner, tx, parent, instance, session)
                warnings += _recheck(runner, session, instance.worktree)
        if not instance.cleaned:
            runner.worktrees.remove(instance)
            instance.cleaned = True
            tx.save(parent)
    evidence = [
        item.model_copy(update={"path": _strip(item.path, strip.get(session.session_id))})
        for session in sessions
        if session.status is SessionStatus.COMPLETED
        for item in session.evidence
    ]
    if not fan.group:
        return FanIn({step.id: gathered(sessions, step, strip)}, evidence, warnings)
    by_step = {  # a group's step keeps its outputs as it gave them, as paths of the run's tree
        instance.item: {
            name: _strip_all(value, instance.worktree)
            for name, value in session.step_progress[instance.item].outputs.items()
        }
        for instance, session in zip(fan.instances, sessions, strict=True)
    }
    return FanIn(by_step, evidence, warnings)


def _merge_one(
    runner: FanOutRunner,
    tx: StateTransaction,
    parent: Session,
    instance: FanInstance,
    session: Session,
) -> None:
    fan = parent.fan_out
    group = fan is not None and bool(fan.group)
    label = (
        f"step {instance.item!r} of the concurrent group"
        if group
        else f"instance {instance.index + 1} ({instance.item})"
    )
    message = f"{parent.job_name}/{parent.current_step_id}: {label}"
    runner.worktrees.commit(instance, message)
    conflicted = runner.worktrees.merge(instance, f"Merge {message}")
    if conflicted:
        raise FanOutError(
            f"{label}, session {session.session_id}, conflicts with the run's branch in: "
            f"{', '.join(conflicted)}. The run's tree is as it was before this merge. Resolve it "
            f"in the instance's worktree `{instance.worktree}`: run `git merge "
            f"{runner.worktrees.base_branch()}` there, fix those files and commit; then call "
            f"finished_step with session_id '{parent.session_id}' again",
            code=ErrorCode.FAN_OUT_MERGE_CONFLICT,
        )
    instance.merged = True
    tx.save(parent)


def _strip(path: str, folder: str | None) -> str:
    return path.removeprefix(f"{folder}/") if folder else path


def _strip_all(value: OutputValue, folder: str | None) -> OutputValue:
    if isinstance(value, str):
        return _strip(value, folder)
    return [_strip(one, folder) for one in value]


def _recheck(runner: FanOutRunner, session: Session, folder: str) -> list[str]:
    """A warning for each output whose merged bytes differ from those its verdict covered."""
    changed = []
    for item in session.evidence:
        merged = _strip(item.path, folder)
        if item.sha256 is not None and sha256_file(runner.project_root, merged) != item.sha256:
            changed.append(
                f"{ErrorCode.FAN_OUT_EVIDENCE_CHANGED}: {merged} (output {item.output!r}) differs "
                "after the merge from the bytes its review covered"
            )
    return changed


def sweep(runner: FanOutRunner, tx: StateTransaction, catalog: JobCatalog) -> list[str]:
    """At start-up: mend interrupted fan-outs and remove worktrees nothing needs; the removed."""
    removed: list[str] = []
    keep: set[str] = set()
    for session_id in sorted(tx.all_stack_ids()):
        session = tx.load(session_id)
        runner.mend(tx, catalog.get(session.job_name), session)
        if session.fan_out is None or not active_fan_out(session):
            continue
        for instance in session.fan_out.instances:
            if instance.worktree is None or instance.cleaned:
                continue
            other = tx.load(instance.session_id)
            if other.status is SessionStatus.ABORTED or instance.merged:
                runner.worktrees.remove(instance)
                instance.cleaned = True
                tx.save(session)
                removed.append(instance.worktree)
            else:
                keep.add(instance.worktree)
    for folder in runner.worktrees.on_disk():
        if folder not in keep:
            runner.worktrees.remove_orphan(folder)
            removed.append(folder)
    return removed


def leftovers(worktrees: Worktrees, tx: StateTransaction) -> list[Leftover]:
    """The instance worktrees still on disk, each with why it is there (`deepwork status`)."""
    why: dict[str, str] = {}
    for session_id in tx.all_stack_ids():
        session = tx.load(session_id)
        for instance in session.fan_out.instances if session.fan_out else []:
            if instance.worktree is None or not session_exists(tx, instance.session_id):
                continue
            state = tx.load(instance.session_id).status
            why[instance.worktree] = (
                f"instance {instance.index + 1} ({instance.item}) is running"
                if state is SessionStatus.ACTIVE
                else f"instance {instance.index + 1} ({instance.item}) waits for fan-in"
            )
    return [
        Leftover(folder, why.get(folder, "no running fan-out needs it; the next start removes it"))
        for folder in worktrees.on_disk()
    ]
