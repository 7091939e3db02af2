"""What every reviewer runner shares: a call's plan, its usage and outcome, and JSON lines.

A runner (`claude`, `codex`, `gemini`) is a `ReviewRunner`: it turns a `CallPlan` into the
command line of one reviewer call and reads that call's output into a `StreamOutcome`: the
reply (when there is one), what the call used, and the coded error it ended with, if any. The
usage is kept even when the call failed (a call that ran out of budget still spent it). A
runner whose events report no cost leaves `cost_usd` None: "not reported", never 0.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, Protocol

from deepwork_core.base.error_codes import ErrorCode
from deepwork_core.base.errors import QualityGateError
from deepwork_core.base.process import Completed
from deepwork_core.gate.quality import QualityReviewTask

_DETAIL_CHARS: Final = 500
BAD_OUTPUT: Final = ErrorCode.QUALITY_GATE_BAD_OUTPUT


@dataclass(frozen=True, slots=True)
class CallUsage:
    """Tokens and cost of one reviewer call, as its events reported them.

    `input_tokens` leaves out the cached input (`cache_read_tokens`), whatever the runner's own
    accounting; `cost_usd` is None when the runner reports no cost.
    """

    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_creation_tokens: int = 0
    cost_usd: float | None = None
    model: str | None = None

    @property
    def tokens(self) -> int:
        return (
            self.input_tokens
            + self.output_tokens
            + self.cache_read_tokens
            + self.cache_creation_tokens
        )


@dataclass(frozen=True, slots=True)
class StreamOutcome:
    """One call: its reply (None on failure), its usage, and the error it ended with."""

    reply: object
    usage: CallUsage
    error: QualityGateError | None = None


@dataclass(frozen=True, slots=True)
class CallPlan:
    """What one reviewer call is run with.

    `persona`: the review's `agent` for this runner, if it names one; `usd_left`: what is left
    of the run's cost budget (None: no cost budget); `scratch`: a private folder, removed after
    the call, for files the command line names; `project_root`: the call's working directory.
    """

    executable: str
    task: QualityReviewTask
    model: str | None
    usd_left: float | None
    persona: str | None
    scratch: Path
    project_root: Path


class ReviewRunner(Protocol):
    """One reviewer CLI: its command line and how to read its output."""

    #: The `--external-runner` name, and the key of a review's `agent` map it reads.
    name: str

    def argv(self, plan: CallPlan) -> list[str]:
        """The command line of one call; the review message goes to its stdin."""
        ...

    def read(self, label: str, done: Completed, model: str | None) -> StreamOutcome:
        """The outcome of one call whose output is `done`; `model` is the one it was asked
        to use (None: the CLI's own)."""
        ...


def clip(text: str) -> str:
    return text if len(text) <= _DETAIL_CHARS else text[:_DETAIL_CHARS] + "…"


def json_lines(label: str, done: Completed) -> list[dict[str, Any]] | QualityGateError:
    """The events of a JSON-lines stream, or the error of a line that is not a JSON object
    (`quality_gate.exit_code` when the call also exited non-zero, else `.bad_output`)."""
    events: list[dict[str, Any]] = []
    for line in done.stdout.splitlines():
        if not line.strip():
            continue
        try:
            event = json.loads(line)
        except ValueError:
            event = None
        if not isinstance(event, dict):
            if done.returncode != 0:
                return exit_code_error(label, done)
            message = f"the reviewer's answer for {label} is not a JSON event stream: {clip(line)}"
            return QualityGateError(message, code=BAD_OUTPUT)
        events.append(event)
    return events


def exit_code_error(label: str, done: Completed) -> QualityGateError:
    detail = clip(done.stderr.strip() or done.stdout.strip() or "no output")
    return QualityGateError(
        f"the reviewer for {label} exited with code {done.returncode}: {detail}",
        code=ErrorCode.QUALITY_GATE_EXIT_CODE,
    )


def truncated_error(label: str, count: int) -> QualityGateError:
    message = (
        f"the reviewer's event stream for {label} ended without a result "
        f"({count} event(s) read); it was cut short"
    )
    return QualityGateError(message, code=ErrorCode.QUALITY_GATE_TRUNCATED)


def failed(usage: CallUsage, error: QualityGateError) -> StreamOutcome:
    return StreamOutcome(None, usage, error)


def json_reply(label: str, text: str) -> object | QualityGateError:
    """The JSON value of a reply given as text (a ```json fence around it is allowed)."""
    body = text.strip()
    if body.startswith("```"):
        body = body.split("\n", 1)[1] if "\n" in body else ""
        body = body.rsplit("```", 1)[0]
    try:
        reply: object = json.loads(body)
    except ValueError:
        message = f"the reviewer's answer for {label} is not the JSON verdict: {clip(text)}"
        return QualityGateError(message, code=BAD_OUTPUT)
    return reply


def count(value: object) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0


def text(value: object) -> str | None:
    return value if isinstance(value, str) and value else None
