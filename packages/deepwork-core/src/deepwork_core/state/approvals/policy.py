"""A request's approval policy and where its decisions stand (docs/job-format.md#approval-policy).

The server copies the step's `approval:` policy into the request it opens, sealed with it:
`required` distinct trusted signers, `approvers` (who may sign; None: any trusted approver),
`not_by_author` with the run's author (the approver identity and git `user.email` recorded when
the run started), and `expires_at`. A decision counts toward the request only when it verifies
(`deepwork_core.state.approvals.store`) and its signer may count here (`why_not_counted`); the
same signer counts once however often they sign. One counted rejection sends the step back.

A request ends in one of `END_STATES`: approved, rejected, expired (its time passed with too few
approvals), cancelled (the run was aborted or moved back) or failed (what was approved is not
what the step holds any more, or the request is not the server's own).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Final, Protocol

from pydantic import BaseModel, ConfigDict

from deepwork_core.jobs.steps.approval import Approval

#: How an approval request can end.
END_STATES: Final = ("approved", "rejected", "expired", "cancelled", "failed")


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class RunAuthor(_Model):
    """Who started the run, as recorded then: the local approver's name (None: none set up) and
    the project's git `user.email` (None: unset)."""

    approver: str | None = None
    email: str | None = None


class RequestPolicy(_Model):
    """The policy a request was opened with (the step's `approval:` keys, resolved)."""

    required: int = 1
    approvers: list[str] | None = None
    not_by_author: bool = False
    author: RunAuthor | None = None
    expires_at: datetime | None = None

    @property
    def needs_signatures(self) -> bool:
        """True when the policy is about who signs, so only signed decisions can count."""
        return self.required > 1 or self.approvers is not None or self.not_by_author

    def expired(self, now: datetime) -> bool:
        return self.expires_at is not None and now >= self.expires_at

    def sealed(self) -> dict[str, object]:
        """What the request's seal covers of the policy, as JSON values."""
        return self.model_dump(mode="json")

    def seat(self, signer: str | None) -> str:
        """The place of a decision by `signer` among the request's decisions: one per signer
        where several must sign, else one for the request (a new decision replaces one that
        does not verify)."""
        return (signer or "") if self.required > 1 else ""


class SignedOff(Protocol):
    """What counting needs of a decision (`deepwork_core.state.approvals.models`)."""

    @property
    def signer(self) -> str | None: ...
    @property
    def email(self) -> str | None: ...
    @property
    def approved(self) -> bool: ...


def why_not_counted(
    policy: RequestPolicy | None, signer: str | None, email: str | None
) -> str | None:
    """Why a decision by `signer` (with git `email`) cannot count under `policy`; None: it can."""
    if policy is None:
        return None
    if policy.needs_signatures and signer is None:
        return "this step's approval policy counts only decisions signed by a trusted approver"
    if policy.approvers is not None and signer not in policy.approvers:
        names = ", ".join(policy.approvers)
        return f"approver {signer!r} is not one of this step's approvers ({names})"
    author = policy.author
    if policy.not_by_author and author is not None:
        if author.approver is not None and signer == author.approver:
            return f"approver {signer!r} started this run, and the step is not_by_author"
        if author.email is not None and email is not None and email == author.email:
            return f"git user.email {email} started this run, and the step is not_by_author"
    return None


def why_unmeetable(policy: RequestPolicy | None, trusted: Sequence[str]) -> str | None:
    """Why no set of the `trusted` approvers (as committed on the base ref) can ever meet
    `policy`; None when some can (or the policy is not about who signs). The git `user.email`
    of a signer is not known before they sign, so only the author's approver name is left out
    here."""
    if policy is None or not policy.needs_signatures:
        return None
    eligible = [name for name in trusted if why_not_counted(policy, name, None) is None]
    if len(eligible) >= policy.required:
        return None
    who = ", ".join(eligible) if eligible else "none"
    limits = []
    if policy.approvers is not None:
        limits.append(f"in approvers [{', '.join(policy.approvers)}]")
    author = policy.author.approver if policy.author is not None else None
    if policy.not_by_author and author is not None:
        limits.append(f"other than the run's author {author!r}")
    among = f" {' and '.join(limits)}" if limits else ""
    return (
        f"required: {policy.required}, but only {len(eligible)} approver(s) trusted on the base "
        f"ref{among} can sign ({who})"
    )


def who_may_decide(policy: RequestPolicy | None) -> str:
    """Who may decide a request under `policy`, in a person's words: `bob or carol` (its
    `approvers` but the run's author under `not_by_author`), else `any trusted approver`."""
    author = None
    if policy is not None and policy.not_by_author and policy.author is not None:
        author = policy.author.approver
    if policy is None or policy.approvers is None:
        return "any trusted approver" + (f" but {author}" if author else "")
    names = [name for name in policy.approvers if name != author] or ["nobody"]
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} or {names[-1]}"


@dataclass(frozen=True, slots=True)
class Standing:
    """Where the counted decisions of a request stand."""

    required: int
    #: The distinct signers whose approvals count, in the order they decided.
    approved_by: list[str] = field(default_factory=list)
    #: The counted rejection, if any (its index among the decisions).
    rejection: int | None = None
    #: The decision that completed the count (its index among the decisions).
    concluding: int | None = None
    #: The decisions that count (their indices among the decisions, oldest first): each
    #: distinct signer's approval, and the rejection that settles the request, if any.
    counted: list[int] = field(default_factory=list)

    @property
    def partial(self) -> bool:
        return self.rejection is None and 0 < len(self.approved_by) < self.required

    def text(self) -> str:
        """`1 of 2 approvals (alice)`, as every view shows a request's approvals."""
        who = f" ({', '.join(self.approved_by)})" if self.approved_by else ""
        return f"{len(self.approved_by)} of {self.required} approvals{who}"


def standing(policy: RequestPolicy | None, decisions: Sequence[SignedOff]) -> Standing:
    """Count `decisions` (verified ones, oldest first) under `policy`."""
    required = 1 if policy is None else policy.required
    counted: list[str] = []
    indices: list[int] = []
    for index, decision in enumerate(decisions):
        if why_not_counted(policy, decision.signer, decision.email) is not None:
            continue
        if not decision.approved:
            return Standing(
                required, counted, rejection=index, concluding=index, counted=[*indices, index]
            )
        who = decision.signer or ""
        if who in counted and policy is not None and policy.required > 1:
            continue  # the same signer counts once
        counted.append(who)
        indices.append(index)
        if len(counted) >= required:
            return Standing(required, [c for c in counted if c], concluding=index, counted=indices)
    return Standing(required, [c for c in counted if c], counted=indices)


def expires_at(requested_at: datetime, expiry: timedelta | None) -> datetime | None:
    return None if expiry is None else requested_at + expiry


def request_policy(
    asks: Sequence[Approval], author: RunAuthor | None, requested_at: datetime
) -> RequestPolicy | None:
    """The policy of a request for the steps asking `asks` (the strictest of each key, for
    steps that run together); None when none sets one (any one trusted decision counts)."""
    if not any(_has_policy(ask) for ask in asks):
        return None
    lists = [set(ask.approvers) for ask in asks if ask.approvers is not None]
    approvers = sorted(set.intersection(*lists)) if lists else None
    expiries = [ask.expiry for ask in asks if ask.expiry is not None]
    not_by_author = any(ask.not_by_author for ask in asks)
    return RequestPolicy(
        required=max(ask.required for ask in asks),
        approvers=approvers,
        not_by_author=not_by_author,
        author=author if not_by_author else None,
        expires_at=expires_at(requested_at, min(expiries) if expiries else None),
    )


def _has_policy(ask: Approval) -> bool:
    return (
        ask.required > 1
        or ask.approvers is not None
        or ask.not_by_author
        or ask.expires_after is not None
    )
