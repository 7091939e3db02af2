"""The keys of a step that runs once per item, in both job formats (docs/fan-out.md).

`deepwork_core.jobs.model` declares them on the domain step and the 0.10 format's workflow step
through these types, and checks them with `check_fan_out_fields`.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated

from pydantic import Field, StrictBool, StringConstraints
from pydantic_core import PydanticCustomError

from deepwork_core.base.identifiers import NAME_PATTERN


class Isolation(StrEnum):
    """Where the instances of a fanned-out step do their work (docs/fan-out.md)."""

    SHARED = "shared"  # the run's own working tree
    WORKTREE = "worktree"  # a git worktree per instance, merged back at fan-in


# The fan-out keys, declared once for both formats (docs/fan-out.md).
ForEach = Annotated[
    Annotated[str, StringConstraints(min_length=1)] | None,
    Field(
        description="Run the step once per item of this input (a files input, a list-valued "
        "string input, or a files output of an earlier step)."
    ),
]
MaxParallel = Annotated[
    int | None,
    Field(default=None, ge=1, le=1000, description="A hint: how many instances at once."),
]
AllowPartial = Annotated[
    StrictBool,
    Field(default=False, description="The step may complete with some instances aborted."),
]
IsolationKey = Annotated[
    Isolation,
    Field(
        default=Isolation.SHARED,
        description="'worktree': a git worktree per instance (of a for_each step, or per step of "
        "a concurrent group).",
    ),
]
ConcurrentGroup = Annotated[
    Annotated[str, StringConstraints(pattern=NAME_PATTERN)] | None,
    Field(
        default=None,
        description="0.10 format: consecutive steps naming the same group run as one concurrent "
        "group.",
    ),
]
#: The keys of a fanned-out step, with their defaults (written by both formats when set).
FAN_OUT_KEYS = {"max_parallel": None, "allow_partial": False, "isolation": Isolation.SHARED}
#: The keys only a `for_each` step may give (`isolation` also fits a concurrent group's step).
FOR_EACH_ONLY = ("max_parallel", "allow_partial")


def check_fan_out_fields(for_each: str | None, sub_workflow: bool, step: object) -> None:
    """Raise the validation error of `max_parallel` or `allow_partial` given without `for_each`,
    or of a `for_each` step that is also a `sub_workflow` step (`job.invalid_for_each`).
    `isolation` without `for_each` is checked against the workflows (`checks.check_fan_out`)."""
    if for_each is None:
        given = [key for key in FOR_EACH_ONLY if getattr(step, key) != FAN_OUT_KEYS[key]]
        if given:
            raise PydanticCustomError(
                "fan_out_shape",
                "{keys} only apply to a step with 'for_each'",
                {"keys": ", ".join(given)},
            )
    elif sub_workflow:
        raise PydanticCustomError(
            "fan_out_shape", "a 'for_each' step cannot also be a 'sub_workflow' step"
        )
