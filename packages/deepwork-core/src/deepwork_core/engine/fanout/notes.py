"""What the agent is told when a fanned-out step or a concurrent group in worktrees begins
(docs/fan-out.md): how to hand out the instances, and how to fan in."""

from __future__ import annotations

from deepwork_core.engine.briefing import FanOutBrief


def fan_out_note(view: FanOutBrief) -> str:
    """The instructions of the answer that begins a fanned-out step."""
    total = len(view.instances)
    hint = f" at most {view.max_parallel} at a time," if view.max_parallel else ""
    if view.group:
        return _group_note(view)
    lines = [
        f"**FAN-OUT** Step `{view.step_id}` runs once per item: {total} instance(s), each its "
        "own session with its own quality gate.",
        "",
        "If you can start sub-agents, hand each instance to one" + hint + " telling it to call "
        "get_active_workflow with the instance's session_id for its instructions and to pass "
        "that session_id to finished_step. Otherwise do them one after another the same way.",
        "To give an item up, call abort_workflow with its session_id and a reason.",
        f"When every instance is done, call finished_step with session_id "
        f"`{view.parent_session_id}` and outputs {{}}: the next step receives every instance's "
        "outputs as one list in item order.",
        "",
    ]
    lines += [f"- {v.index + 1}. `{v.item}`: session_id `{v.session_id}` ({v.state})"
              for v in view.instances]  # fmt: skip
    return "\n".join(lines) + "\n"


def _group_note(view: FanOutBrief) -> str:
    """The instructions of the answer that begins a concurrent group run in worktrees."""
    lines = [
        f"**CONCURRENT GROUP IN WORKTREES** Steps {', '.join(f'`{s}`' for s in view.group)} "
        "run in parallel, each as its own session in its own git worktree, with its own "
        "quality gate.",
        "",
        "If you can start sub-agents, hand each step to one, telling it to call "
        "get_active_workflow with the step's session_id for its instructions and to pass that "
        "session_id to finished_step. Otherwise do them one after another the same way.",
        f"When every step is done, call finished_step with session_id "
        f"`{view.parent_session_id}` and outputs {{}}: the worktrees are merged into the run's "
        "branch in the order above and the workflow moves on.",
        "",
    ]
    lines += [f"- {v.index + 1}. step `{v.item}`: session_id `{v.session_id}`, worktree "
              f"`{v.worktree}` ({v.state})" for v in view.instances]  # fmt: skip
    return "\n".join(lines) + "\n"
