"""Codex as reviewer: `codex exec --json` with an `--output-schema` verdict (docs/quality-gate.md).

One call: `codex exec --json --ephemeral --ignore-user-config --ignore-rules --sandbox read-only
--skip-git-repo-check --color never --output-schema <file> -c developer_instructions=<role and
persona> [--model <model>] -`, the review message on stdin. Checked against codex-cli 0.169.0:
it prints one JSON event per line, `thread.started`, `turn.started`, `item.started` /
`item.completed` (the verdict is the `text` of the last `agent_message` item; an `error` item
is a warning), then `turn.completed` with `usage` (`input_tokens`, which include
`cached_input_tokens`, `cache_write_input_tokens`, `output_tokens`, `reasoning_output_tokens`)
or `turn.failed` with `error.message`. A top-level `error` event is a reconnect notice.

Codex names neither the model nor a cost in its events: the model recorded is the one asked
for (None: its default) and the cost is not reported. The output schema is sent in strict mode,
where every property is required, so a criterion's `feedback` is required there (and may be
null). Failures: `turn.failed` `quality_gate.execution_error`; no `turn.completed`
`quality_gate.truncated` (`quality_gate.exit_code` after a non-zero exit); a last message that
is not the JSON verdict, or none, `quality_gate.bad_output`.
"""

from __future__ import annotations

import json
from typing import Any, Final

from deepwork_core.base.error_codes import ErrorCode
from deepwork_core.base.errors import QualityGateError
from deepwork_core.base.process import Completed
from deepwork_core.gate.quality import REVIEWER_SYSTEM_PROMPT, review_reply_schema
from deepwork_core.gate.reviewer import ReviewerReply
from deepwork_core.state.usage.pair import RequestUsage

from deepwork_mcp.reviewers.stream import (
    BAD_OUTPUT,
    CallPlan,
    clip_detail,
    count,
    exit_code_error,
    failed,
    json_lines,
    json_reply,
    stream_end,
    unusable_counts,
)


def developer_instructions(persona: str | None) -> str:
    """The reviewer's role, and its persona when the review names one for this runner."""
    if persona is None:
        return REVIEWER_SYSTEM_PROMPT
    return f"{REVIEWER_SYSTEM_PROMPT}\n\nReview in this persona: {persona}"


def strict_reply_schema(plan: CallPlan) -> dict[str, Any]:
    """The reply schema with every property required, as strict structured output wants."""
    schema = review_reply_schema(plan.task)
    item = schema["properties"]["criteria_results"]["items"]
    item["required"] = list(item["properties"])
    return schema


class CodexRunner:
    """`codex exec` in a read-only sandbox, ephemeral, the user's config ignored."""

    name = "codex"

    def argv(self, plan: CallPlan) -> list[str]:
        schema_file = plan.scratch / "reply_schema.json"
        schema_file.write_text(json.dumps(strict_reply_schema(plan)), encoding="utf-8")
        # A TOML string: a bare value would be read as TOML (`true`, a number) when it parses.
        instructions = json.dumps(developer_instructions(plan.persona))
        argv = [
            plan.executable,
            "exec",
            "--json",
            "--ephemeral",
            "--ignore-user-config",
            "--ignore-rules",
            "--sandbox",
            "read-only",
            "--skip-git-repo-check",
            "--color",
            "never",
            "--output-schema",
            str(schema_file),
            "-c",
            f"developer_instructions={instructions}",
        ]
        if plan.model is not None:
            argv += ["--model", plan.model]
        return [*argv, "-"]

    def read(self, label: str, done: Completed, model: str | None) -> ReviewerReply:
        events, bad_line = json_lines(label, done)
        found = stream_end(
            label, done, (events, bad_line), model,
            lambda event: event.get("type") in ("turn.completed", "turn.failed"),
            lambda event: _usage(event.get("usage"), model),
        )  # fmt: skip
        if isinstance(found, ReviewerReply):
            return found
        end, usage = found
        if end["type"] == "turn.failed":
            raw = end.get("error")
            detail = clip_detail(
                str(raw.get("message") if isinstance(raw, dict) else raw or "no detail")
            )
            message = f"the reviewer for {label} failed its turn: {detail}"
            return failed(
                usage, QualityGateError(message, code=ErrorCode.QUALITY_GATE_EXECUTION_ERROR)
            )
        if done.returncode != 0:
            return failed(usage, exit_code_error(label, done))
        texts = [
            item.get("text")
            for e in events
            if e.get("type") == "item.completed" and isinstance(item := e.get("item"), dict)
            if item.get("type") == "agent_message"
        ]
        if not texts or not isinstance(texts[-1], str):
            message = f"the reviewer for {label} ended its turn without a message"
            return failed(usage, QualityGateError(message, code=BAD_OUTPUT))
        reply = json_reply(label, texts[-1])
        if isinstance(reply, QualityGateError):
            return failed(usage, reply)
        return ReviewerReply(reply=reply, usage=usage)


_TOKEN_FIELDS: Final = (
    "input_tokens",
    "cached_input_tokens",
    "output_tokens",
    "cache_write_input_tokens",
)


def _usage(raw: object, model: str | None) -> RequestUsage | str:
    """The call's usage, or what is wrong with the counts the reviewer reported."""
    usage = raw if isinstance(raw, dict) else {}
    problem = unusable_counts(usage, _TOKEN_FIELDS)
    if problem is not None:
        return f"usage.{problem}"
    cached = count(usage.get("cached_input_tokens"))
    return RequestUsage(
        input_tokens=max(0, count(usage.get("input_tokens")) - cached),
        output_tokens=count(usage.get("output_tokens")),
        cache_read_tokens=cached,
        cache_creation_tokens=count(usage.get("cache_write_input_tokens")),
        cost_usd=None,
        model=model,
    )
