# ruff: noqa: S105 - names, not secrets
"""Every span, attribute and metric name DeepWork exports, in one place.

`gen_ai.*` names are the OpenTelemetry GenAI semantic conventions' (tests hold them to the pinned
`opentelemetry-semantic-conventions` package); everything else is in DeepWork's own `deepwork.*`
namespace, except the OpenInference names (`openinference.*`, `llm.*`) a review call's span also
carries so that Arize Phoenix prices it (docs/telemetry.md). The conventions have no workflow
duration metric yet: it is `deepwork.workflow.duration`.
"""

from __future__ import annotations

from typing import Final

# Operation names (`gen_ai.operation.name`), also the first word of the span names.
INVOKE_WORKFLOW: Final = "invoke_workflow"
INVOKE_AGENT: Final = "invoke_agent"
SPAN_STEP: Final = "deepwork.step"
SPAN_APPROVAL: Final = "deepwork.approval"
SPAN_CHECKPOINT: Final = "deepwork.checkpoint"

# GenAI attributes.
GEN_AI_OPERATION_NAME: Final = "gen_ai.operation.name"
GEN_AI_WORKFLOW_NAME: Final = "gen_ai.workflow.name"
GEN_AI_CONVERSATION_ID: Final = "gen_ai.conversation.id"
GEN_AI_PROVIDER_NAME: Final = "gen_ai.provider.name"
GEN_AI_AGENT_NAME: Final = "gen_ai.agent.name"
GEN_AI_REQUEST_MODEL: Final = "gen_ai.request.model"
GEN_AI_USAGE_INPUT_TOKENS: Final = "gen_ai.usage.input_tokens"
GEN_AI_USAGE_OUTPUT_TOKENS: Final = "gen_ai.usage.output_tokens"
GEN_AI_USAGE_CACHE_READ: Final = "gen_ai.usage.cache_read.input_tokens"
GEN_AI_USAGE_CACHE_CREATION: Final = "gen_ai.usage.cache_creation.input_tokens"
GEN_AI_TOKEN_TYPE: Final = "gen_ai.token.type"

# DeepWork attributes.
DW_JOB: Final = "deepwork.job"
DW_JOB_VERSION: Final = "deepwork.job.version"
DW_WORKFLOW: Final = "deepwork.workflow"
DW_RUN_ID: Final = "deepwork.run.id"
DW_WORKFLOW_STATUS: Final = "deepwork.workflow.status"
DW_PLATFORM: Final = "deepwork.agent.platform"
DW_INSTANCE_ID: Final = "deepwork.workflow.instance_id"
DW_PARENT_SESSION_ID: Final = "deepwork.workflow.parent_session_id"
DW_STEPS_COMPLETED: Final = "deepwork.workflow.steps_completed"
DW_EVIDENCE_STALE: Final = "deepwork.evidence.stale_outputs"
DW_STEP: Final = "deepwork.step"
DW_STEP_RUN: Final = "deepwork.step.run"
DW_STEP_OUTCOME: Final = "deepwork.step.outcome"
DW_STEP_ATTEMPTS: Final = "deepwork.step.attempts"
DW_STEP_OVERRIDDEN: Final = "deepwork.step.overridden"
DW_SCOPE_UNDECLARED: Final = "deepwork.scope.undeclared_files"
DW_GATE_PASSED: Final = "deepwork.gate.passed"
DW_APPROVAL_CHANNEL: Final = "deepwork.approval.channel"
DW_APPROVAL_DECISION: Final = "deepwork.approval.decision"
DW_APPROVAL_EVIDENCE_MATCHED: Final = "deepwork.approval.evidence_matched"
DW_APPROVAL_FILES: Final = "deepwork.approval.files"
DW_APPROVAL_SIGNER: Final = "deepwork.approval.signer"
DW_REVIEW_RULE: Final = "deepwork.review.rule"
DW_REVIEW_DEPTH: Final = "deepwork.review.depth"
DW_REVIEW_VERDICT: Final = "deepwork.review.verdict"
DW_REVIEW_COST: Final = "deepwork.review.cost_usd"
DW_REVIEW_CRITERIA: Final = "deepwork.review.criteria"
DW_REVIEW_ATTEMPT: Final = "deepwork.review.attempt"
DW_CHECKPOINT_ATTEMPT: Final = "deepwork.checkpoint.attempt"
DW_CHECKPOINT_OUTCOME: Final = "deepwork.checkpoint.outcome"
DW_CHECKPOINT_FAILED: Final = "deepwork.checkpoint.failed_reviews"
DW_TOKEN_KIND: Final = "deepwork.token.kind"
DW_CONTENT: Final = "deepwork.content"
DW_REASON: Final = "deepwork.reason"

# Error types (`error.type`, also the status description without the content opt-in).
ERROR_TYPE: Final = "error.type"
ERROR_REVIEW_FAILED: Final = "review_failed"
ERROR_NEEDS_WORK: Final = "needs_work"

# OpenInference attributes: what Arize Phoenix reads to price a call (from its token counts and
# model) and Arize AX takes as the call's cost (`llm.cost.total`).
OI_SPAN_KIND: Final = "openinference.span.kind"
OI_KIND_LLM: Final = "LLM"
LLM_MODEL_NAME: Final = "llm.model_name"
LLM_PROVIDER: Final = "llm.provider"
LLM_TOKENS_PROMPT: Final = "llm.token_count.prompt"
LLM_TOKENS_COMPLETION: Final = "llm.token_count.completion"
LLM_TOKENS_TOTAL: Final = "llm.token_count.total"
LLM_TOKENS_CACHE_READ: Final = "llm.token_count.prompt_details.cache_read"
LLM_TOKENS_CACHE_WRITE: Final = "llm.token_count.prompt_details.cache_write"
LLM_COST_TOTAL: Final = "llm.cost.total"

# Span events, content only (DEEPWORK_OTEL_LOG_CONTENT).
EVENT_GOAL: Final = "deepwork.goal"
EVENT_FEEDBACK: Final = "deepwork.review.feedback"
EVENT_COMMENT: Final = "deepwork.approval.comment"

# Metrics.
M_TOKEN_USAGE: Final = "gen_ai.client.token.usage"
M_OPERATION_DURATION: Final = "gen_ai.client.operation.duration"
M_WORKFLOW_DURATION: Final = "deepwork.workflow.duration"
M_REVIEW_COST: Final = "deepwork.review.cost"
M_REVIEW_TOKENS: Final = "deepwork.review.tokens"
M_REVIEW_REUSED: Final = "deepwork.review.reused"
M_STEP_ATTEMPTS: Final = "deepwork.step.attempts"
M_GATE_FIRST_PASS: Final = "deepwork.gate.first_pass"
M_APPROVAL_WAIT: Final = "deepwork.approval.wait.duration"

#: Each metric: (kind, unit, description). `counter` sums, `histogram` records a distribution.
METRICS: Final[dict[str, tuple[str, str, str]]] = {
    M_TOKEN_USAGE: ("histogram", "{token}", "Tokens per review call, by gen_ai.token.type"),
    M_OPERATION_DURATION: ("histogram", "s", "Duration of each review call"),
    M_WORKFLOW_DURATION: ("histogram", "s", "Duration of each workflow session"),
    M_REVIEW_COST: ("counter", "USD", "What review calls cost, as the reviewer reported it"),
    M_REVIEW_TOKENS: ("counter", "{token}", "Review tokens by kind, as deepwork stats counts them"),
    M_REVIEW_REUSED: ("counter", "{verdict}", "Verdicts reused from earlier reviews, at 0 USD"),
    M_STEP_ATTEMPTS: ("histogram", "{attempt}", "Gate attempts of each reviewed step"),
    M_GATE_FIRST_PASS: ("counter", "{step}", "Reviewed steps, by whether the first attempt passed"),
    M_APPROVAL_WAIT: ("histogram", "s", "Time from an approval request to its decision"),
}
