"""The Gemini CLI as reviewer, headless with streamed JSON (docs/quality-gate.md).

One call: `gemini --output-format stream-json --approval-mode default --skip-trust [--model
<model>] --prompt <answer instructions>`, the review message on stdin (the CLI appends the
prompt to it). Checked against Gemini CLI 0.61.0: it prints one JSON event per line, `init`
(`session_id`, `model`, often `auto`), `message` events (`role`, `content`, `delta: true` for
the model's chunks), `tool_use` / `tool_result`, and a final `result` with `status` (`success`
or `error` with `error: {type, message}`) and `stats` (`input_tokens`, which include `cached`,
`input` without them, `output_tokens`, and `models` keyed by the model that answered).

The CLI has no schema flag and no system-prompt flag short of replacing its whole prompt, so the
prompt carries the reviewer's role, the review's persona when it names one for `gemini`, and the
reply schema; the verdict is the JSON in the assistant's text (a ```json fence is allowed). The
events report no cost. In `default` approval mode a headless run may use only read-only tools.
Failures: `status: error` by `error.type`: `FatalTurnLimitedError` `quality_gate.max_turns`,
`FatalAuthenticationError` `quality_gate.is_error`, any other `quality_gate.execution_error`;
no result `quality_gate.truncated` (`quality_gate.exit_code` after a non-zero exit); an answer
that is not the JSON verdict `quality_gate.bad_output`.
"""

from __future__ import annotations

from typing import Any, Final

from deepwork_core.base.error_codes import ErrorCode
from deepwork_core.base.errors import QualityGateError
from deepwork_core.base.process import Completed
from deepwork_core.gate.quality import REVIEWER_SYSTEM_PROMPT, reply_schema_json
from deepwork_core.gate.reviewer import ReviewerReply
from deepwork_core.state.usage.pair import RequestUsage

from deepwork_mcp.reviewers.stream import (
    CallPlan,
    clip_detail,
    count,
    exit_code_error,
    failed,
    json_lines,
    json_reply,
    nonempty_text,
    stream_end,
    unusable_counts,
)

_ERROR_TYPES: Final = {
    "FatalTurnLimitedError": ErrorCode.QUALITY_GATE_MAX_TURNS,
    "FatalAuthenticationError": ErrorCode.QUALITY_GATE_IS_ERROR,
}


def answer_prompt(plan: CallPlan) -> str:
    """What `--prompt` says after the review message: role, persona, how to answer."""
    parts = [REVIEWER_SYSTEM_PROMPT]
    if plan.persona is not None:
        parts.append(f"Review in this persona: {plan.persona}")
    parts.append(
        "Answer with one JSON object and nothing else, matching this JSON Schema: "
        + reply_schema_json(plan.task)
    )
    return "\n\n".join(parts)


class GeminiRunner:
    """`gemini --prompt` in headless mode with `--output-format stream-json`."""

    name = "gemini"

    def argv(self, plan: CallPlan) -> list[str]:
        argv = [
            plan.executable,
            "--output-format",
            "stream-json",
            "--approval-mode",
            "default",
            "--skip-trust",
        ]
        if plan.model is not None:
            argv += ["--model", plan.model]
        return [*argv, "--prompt", answer_prompt(plan)]

    def read(self, label: str, done: Completed, model: str | None) -> ReviewerReply:
        events, bad_line = json_lines(label, done)
        init_model = next(
            (nonempty_text(e.get("model")) for e in events if e.get("type") == "init"), None
        )
        asked = model or (init_model if init_model != "auto" else None)
        found = stream_end(
            label, done, (events, bad_line), asked,
            lambda event: event.get("type") == "result",
            lambda event: _usage(event.get("stats"), asked),
        )  # fmt: skip
        if isinstance(found, ReviewerReply):
            return found
        result, usage = found
        if result.get("status") != "success":
            return failed(usage, _status_error(label, result))
        if done.returncode != 0:
            return failed(usage, exit_code_error(label, done))
        answer = "".join(
            e["content"]
            for e in events
            if e.get("type") == "message" and e.get("role") == "assistant"
            if isinstance(e.get("content"), str)
        )
        reply = json_reply(label, answer)
        if isinstance(reply, QualityGateError):
            return failed(usage, reply)
        return ReviewerReply(reply=reply, usage=usage)


def _status_error(label: str, result: dict[str, Any]) -> QualityGateError:
    raw = result.get("error")
    error = raw if isinstance(raw, dict) else {}
    kind = str(error.get("type") or result.get("status") or "unknown")
    detail = clip_detail(str(error.get("message") or kind))
    code = _ERROR_TYPES.get(kind, ErrorCode.QUALITY_GATE_EXECUTION_ERROR)
    return QualityGateError(
        f"the reviewer for {label} ended with an error ({clip_detail(kind)}): {detail}", code=code
    )


def _usage(raw: object, model: str | None) -> RequestUsage | str:
    """The call's usage, or what is wrong with the counts the reviewer reported."""
    stats = raw if isinstance(raw, dict) else {}
    problem = unusable_counts(stats, ("input", "input_tokens", "cached", "output_tokens"))
    if problem is not None:
        return f"stats.{problem}"
    cached = count(stats.get("cached"))
    uncached = stats.get("input")
    models = stats.get("models")
    answered = list(models) if isinstance(models, dict) else []
    return RequestUsage(
        input_tokens=(
            count(uncached)
            if isinstance(uncached, int)
            else max(0, count(stats.get("input_tokens")) - cached)
        ),
        output_tokens=count(stats.get("output_tokens")),
        cache_read_tokens=cached,
        cost_usd=None,
        model=answered[0] if len(answered) == 1 else model,
    )
