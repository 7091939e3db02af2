"""What a fanned-out step records (docs/fan-out.md).

A step with `for_each` runs once per item: the parent session notes the fan-out (`FanOut`, one
`FanInstance` per item in item order) and each instance is a session of its own that knows its
item (`InstanceOf`). A concurrent group with `isolation: worktree` is recorded the same way: one
instance per step of the group, in declared order, whose item is its step id (`FanOut.group`).
An instance's status is its session's status; the parent records only what fan-in did with it
(merged into the run's branch, worktree removed).
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from deepwork_core.base.identifiers import SessionId


class _Record(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_assignment=False)


class InstanceOf(_Record):
    """On an instance's session: which item of which fan-out it runs."""

    index: int = Field(ge=0)
    item: str
    #: Project-relative folder of the instance's git worktree (`isolation: worktree`).
    worktree: str | None = None
    branch: str | None = None
    #: True when the instance is one step of a concurrent group (its item is the step id).
    group: bool = False
    #: The git tree of everything the worktree held when the gate accepted the instance: what
    #: fan-in merges (docs/fan-out.md); None before it was accepted.
    accepted_tree: str | None = None


class FanInstance(_Record):
    """On the parent's session: one instance of the fan-out, in item order."""

    index: int = Field(ge=0)
    item: str
    session_id: SessionId
    worktree: str | None = None
    branch: str | None = None
    #: True once fan-in merged the instance's branch into the run's branch.
    merged: bool = False
    #: True once the instance's worktree and branch are gone.
    cleaned: bool = False


class FanOut(_Record):
    """On the parent's session: the fan-out of its current step."""

    step_id: str
    entry_index: int
    instances: list[FanInstance] = Field(default_factory=list)
    isolation: str = "shared"
    max_parallel: int | None = None
    #: The commit the worktrees were made from (`isolation: worktree`).
    base_commit: str | None = None
    #: The step ids of a concurrent group run in worktrees (each instance runs one of them);
    #: empty for a `for_each` step.
    group: list[str] = Field(default_factory=list)

    @property
    def step_ids(self) -> list[str]:
        """The steps of the checkpoint the fan-out stands for."""
        return list(self.group) or [self.step_id]

    def instance_step(self, instance: FanInstance) -> str:
        """The step an instance runs: its item in a group, else the fanned-out step."""
        return instance.item if self.group else self.step_id
