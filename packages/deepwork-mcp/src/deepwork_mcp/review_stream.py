"""Reading the Claude CLI's `--output-format stream-json` output (docs/quality-gate.md).

The reviewer prints one JSON event per line: `system`/`init` (with the `model`), `assistant`
turns, and a final `result` carrying `subtype`, `is_error`, `structured_output`, `usage` and
`total_cost_usd`. `read_stream` turns the output of one call into a `StreamOutcome`: the reply
(when there is one), what the call cost, and the coded error it ended with, if any. The usage is
kept even when the call failed (a call that ran out of budget still spent it).

Each way a call can fail has its own code, with the reviewer's message (cut to 500 characters):
a line that is not JSON `quality_gate.bad_output`; a stream without a result event
`quality_gate.truncated`; `subtype` `error_max_budget_usd` `quality_gate.budget_exhausted`,
`error_max_turns` `quality_gate.max_turns`, `error_during_execution`
`quality_gate.execution_error`, `error_max_structured_output_retries`
`quality_gate.structured_output_retries`, any other non-`success` subtype
`quality_gate.unknown_subtype`; `is_error: true` on a `success` `quality_gate.is_error` (the CLI
reports a missing login that way); a non-zero exit `quality_gate.exit_code`; a result without
`structured_output` `quality_gate.bad_output`; a cost or token count that is not a finite
non-negative number (`Infinity`, `NaN`, a string) `quality_gate.bad_output`, logged as zero.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any, Final

from deepwork_core.base.error_codes import ErrorCode
from deepwork_core.base.errors import QualityGateError
from deepwork_core.base.fsutil import loads_json
from deepwork_core.base.process import Completed

_DETAIL_CHARS: Final = 500
_SUBTYPES: Final = {
    "error_max_budget_usd": ErrorCode.QUALITY_GATE_BUDGET_EXHAUSTED,
    "error_max_turns": ErrorCode.QUALITY_GATE_MAX_TURNS,
    "error_during_execution": ErrorCode.QUALITY_GATE_EXECUTION_ERROR,
    "error_max_structured_output_retries": ErrorCode.QUALITY_GATE_STRUCTURED_OUTPUT_RETRIES,
}


@dataclass(frozen=True, slots=True)
class CallUsage:
    """Tokens and cost of one reviewer call, as its result event reported them."""

    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_creation_tokens: int = 0
    cost_usd: float = 0.0
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


def clip(text: str) -> str:
    return text if len(text) <= _DETAIL_CHARS else text[:_DETAIL_CHARS] + "…"


def read_stream(label: str, done: Completed) -> StreamOutcome:
    """The outcome of one call whose output is `done` (see the module docstring)."""
    events: list[dict[str, Any]] = []
    bad_line: str | None = None
    for line in done.stdout.splitlines():
        if not line.strip():
            continue
        try:
            event = loads_json(line)
        except ValueError:
            event = None
        if isinstance(event, dict):
            events.append(event)
        elif bad_line is None:
            bad_line = line
    model = _text(next((e.get("model") for e in events if e.get("subtype") == "init"), None))
    result = next((e for e in reversed(events) if e.get("type") == "result"), None)
    usage = CallUsage(model=model) if result is None else _usage(result, model)
    if isinstance(usage, str):  # never log a cost or count that is not a finite number
        message = f"the reviewer for {label} reported unusable usage figures: {usage}"
        return _failed(CallUsage(model=model), QualityGateError(message, code=_BAD))
    if bad_line is not None:  # the call still cost what its result line says
        if done.returncode != 0:
            return _failed(usage, _exit_code(label, done))
        message = f"the reviewer's answer for {label} is not a JSON event stream: {clip(bad_line)}"
        return _failed(usage, QualityGateError(message, code=_BAD))
    if result is None:
        if done.returncode != 0:
            return _failed(usage, _exit_code(label, done))
        message = (
            f"the reviewer's event stream for {label} ended without a result "
            f"({len(events)} event(s) read); it was cut short"
        )
        error = QualityGateError(message, code=ErrorCode.QUALITY_GATE_TRUNCATED)
        return _failed(usage, error)
    failure = _result_error(label, result, done)
    if failure is not None:
        return _failed(usage, failure)
    return StreamOutcome(result["structured_output"], usage)


_BAD: Final = ErrorCode.QUALITY_GATE_BAD_OUTPUT


def _result_error(label: str, result: dict[str, Any], done: Completed) -> QualityGateError | None:
    subtype = result.get("subtype")
    detail = clip(str(result.get("result") or result.get("errors") or subtype or "no detail"))
    if subtype not in (None, "success"):
        code = _SUBTYPES.get(str(subtype), ErrorCode.QUALITY_GATE_UNKNOWN_SUBTYPE)
        message = f"the reviewer for {label} ended with subtype {clip(str(subtype))}: {detail}"
        return QualityGateError(message, code=code)
    if result.get("is_error") is True:
        message = f"the reviewer reported an error for {label}: {detail}"
        return QualityGateError(message, code=ErrorCode.QUALITY_GATE_IS_ERROR)
    if done.returncode != 0:
        return _exit_code(label, done)
    if "structured_output" not in result:
        message = f"the reviewer's answer for {label} has no structured_output: {detail}"
        return QualityGateError(message, code=_BAD)
    return None


def _exit_code(label: str, done: Completed) -> QualityGateError:
    detail = clip(done.stderr.strip() or done.stdout.strip() or "no output")
    return QualityGateError(
        f"the reviewer for {label} exited with code {done.returncode}: {detail}",
        code=ErrorCode.QUALITY_GATE_EXIT_CODE,
    )


def _failed(usage: CallUsage, error: QualityGateError) -> StreamOutcome:
    return StreamOutcome(None, usage, error)


def _usage(result: dict[str, Any], model: str | None) -> CallUsage | str:
    """The call's usage, or what is wrong with the figures the reviewer reported."""
    raw = result.get("usage")
    usage = raw if isinstance(raw, dict) else {}
    cost = result.get("total_cost_usd", 0.0)
    if not _is_number(cost, float) or cost < 0:
        return f"total_cost_usd {clip(json.dumps(cost))} is not a finite number ≥ 0"
    counts: dict[str, int] = {}
    for name in _TOKEN_FIELDS:
        value = usage.get(name, 0)
        if not _is_number(value, int) or value < 0:
            return f"usage.{name} {clip(json.dumps(value))} is not a whole number ≥ 0"
        counts[name] = value
    return CallUsage(
        input_tokens=counts["input_tokens"],
        output_tokens=counts["output_tokens"],
        cache_read_tokens=counts["cache_read_input_tokens"],
        cache_creation_tokens=counts["cache_creation_input_tokens"],
        cost_usd=float(cost),
        model=model,
    )


_TOKEN_FIELDS: Final = (
    "input_tokens",
    "output_tokens",
    "cache_read_input_tokens",
    "cache_creation_input_tokens",
)


def _is_number(value: object, kind: type[int] | type[float]) -> bool:
    """`value` is a finite JSON number (ints only when `kind` is int); never a bool."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return False
    return isinstance(value, int) or (kind is float and math.isfinite(value))


def _text(value: object) -> str | None:
    return value if isinstance(value, str) and value else None
