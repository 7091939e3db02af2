"""The items a `for_each` step runs over, the concurrent groups that run in worktrees, and what
an instance is told about its item (docs/fan-out.md)."""

from __future__ import annotations

from deepwork_core.base.error_codes import ErrorCode
from deepwork_core.base.errors import DeepWorkError
from deepwork_core.engine.fanout.codes import FanOutCode
from deepwork_core.jobs.model import JobDefinition, Step
from deepwork_core.jobs.steps.fan_out import Isolation
from deepwork_core.state.sessions import Session

#: A fan-out over more items than this is refused unless `limits.max_instances` says otherwise.
DEFAULT_MAX_INSTANCES = 200


class FanOutError(DeepWorkError):
    """A fan-out that cannot begin or fan in (`fan_out.*` codes)."""

    code = FanOutCode.FAN_OUT_INCOMPLETE
    agent_fixable = True


def fan_out_step(definition: JobDefinition, step_ids: tuple[str, ...]) -> Step | None:
    """The step of a checkpoint that fans out: a single step with `for_each`."""
    if len(step_ids) != 1:
        return None
    step = definition.step(step_ids[0])
    return step if step.for_each is not None else None


def worktree_group(definition: JobDefinition, step_ids: tuple[str, ...]) -> list[Step] | None:
    """The steps of a checkpoint that is a concurrent group with `isolation: worktree`: each
    step runs as an instance of its own, in its own worktree."""
    if len(step_ids) < 2:
        return None
    steps = [definition.step(step_id) for step_id in step_ids]
    return steps if all(step.isolation is Isolation.WORKTREE for step in steps) else None


def fans_out(definition: JobDefinition, step_ids: tuple[str, ...]) -> bool:
    """True when the checkpoint runs as instances: a `for_each` step or a worktree group."""
    found = fan_out_step(definition, step_ids) or worktree_group(definition, step_ids)
    return found is not None


def fan_out_items(session: Session, step: Step, max_instances: int) -> list[str]:
    """The items `step` runs over, read from what `session` was given and produced.

    Raises `fan_out.items_missing` when the input has no value yet and
    `fan_out.too_many_instances` past `max_instances`: both before anything is created.
    """
    name = step.for_each or ""
    value = None
    for item in step.inputs:
        if item.name == name:
            value = session.inputs.get(name)
        elif item.file == name and item.from_step is not None:
            record = session.step_progress.get(item.from_step)
            value = record.outputs.get(name) if record is not None else None
    if value is None:
        value = session.inputs.get(name, session.all_outputs().get(name))
    if value is None:
        raise FanOutError(
            f"step {step.id!r} runs for each item of {name!r}, which has no value in this run; "
            "give it at start_workflow or produce it in an earlier step",
            code=ErrorCode.INPUTS_MISSING,
        )
    items = [value] if isinstance(value, str) else list(value)
    if len(items) > max_instances:
        raise FanOutError(
            f"step {step.id!r} would run {len(items)} instances, more than limits.max_instances "
            f"({max_instances}); nothing was started. Split the items or raise the limit in "
            ".deepwork/config.yml",
            code=FanOutCode.FAN_OUT_TOO_MANY_INSTANCES,
        )
    return items


def instance_instructions(instructions: str, session: Session, total: int | None) -> str:
    """The step's instructions for one instance: `{{ item }}` filled in, and where it stands."""
    of = session.instance_of
    if of is None:
        return instructions
    count = f" of {total}" if total else ""
    if of.group:
        text = instructions
        lines = [
            "",
            f"**CONCURRENT STEP {of.index + 1}{count}** — step `{of.item}` of a concurrent "
            f"group, run on its own. Pass session_id `{session.session_id}` to finished_step.",
        ]
    else:
        text = instructions.replace("{{ item }}", of.item).replace("{{item}}", of.item)
        lines = [
            "",
            f"**FAN-OUT INSTANCE {of.index + 1}{count}** — item: `{of.item}`.",
            f"Do this step for this item only. Pass session_id `{session.session_id}` to "
            "finished_step (and to abort_workflow, with a reason, to give the item up).",
        ]
    if of.worktree is not None:
        lines.append(
            f"Work only inside the git worktree `{of.worktree}` (branch `{of.branch}`); give "
            "output paths relative to that folder. Do not commit: fan-in does."
        )
    return text.rstrip("\n") + "\n" + "\n".join(lines) + "\n"
