"""A step's `approval:`, the human sign-off it needs, and its policy keys
(docs/job-format.md#approval-policy).

`required: N` distinct trusted signers, `approvers: [names]` (who may sign), `not_by_author:
true` (the identities recorded when the run started cannot count) and `expires_after` (a
duration such as `30m`, `24h`, `7d` or `1h30m`). Their types are declared here and checked by
the step's `Approval` model (here), so `deepwork jobs validate` reports a bad policy with the
file and line of the key (`job.invalid_approval`). What the server does with them is in
`deepwork_core.state.approvals.policy`.
"""

from __future__ import annotations

import re
from datetime import timedelta
from typing import Annotated, Final

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StringConstraints,
    ValidationInfo,
    field_validator,
)
from pydantic_core import PydanticCustomError

#: An approver's name as `.deepwork/approvers/<name>.pub` names it (docs/team.md).
APPROVER_NAME: Final = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$"
#: A duration: whole numbers of days, hours, minutes and seconds, largest first.
_DURATION: Final = re.compile(r"^(?:(\d+)d)?(?:(\d+)h)?(?:(\d+)m)?(?:(\d+)s)?$")
#: The longest a request may wait (a year): beyond that is a typing mistake.
MAX_EXPIRY: Final = timedelta(days=366)

_Text = Annotated[str, StringConstraints(min_length=1)]
ApproverName = Annotated[str, StringConstraints(pattern=APPROVER_NAME)]
RequiredSigners = Annotated[
    int,
    Field(
        ge=1,
        le=64,
        description="How many distinct trusted approvers must approve (default 1).",
    ),
]
Approvers = Annotated[
    list[ApproverName] | None,
    Field(
        min_length=1,
        description="The approvers (names of `.deepwork/approvers/<name>.pub`) who may sign; "
        "default: every trusted approver.",
    ),
]
NotByAuthor = Annotated[
    bool,
    Field(
        description="When true, the approver and git user.email recorded when the run started "
        "cannot count."
    ),
]
ExpiresAfter = Annotated[
    str | None,
    Field(
        description="How long the request stays open, e.g. 30m, 24h, 7d, 1h30m; then it "
        "expires and the step does not complete.",
    ),
]


def parse_duration(text: str) -> timedelta:
    """`text` (`30m`, `24h`, `7d`, `1h30m`, `90s`) as a duration; ValueError when it is none."""
    match = _DURATION.fullmatch(text.strip())
    if match is None or not any(match.groups()):
        raise ValueError(f"{text!r} is not a duration such as 30m, 24h or 7d")
    days, hours, minutes, seconds = (int(part or 0) for part in match.groups())
    length = timedelta(days=days, hours=hours, minutes=minutes, seconds=seconds)
    if length <= timedelta(0) or length > MAX_EXPIRY:
        raise ValueError(f"{text!r} must be more than 0s and at most {MAX_EXPIRY.days}d")
    return length


def check_expiry(text: str | None) -> str | None:
    """`text` when it is a duration `parse_duration` reads (or None); else the job's error."""
    if text is not None:
        try:
            parse_duration(text)
        except ValueError as exc:
            raise PydanticCustomError(
                "approval_policy", "approval.expires_after: {why}", {"why": str(exc)}
            ) from None
    return text


def check_required(required: int, approvers: list[str] | None) -> int:
    """`required` when the named `approvers` (None: any trusted one) can meet it."""
    if approvers is not None and required > len(approvers):
        raise PydanticCustomError(
            "approval_policy",
            "approval.required is {required}, but approval.approvers names only {count}: "
            "the step could never be approved",
            {"required": required, "count": len(approvers)},
        )
    return required


def check_approvers(approvers: list[str] | None) -> list[str] | None:
    """`approvers` when it names each approver once."""
    if approvers is not None and len(set(approvers)) != len(approvers):
        raise PydanticCustomError("approval_policy", "approval.approvers names an approver twice")
    return approvers


class Approval(BaseModel):
    """A human sign-off a step needs after its reviews pass (see docs/evidence.md), with its
    policy."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    prompt: _Text = Field(description="The question put to the human.")
    show: list[_Text] = Field(
        default_factory=list,
        description="Names of the step's outputs shown to the human; the approval is bound to "
        "their SHA-256 hashes.",
    )
    approvers: Approvers = None
    required: RequiredSigners = 1
    not_by_author: NotByAuthor = False
    expires_after: ExpiresAfter = None

    @field_validator("approvers")
    @classmethod
    def _each_once(cls, approvers: list[str] | None) -> list[str] | None:
        return check_approvers(approvers)

    @field_validator("required")
    @classmethod
    def _can_be_met(cls, required: int, info: ValidationInfo) -> int:
        return check_required(required, info.data.get("approvers"))

    @field_validator("expires_after")
    @classmethod
    def _is_a_duration(cls, text: str | None) -> str | None:
        return check_expiry(text)

    @property
    def expiry(self) -> timedelta | None:
        """How long a request of this step stays open (None: until someone decides)."""
        return None if self.expires_after is None else parse_duration(self.expires_after)
