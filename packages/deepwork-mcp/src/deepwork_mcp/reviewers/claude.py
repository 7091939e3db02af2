"""The Claude CLI as reviewer: `claude --print --output-format stream-json` (docs/quality-gate.md).

One call: `claude --print --output-format stream-json --verbose --system-prompt <fixed role>
--json-schema <schema> [--agent <persona>] [--model <model>] [--max-budget-usd <left>] -p --`.
The persona is passed as `--agent` only when Claude Code knows an agent of that name (a built-in
one, or `.claude/agents/<name>.md` in the project or the home folder): the CLI refuses an unknown
`--agent` outright (checked against 2.1.197). Any other persona is a line of the system prompt.
The CLI prints one JSON event per line: `system`/`init` (with the `model`), `assistant` turns,
and a final `result` carrying `subtype`, `is_error`, `structured_output`, `usage` and
`total_cost_usd`.

Each way a call can fail has its own code, with the reviewer's message (cut to 500 characters):
a line that is not JSON `quality_gate.bad_output`; a stream without a result event
`quality_gate.truncated`; `subtype` `error_max_budget_usd` `quality_gate.budget_exhausted`,
`error_max_turns` `quality_gate.max_turns`, `error_during_execution`
`quality_gate.execution_error`, `error_max_structured_output_retries`
`quality_gate.structured_output_retries`, any other non-`success` subtype
`quality_gate.unknown_subtype`; `is_error: true` on a `success` `quality_gate.is_error` (the CLI
reports a missing login that way); a non-zero exit `quality_gate.exit_code`; a result without
`structured_output` `quality_gate.bad_output`; a cost or token count that is not a finite
number ≥ 0 (`Infinity`, `NaN`, a string) `quality_gate.bad_output`, with nothing of the call
counted. A bad line does not hide the usage of the result line after it.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any, Final

from deepwork_core.base.error_codes import ErrorCode
from deepwork_core.base.errors import QualityGateError
from deepwork_core.base.process import Completed
from deepwork_core.gate.quality import REVIEWER_SYSTEM_PROMPT, reply_schema_json
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
    nonempty_text,
    truncated_error,
    unusable_counts,
    unusable_usage,
)

_SUBTYPES: Final = {
    "error_max_budget_usd": ErrorCode.QUALITY_GATE_BUDGET_EXHAUSTED,
    "error_max_turns": ErrorCode.QUALITY_GATE_MAX_TURNS,
    "error_during_execution": ErrorCode.QUALITY_GATE_EXECUTION_ERROR,
    "error_max_structured_output_retries": ErrorCode.QUALITY_GATE_STRUCTURED_OUTPUT_RETRIES,
}


#: The agents Claude Code 2.1.197 has without any definition file.
BUILT_IN_AGENTS: Final = frozenset({"claude", "general-purpose", "Explore", "Plan"})


def defined_agent(name: str, project_root: Path) -> bool:
    """Whether Claude Code has an agent called `name` for this project."""
    if name in BUILT_IN_AGENTS:
        return True
    if "/" in name or name.startswith("."):
        return False
    folders = (project_root / ".claude" / "agents", Path.home() / ".claude" / "agents")
    return any((folder / f"{name}.md").is_file() for folder in folders)


class ClaudeRunner:
    """`claude --print` with stream-json events and a `--json-schema` verdict."""

    name = "claude"

    def argv(self, plan: CallPlan) -> list[str]:
        persona, role = plan.persona, REVIEWER_SYSTEM_PROMPT
        as_agent = persona is not None and defined_agent(persona, plan.project_root)
        if persona is not None and not as_agent:
            role = f"{role}\n\nReview in this persona: {persona}"
        argv = [
            plan.executable,
            "--print",
            "--output-format",
            "stream-json",
            "--verbose",
            "--system-prompt",
            role,
            "--json-schema",
            reply_schema_json(plan.task),
        ]
        if as_agent and persona is not None:
            argv += ["--agent", persona]
        if plan.model is not None:
            argv += ["--model", plan.model]
        if plan.usd_left is not None:
            argv += ["--max-budget-usd", f"{plan.usd_left:g}"]
        return [*argv, "-p", "--"]

    def read(self, label: str, done: Completed, model: str | None) -> ReviewerReply:
        del model  # the init event names the model the CLI used
        return read_stream(label, done)


def read_stream(label: str, done: Completed) -> ReviewerReply:
    """The outcome of one `claude` call whose output is `done` (see the module docstring)."""
    events, bad_line = json_lines(label, done)
    model = nonempty_text(
        next((e.get("model") for e in events if e.get("subtype") == "init"), None)
    )
    result = next((e for e in reversed(events) if e.get("type") == "result"), None)
    usage = RequestUsage(model=model) if result is None else _usage(result, model)
    if isinstance(usage, str):  # never log a cost or count that is not a finite number
        return unusable_usage(label, usage, model)
    if bad_line is not None:  # the call still cost what its result line says
        return failed(usage, bad_line)
    if result is None:
        error = (
            exit_code_error(label, done) if done.returncode else truncated_error(label, len(events))
        )
        return failed(usage, error)
    failure = _result_error(label, result, done)
    if failure is not None:
        return failed(usage, failure)
    return ReviewerReply(reply=result["structured_output"], usage=usage)


def _result_error(label: str, result: dict[str, Any], done: Completed) -> QualityGateError | None:
    subtype = result.get("subtype")
    detail = clip_detail(
        str(result.get("result") or result.get("errors") or subtype or "no detail")
    )
    if subtype not in (None, "success"):
        code = _SUBTYPES.get(str(subtype), ErrorCode.QUALITY_GATE_UNKNOWN_SUBTYPE)
        message = (
            f"the reviewer for {label} ended with subtype {clip_detail(str(subtype))}: {detail}"
        )
        return QualityGateError(message, code=code)
    if result.get("is_error") is True:
        message = f"the reviewer reported an error for {label}: {detail}"
        return QualityGateError(message, code=ErrorCode.QUALITY_GATE_IS_ERROR)
    if done.returncode != 0:
        return exit_code_error(label, done)
    if "structured_output" not in result:
        message = f"the reviewer's answer for {label} has no structured_output: {detail}"
        return QualityGateError(message, code=BAD_OUTPUT)
    return None


_TOKEN_FIELDS: Final = (
    "input_tokens",
    "output_tokens",
    "cache_read_input_tokens",
    "cache_creation_input_tokens",
)


def _usage(result: dict[str, Any], model: str | None) -> RequestUsage | str:
    """The call's usage, or what is wrong with the figures the reviewer reported."""
    raw = result.get("usage")
    usage = raw if isinstance(raw, dict) else {}
    cost = result.get("total_cost_usd")
    # A result without `total_cost_usd` is "not reported" (None), never 0; one that is not a
    # finite number ≥ 0 (`Infinity`, `NaN`, a string) is refused.
    if cost is not None and (
        isinstance(cost, bool)
        or not isinstance(cost, int | float)
        or not math.isfinite(cost)
        or cost < 0
    ):
        return f"total_cost_usd {clip_detail(json.dumps(cost))} is not a finite number ≥ 0"
    problem = unusable_counts(usage, _TOKEN_FIELDS)
    if problem is not None:
        return f"usage.{problem}"
    return RequestUsage(
        input_tokens=count(usage.get("input_tokens")),
        output_tokens=count(usage.get("output_tokens")),
        cache_read_tokens=count(usage.get("cache_read_input_tokens")),
        cache_creation_tokens=count(usage.get("cache_creation_input_tokens")),
        cost_usd=None if cost is None else float(cost),
        model=model,
    )
