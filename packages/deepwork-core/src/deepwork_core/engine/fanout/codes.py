"""The codes of fanned-out steps (docs/fan-out.md): one family of `Code`.

Only the fan-out of a `for_each` step and its fan-in report them, so they live beside that code
as their own family (`FanOutCode`); docs/errors.md lists them with every other code.
"""

from __future__ import annotations

from deepwork_core.base.error_codes import Code


class FanOutCode(Code):
    """A `fan_out.*` code; the string under each member says what it means."""

    FAN_OUT_EVIDENCE_CHANGED = "fan_out.evidence_changed"
    """Warning: a merged output differs from the bytes its instance's review covered."""
    FAN_OUT_INCOMPLETE = "fan_out.incomplete"
    """Fan-in while instances run (named), or with aborted ones and no `allow_partial`."""
    FAN_OUT_MERGE_CONFLICT = "fan_out.merge_conflict"
    """An instance's branch conflicts (instance and files named); the run's tree is unchanged."""
    FAN_OUT_TOO_MANY_INSTANCES = "fan_out.too_many_instances"
    """More items than `limits.max_instances`; refused before any instance is created."""
    FAN_OUT_UNJUDGED_CHANGES = "fan_out.unjudged_changes"
    """Warning: files written in an instance's worktree after it was accepted were not merged;
    they are kept on the branch named (`scope_guard: strict` refuses the fan-in instead)."""
    FAN_OUT_WORKTREE_LOST = "fan_out.worktree_lost"
    """A completed instance's worktree was removed by hand while its branch holds commits the
    run's branch lacks; fan-in merges nothing until the worktree is made again (command named)."""
