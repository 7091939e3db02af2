"""The spans' and measurements' attributes of one reviewer call, from its `review_usage` event
(docs/telemetry.md): which GenAI provider each reviewer CLI is, what the span of a call says (in
the GenAI conventions' names, and in OpenInference's so Arize Phoenix prices it), how it ended
and what its measurements count."""

from __future__ import annotations

from typing import Final

from deepwork_core.state.event_kinds import ReviewUsageEvent

from deepwork_mcp.telemetry import names as n
from deepwork_mcp.telemetry.emissions import Attrs, Emission, Measurement

#: The provider of the Claude CLI's review calls.
REVIEW_PROVIDER: Final = "anthropic"
#: The GenAI provider of each reviewer CLI (an event without a `runner` is claude's).
RUNNER_PROVIDERS: Final = {"claude": REVIEW_PROVIDER, "codex": "openai", "gemini": "gcp.gemini"}
#: OpenInference's `llm.provider` of each reviewer CLI (its names differ from the GenAI ones).
OPENINFERENCE_PROVIDERS: Final = {"claude": "anthropic", "codex": "openai", "gemini": "google"}
#: Review outcomes that are verdicts, not failures of the call.
VERDICTS: Final = frozenset({"passed", "failed", "unjudged"})


def review_provider(event: ReviewUsageEvent) -> str:
    return RUNNER_PROVIDERS.get(event.runner or "claude", event.runner or REVIEW_PROVIDER)


def review_span_attrs(event: ReviewUsageEvent) -> Attrs:
    """The attributes of the span of one external review call."""
    usage = event.usage
    attrs: Attrs = {
        n.GEN_AI_OPERATION_NAME: n.INVOKE_AGENT,
        n.GEN_AI_PROVIDER_NAME: review_provider(event),
        n.GEN_AI_AGENT_NAME: event.review,
        n.GEN_AI_REQUEST_MODEL: usage.model or "",
        n.GEN_AI_USAGE_INPUT_TOKENS: usage.all_input_tokens,
        n.GEN_AI_USAGE_OUTPUT_TOKENS: usage.output_tokens,
        n.GEN_AI_USAGE_CACHE_READ: usage.cache_read_tokens,
        n.GEN_AI_USAGE_CACHE_CREATION: usage.cache_creation_tokens,
        n.DW_JOB: event.job,
        n.DW_STEP: event.step_id,
        n.DW_REVIEW_RULE: event.review,
        n.DW_REVIEW_DEPTH: event.depth,
        n.DW_REVIEW_VERDICT: event.outcome,
        n.DW_REVIEW_CRITERIA: event.criteria,
        n.DW_REVIEW_ATTEMPT: event.attempt or 0,
    }
    attrs |= _openinference(event)
    if usage.cost_usd is not None:  # codex and gemini report none: no attribute, never 0
        attrs[n.DW_REVIEW_COST] = usage.cost_usd
        attrs[n.LLM_COST_TOTAL] = usage.cost_usd
    return attrs


def review_error(event: ReviewUsageEvent) -> str | None:
    """The `error.type` a review call's span ends with: `review_failed` for a failing verdict,
    the error code of a call that gave none, None (status left unset) for a pass or `unjudged`."""
    if event.outcome == "failed":
        return n.ERROR_REVIEW_FAILED
    return None if event.outcome in VERDICTS else event.outcome


def _openinference(event: ReviewUsageEvent) -> Attrs:
    """The call as an OpenInference LLM span: Phoenix prices it from these token counts and
    model; `llm.token_count.prompt` counts all input, cached included, as OpenInference does."""
    usage = event.usage
    attrs: Attrs = {
        n.OI_SPAN_KIND: n.OI_KIND_LLM,
        n.LLM_TOKENS_PROMPT: usage.all_input_tokens,
        n.LLM_TOKENS_COMPLETION: usage.output_tokens,
        n.LLM_TOKENS_TOTAL: usage.all_input_tokens + usage.output_tokens,
        n.LLM_TOKENS_CACHE_READ: usage.cache_read_tokens,
        n.LLM_TOKENS_CACHE_WRITE: usage.cache_creation_tokens,
    }
    if usage.model:
        attrs[n.LLM_MODEL_NAME] = usage.model
    provider = OPENINFERENCE_PROVIDERS.get(event.runner or "claude")
    if provider is not None:
        attrs[n.LLM_PROVIDER] = provider
    return attrs


def review_attrs(event: ReviewUsageEvent) -> Attrs:
    """The low-cardinality attributes of a review's measurements."""
    return {
        n.GEN_AI_OPERATION_NAME: n.INVOKE_AGENT,
        n.GEN_AI_PROVIDER_NAME: review_provider(event),
        n.GEN_AI_REQUEST_MODEL: event.model or "",
        n.DW_JOB: event.job,
        n.DW_STEP: event.step_id,
        n.DW_REVIEW_RULE: event.review,
        n.DW_REVIEW_DEPTH: event.depth,
    }


def review_measurements(event: ReviewUsageEvent) -> list[Emission]:
    """The measurements of one external review call: its tokens, duration and cost."""
    if event.mode != "external":
        return []
    usage, low = event.usage, review_attrs(event)
    inputs = usage.all_input_tokens
    out: list[Emission] = [
        Measurement(n.M_TOKEN_USAGE, inputs, {**low, n.GEN_AI_TOKEN_TYPE: "input"}),
        Measurement(n.M_TOKEN_USAGE, usage.output_tokens, {**low, n.GEN_AI_TOKEN_TYPE: "output"}),
        Measurement(n.M_OPERATION_DURATION, event.seconds, low),
    ]
    if usage.cost_usd is not None:
        out.append(Measurement(n.M_REVIEW_COST, usage.cost_usd, low))
    for kind, value in (
        ("input", usage.input_tokens),
        ("output", usage.output_tokens),
        ("cache_read", usage.cache_read_tokens),
        ("cache_creation", usage.cache_creation_tokens),
    ):
        out.append(Measurement(n.M_REVIEW_TOKENS, value, {**low, n.DW_TOKEN_KIND: kind}))
    return out
