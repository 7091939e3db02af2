"""The `Reviewer` port: one reviewer call, asked synchronously in the worker thread that judges a
review task (docs/quality-gate.md).

The gate owns everything around a call (`deepwork_core.gate.calls`): the brief at the task's
depth, the model, the budget slice, the deadline, stall retries, the second ask when a criterion
was left unjudged, and the `review_usage` and `review_stalled` events. An adapter
(`deepwork_mcp.reviewers`, one per reviewer CLI) only speaks its CLI's protocol: it turns a
`ReviewBrief` into one process and reads the CLI's events back into one `ReviewerReply`, the
reply as the reviewer gave it with the call's `RequestUsage`.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Protocol

from pydantic import BaseModel, ConfigDict, JsonValue

from deepwork_core.base.error_codes import ErrorCode
from deepwork_core.base.errors import QualityGateError
from deepwork_core.gate.tasks import QualityReviewTask
from deepwork_core.state.usage.pair import RequestUsage


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ReviewBrief(_Model):
    """What one reviewer call is given."""

    task: QualityReviewTask
    #: The reviewer's stdin: the brief at the task's depth, then the files (`build_review_message`).
    message: str
    #: The call's working directory.
    project_root: Path
    #: The session whose step is reviewed (a call's trace variables name it).
    session_id: str
    #: The model of the task's depth (`quality_gate.models`); None: the CLI's own.
    model: str | None = None
    #: This call's slice of what is left of the run's cost budget; None: no cost budget.
    usd_left: float | None = None
    #: Seconds the call may take before it is stopped (`quality_gate.timeout`).
    timeout: float
    #: A reviewer silent this long is stopped (`quality_gate.stall_timeout`); None: never.
    stall_timeout: float | None = None


class ReviewFailure(_Model):
    """How a call that ran to its end failed: the coded error and the reviewer's words."""

    code: ErrorCode
    message: str

    @classmethod
    def of(cls, error: QualityGateError) -> ReviewFailure:
        return cls(code=error.code, message=error.message)

    def error(self) -> QualityGateError:
        return QualityGateError(self.message, code=self.code)


class ReviewerReply(_Model):
    """The one result of a call whose output was read: the reply (the verdict as the reviewer
    wrote it, None when the call failed), what the call used (kept when it failed: a call that
    ran out of budget still spent it), and the failure, if any."""

    reply: JsonValue = None
    usage: RequestUsage = RequestUsage()
    error: ReviewFailure | None = None

    @classmethod
    def failed(cls, usage: RequestUsage, error: QualityGateError) -> ReviewerReply:
        return cls(usage=usage, error=ReviewFailure.of(error))


class Reviewer(Protocol):
    """The port a reviewer adapter implements (see the module)."""

    @property
    def name(self) -> str:
        """The CLI (`claude`, `codex`, `gemini`): recorded with each call's usage, and the key
        of a review's `agent` map the adapter reads its persona from."""
        ...

    def review(self, brief: ReviewBrief, cancelled: threading.Event) -> ReviewerReply:
        """Run one call. Raises `QualityGateError` when there is no output to read:
        `quality_gate.not_installed`, `.timeout`, `.output_too_large`, `.reviewer_stalled` (one
        silent try; the gate decides whether to start another) and `quality_gate.error` once
        `cancelled` is set (the process is stopped with its group soon after)."""
        ...
