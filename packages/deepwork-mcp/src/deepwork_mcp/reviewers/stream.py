"""What the reviewer CLIs share: a call's plan, the runner protocol, and reading JSON lines.

A runner (`claude`, `codex`, `gemini`) is a `ReviewRunner`: it turns a `CallPlan` into the
command line of one reviewer call and reads that call's output into the port's one result, a
`ReviewerReply` (`deepwork_core.gate.reviewer`): the reply (when there is one), what the call
used as a `RequestUsage`, and the coded failure it ended with, if any. The usage is kept even
when the call failed (a call that ran out of budget, or printed a line that is not JSON, still
spent it). A runner whose events report no cost leaves `cost_usd` None: "not reported", never 0.
A cost that is not a finite number ≥ 0, or a token count that is not a whole number ≥ 0, fails
the call with `quality_gate.bad_output` and counts nothing of it: such a figure never reaches
the event log.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, Protocol

from deepwork_core.base.error_codes import ErrorCode
from deepwork_core.base.errors import QualityGateError
from deepwork_core.base.fsutil import loads_json
from deepwork_core.base.process import Completed
from deepwork_core.gate.reviewer import ReviewerReply
from deepwork_core.gate.tasks import QualityReviewTask
from deepwork_core.state.usage.pair import RequestUsage
from pydantic import JsonValue

_DETAIL_CHARS: Final = 500
BAD_OUTPUT: Final = ErrorCode.QUALITY_GATE_BAD_OUTPUT


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

    def read(self, label: str, done: Completed, model: str | None) -> ReviewerReply:
        """The outcome of one call whose output is `done`; `model` is the one it was asked
        to use (None: the CLI's own)."""
        ...


def clip_detail(text: str) -> str:
    return text if len(text) <= _DETAIL_CHARS else text[:_DETAIL_CHARS] + "…"


def json_lines(label: str, done: Completed) -> tuple[list[dict[str, Any]], QualityGateError | None]:
    """The events of a JSON-lines stream, and the error of its first line that is not a JSON
    object (`quality_gate.exit_code` when the call also exited non-zero, else `.bad_output`).

    Lines are read with `loads_json`, so a line nested too deeply is such a line; the events
    around it are still returned, for the usage the call reported.
    """
    events: list[dict[str, Any]] = []
    error: QualityGateError | None = None
    for line in done.stdout.splitlines():
        if not line.strip():
            continue
        try:
            event = loads_json(line)
        except ValueError:
            event = None
        if isinstance(event, dict):
            events.append(event)
        elif error is None:
            if done.returncode != 0:
                error = exit_code_error(label, done)
            else:
                shown = clip_detail(line)
                message = f"the reviewer's answer for {label} is not a JSON event stream: {shown}"
                error = QualityGateError(message, code=BAD_OUTPUT)
    return events, error


def exit_code_error(label: str, done: Completed) -> QualityGateError:
    detail = clip_detail(done.stderr.strip() or done.stdout.strip() or "no output")
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


def failed(usage: RequestUsage, error: QualityGateError) -> ReviewerReply:
    return ReviewerReply.failed(usage, error)


#: An event of a reviewer's stream, as its JSON line gave it.
Event = dict[str, Any]


def stream_end(
    label: str,
    done: Completed,
    read: tuple[list[Event], QualityGateError | None],
    model: str | None,
    is_end: Callable[[Event], bool],
    usage_of: Callable[[Event], RequestUsage | str],
) -> tuple[Event, RequestUsage] | ReviewerReply:
    """The stream's last end event (`is_end`) and the usage it reports (`usage_of`: a problem
    text when a figure is unusable), or the failed reply when the call failed before them: no
    end event (a line that is not JSON, the exit code, or a stream cut short, in that order),
    unusable usage (nothing counted), or a bad line (the usage of the end event still counted).
    `read` is what `json_lines` read of the call."""
    events, bad_line = read
    end = next((event for event in reversed(events) if is_end(event)), None)
    if end is None:
        error = bad_line or (
            exit_code_error(label, done) if done.returncode else truncated_error(label, len(events))
        )
        return failed(RequestUsage(model=model), error)
    usage = usage_of(end)
    if isinstance(usage, str):  # never log a count that is not a whole number
        return unusable_usage(label, usage, model)
    if bad_line is not None:  # the call still used what its end event says
        return failed(usage, bad_line)
    return end, usage


def json_reply(label: str, text: str) -> JsonValue | QualityGateError:
    """The JSON value of a reply given as text (a ```json fence around it is allowed)."""
    body = text.strip()
    if body.startswith("```"):
        body = body.split("\n", 1)[1] if "\n" in body else ""
        body = body.rsplit("```", 1)[0]
    try:
        reply: JsonValue = loads_json(body)
    except ValueError:
        message = f"the reviewer's answer for {label} is not the JSON verdict: {clip_detail(text)}"
        return QualityGateError(message, code=BAD_OUTPUT)
    return reply


def count(value: object) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0


def unusable_counts(fields: dict[str, Any], names: tuple[str, ...]) -> str | None:
    """What is wrong with the first of `names` that `fields` gives as something other than a
    whole number ≥ 0 (`null` counts as absent), or None when they are all usable."""
    for name in names:
        value = fields.get(name)
        if value is not None and (
            isinstance(value, bool) or not isinstance(value, int) or value < 0
        ):
            return f"{name} {clip_detail(json.dumps(value))} is not a whole number ≥ 0"
    return None


def unusable_usage(label: str, problem: str, model: str | None) -> ReviewerReply:
    """A call whose usage figures cannot be trusted: it fails, and nothing of it is counted."""
    message = f"the reviewer for {label} reported unusable usage figures: {problem}"
    return failed(RequestUsage(model=model), QualityGateError(message, code=BAD_OUTPUT))


def nonempty_text(value: object) -> str | None:
    return value if isinstance(value, str) and value else None
