"""Fan-in: the parent's step completes once every instance has (docs/fan-out.md).

`complete_fan_in` is the one entry point the engine calls when `finished_step` names a parent
standing at a fanned-out step. It checks that every instance finished; for worktree instances it
judges the run's own tree like any checkpoint (the scope guard against the step's beginning) and
finds what each worktree holds beyond the tree its gate accepted; under `scope_guard: strict`
either sends the agent back before anything is merged. Then it merges worktree instances into
the run's branch one at a time in item order, each as the tree its gate accepted (what was
written after is kept on a branch of its own and reported, or merged too when the agent gave
`quality_review_override_reason`), stopping at a conflict with the run's tree as before that
merge; re-checks each merged output against the bytes its verdict covered, removes the worktrees
that are done with, and returns the step's outputs as one list per output. A concurrent group
run in worktrees fans in the same way, its steps merged in declared order, each step keeping its
own outputs.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace

from deepwork_core.engine.fanout.codes import FanOutCode
from deepwork_core.engine.fanout.instances import FanOutRunner, active_fan_out, session_exists
from deepwork_core.engine.fanout.items import FanOutError
from deepwork_core.engine.fanout.worktrees import WORKTREES_DIR, AcceptedTree, Leftover, Worktrees
from deepwork_core.engine.outcomes import CheckpointContext, Outcomes, needs_work, with_findings
from deepwork_core.engine.outputs import ValidatedOutputs
from deepwork_core.engine.results import EvidenceReport, FinishResult
from deepwork_core.engine.safeguards.findings import Findings
from deepwork_core.evidence.hashes import OutputEvidence, sha256_file
from deepwork_core.jobs.discovery import JobCatalog, LoadedJob
from deepwork_core.jobs.model import Step
from deepwork_core.state.session_model import FanInstance, FanOut
from deepwork_core.state.sessions import (
    OutputValue,
    Session,
    SessionStatus,
    SessionStore,
    StateTransaction,
)
from deepwork_core.state.stacks import stack_items


def complete_fan_in(
    runner: FanOutRunner,
    outcomes: Outcomes,
    tx: StateTransaction,
    job: LoadedJob,
    parent: Session,
    notes: str | None,
    override_reason: str | None = None,
) -> FinishResult:
    """Complete a fanned-out step from its instances, then move the parent on (with the
    `notes` of the call that fanned in); `needs_work` instead when the scope guard is strict
    and the run's tree or a worktree holds changes nobody judged, unless `override_reason`."""
    fan = parent.fan_out
    assert fan is not None
    sessions = runner.ensure(tx, job, parent)
    require_all_done(sessions, job.definition.step(fan.step_id).allow_partial)
    judged = _judge_worktrees(runner, fan, sessions)
    findings: Findings | None = None
    if any(instance.worktree is not None for instance in fan.instances):
        # The run's own tree is judged like at any checkpoint: instances worked elsewhere.
        steps = tuple(job.definition.step(step_id) for step_id in parent.current_step_ids)
        unjudged = [f"{w}/{path}" for w, one in judged.values() for path in one.unjudged]
        findings = outcomes.guards.inspect(
            parent, job.definition, steps, ValidatedOutputs({}), override_reason,
            final=False, reviewable=False, extra=unjudged,
        )  # fmt: skip
        if findings.blocked is not None:
            tx.save(parent)
            return needs_work(stack_items(tx, parent.agent_id), findings, _refusal(findings))
    take_all = override_reason is not None
    done = fan_in(runner, tx, job, parent, judged, take_all=take_all)
    parent.evidence.extend(done.evidence)
    outputs = ValidatedOutputs(done.outputs)
    result = outcomes.advance(CheckpointContext.of(tx, parent, job, outputs, notes))
    if findings is None:
        result = replace(result, evidence=EvidenceReport(stale_evidence=[], undeclared_changes=[]))
    else:
        result = with_findings(result, findings)
    return replace(result, warnings=done.warnings) if done.warnings else result


def _judge_worktrees(
    runner: FanOutRunner, fan: FanOut, sessions: list[Session]
) -> dict[str, tuple[str, AcceptedTree]]:
    """Each completed worktree instance still to merge: its folder and what it holds beyond
    the tree its gate accepted (by instance session id)."""
    judged: dict[str, tuple[str, AcceptedTree]] = {}
    for instance, session in zip(fan.instances, sessions, strict=True):
        of = session.instance_of
        if instance.worktree is None or instance.merged or of is None:
            continue
        if session.status is not SessionStatus.COMPLETED:
            continue
        if not runner.worktrees.intact(instance):
            _require_nothing_lost(runner, instance)  # before anything is merged
            continue  # merged before a crash (see `fan_in`)
        base = fan.base_commit or runner.worktrees.base_commit()
        judged[session.session_id] = (
            instance.worktree,
            runner.worktrees.judged(instance, of.accepted_tree, base),
        )
    return judged


def _refusal(findings: Findings) -> str:
    """The `needs_work` feedback of a fan-in the strict scope guard refused."""
    feedback = findings.blocked or ""
    if any(path.startswith(WORKTREES_DIR + "/") for path in findings.undeclared):
        feedback += (
            f" Files under {WORKTREES_DIR}/ were written in an instance's worktree after the "
            "instance was accepted, so no review covered them: fan-in merges only what was "
            "accepted. Nothing was merged."
        )
    return feedback


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


def fan_in(
    runner: FanOutRunner,
    tx: StateTransaction,
    job: LoadedJob,
    parent: Session,
    judged: dict[str, tuple[str, AcceptedTree]],
    *,
    take_all: bool = False,
) -> FanIn:
    """Complete the fan-out of `parent`'s current step, or raise a `fan_out.*` error. Each
    worktree instance merges the tree its gate accepted (`take_all`: all it holds now)."""
    fan = parent.fan_out
    assert fan is not None
    step = job.definition.step(fan.step_id)
    sessions = runner.ensure(tx, job, parent)
    warnings: list[str] = []
    strip: dict[str, str] = {}
    for instance, session in zip(fan.instances, sessions, strict=True):
        if instance.worktree is None:
            continue
        strip[session.session_id] = instance.worktree
        if session.status is SessionStatus.COMPLETED and not instance.merged:
            if not runner.worktrees.intact(instance):
                # Fan-in removes a completed instance's worktree only once it is merged, so this
                # one was merged (and its removal begun) by a fan-in whose state a crash rolled
                # back: the store commits the transaction whole, git's side was already done.
                instance.merged = True
            else:
                _, one = judged[session.session_id]  # judged alike: completed, still to merge
                warnings += _merge_one(runner, tx, parent, instance, session, one, take_all)
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
    judged: AcceptedTree,
    take_all: bool,
) -> list[str]:
    """Merge one instance into the run's branch: a commit of the tree its gate accepted (all it
    holds with `take_all`); what was written after is kept on a branch and warned about."""
    fan = parent.fan_out
    group = fan is not None and bool(fan.group)
    label = (
        f"step {instance.item!r} of the concurrent group"
        if group
        else f"instance {instance.index + 1} ({instance.item})"
    )
    message = f"{parent.job_name}/{parent.current_step_id}: {label}"
    at = f"@{int((session.completed_at or session.started_at).timestamp())} +0000"
    tree = judged.now if take_all else judged.tree
    commit = runner.worktrees.commit_tree(tree, judged.head, message, at)
    conflicted = runner.worktrees.merge(instance, f"Merge {message}", commit)
    if conflicted:
        runner.worktrees.commit(instance, message)  # so that the run's branch merges in there
        raise FanOutError(
            f"{label}, session {session.session_id}, conflicts with the run's branch in: "
            f"{', '.join(conflicted)}. The run's tree is as it was before this merge. Resolve it "
            f"in the instance's worktree `{instance.worktree}`: run `git merge "
            f"{runner.worktrees.base_branch()}` there, fix those files and commit; then call "
            f"finished_step with session_id '{parent.session_id}' again",
            code=FanOutCode.FAN_OUT_MERGE_CONFLICT,
        )
    warnings: list[str] = []
    if judged.unjudged and not take_all:
        after = runner.worktrees.commit_tree(
            judged.now, commit, f"{message}: written after it was accepted, not merged", at
        )
        branch = runner.worktrees.keep(instance, after)
        warnings.append(
            f"{FanOutCode.FAN_OUT_UNJUDGED_CHANGES}: {label} holds files written in its worktree "
            f"after it was accepted, not merged: {', '.join(judged.unjudged)}. They are kept on "
            f"the branch {branch} (`git merge {branch}` takes them; `git branch -D {branch}` "
            "drops them)"
        )
    instance.merged = True
    tx.save(parent)
    return warnings


def _require_nothing_lost(runner: FanOutRunner, instance: FanInstance) -> None:
    """Refuse to take a completed instance without its worktree as merged when its branch
    holds commits the run's branch lacks: its folder was removed by hand, not by fan-in."""
    if runner.worktrees.unmerged_commits(instance):
        raise FanOutError(
            f"instance {instance.index + 1} ({instance.item}): its worktree `{instance.worktree}` "
            f"is gone but its branch {instance.branch} holds commits the run's branch does not. "
            f"Make the worktree again with `git worktree add {instance.worktree} "
            f"{instance.branch}`, then call finished_step again",
            code=FanOutCode.FAN_OUT_WORKTREE_LOST,
        )


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
                f"{FanOutCode.FAN_OUT_EVIDENCE_CHANGED}: {merged} (output {item.output!r}) differs "
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


def require_all_done(sessions: list[Session], allow_partial: bool) -> None:
    """Raise unless every instance finished (aborted ones only with `allow_partial`)."""
    running = [s for s in sessions if s.status is SessionStatus.ACTIVE]
    if running:
        names = ", ".join(f"{s.instance_of.item if s.instance_of else ''} ({s.session_id})"
                          for s in running[:10])  # fmt: skip
        raise FanOutError(
            f"{len(running)} instance(s) have not finished: {names}; finish or abort them first",
            code=FanOutCode.FAN_OUT_INCOMPLETE,
        )
    aborted = [s for s in sessions if s.status is SessionStatus.ABORTED]
    if aborted and not allow_partial:
        raise FanOutError(
            f"{len(aborted)} instance(s) were aborted and the step does not set allow_partial; "
            "use go_to_step to run the step again, or abort the workflow",
            code=FanOutCode.FAN_OUT_INCOMPLETE,
        )


def gathered(
    sessions: list[Session], step: Step, strip: Mapping[str, str]
) -> dict[str, OutputValue]:
    """Every completed instance's outputs, as one list per output in item order; paths inside a
    worktree (`strip`: session id -> folder) become paths of the run's tree."""
    result: dict[str, OutputValue] = {}
    for name in step.outputs:
        values: list[str] = []
        for session in sessions:
            if session.status is not SessionStatus.COMPLETED:
                continue
            value = session.step_progress[step.id].outputs.get(name)
            folder = strip.get(session.session_id)
            for one in [value] if isinstance(value, str) else list(value or []):
                prefix = f"{folder}/" if folder else ""
                values.append(one.removeprefix(prefix) if prefix else one)
        result[name] = values
    return result
