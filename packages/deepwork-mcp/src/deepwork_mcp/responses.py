"""Tool responses (seed 000, JOBS-REQ-001, RUNTIME.md additions) as pydantic models.

Returning these models gives clients an `outputSchema` and `structuredContent`. Field names are the
wire contract: fields may be added, never renamed or removed. Each model is built from the core
result with a `from_…` constructor so tool adapters stay one line.
"""

from __future__ import annotations

from typing import Any, Literal

from deepwork_core.briefing import StepBrief
from deepwork_core.discovery import Catalog
from deepwork_core.engine import AbortResult, FinishResult, FinishStatus, StackItem, StartResult
from deepwork_core.sessions import OutputValue
from deepwork_core.verdicts import ReviewVerdict
from pydantic import BaseModel


class _Model(BaseModel):
    pass


def output_schema(model: type[BaseModel], *, detail_depth: int = 1) -> dict[str, Any]:
    """A compact `outputSchema` for `model`: fields down to `detail_depth` levels are spelled
    out; deeper objects are just `object`.

    The full pydantic schema of these responses is several kilobytes per tool and is sent to the
    model with every `tools/list`; this keeps the whole tool list small while still describing
    every field an agent reads. Descriptions and defaults are left out (the tool description and
    the field names carry the meaning). `X | None` stays `anyOf: [X, {type: null}]`: every node
    has a single `type`, which strict clients and single-type dialects (Gemini function
    declarations) require.
    """
    schema = model.model_json_schema()
    return _compact(schema, schema.get("$defs", {}), 0, detail_depth)


def _compact(node: dict[str, Any], defs: dict[str, Any], depth: int, limit: int) -> dict[str, Any]:
    if "$ref" in node:
        node = defs[node["$ref"].rsplit("/", 1)[-1]]
    if "anyOf" in node:
        options = [o for o in node["anyOf"] if o != {"type": "null"}]
        nullable = len(options) < len(node["anyOf"])
        if len(options) == 1 and not nullable:
            return _compact(options[0], defs, depth, limit)
        branches = [_compact(o, defs, depth, limit) for o in options]
        return {"anyOf": branches + ([{"type": "null"}] if nullable else [])}
    out: dict[str, Any] = {"type": node["type"]} if "type" in node else {}
    if "enum" in node:
        out["enum"] = node["enum"]
    if node.get("type") == "object" and depth < limit:
        if "properties" in node:
            out["properties"] = {
                key: _compact(value, defs, depth + 1, limit)
                for key, value in node["properties"].items()
            }
        elif isinstance(node.get("additionalProperties"), dict):
            out["additionalProperties"] = _compact(
                node["additionalProperties"], defs, depth + 1, limit
            )
    elif node.get("type") == "array" and "items" in node and depth < limit:
        out["items"] = _compact(node["items"], defs, depth, limit)
    return out


class WorkflowInfo(_Model):
    name: str
    summary: str


class JobInfo(_Model):
    name: str
    summary: str
    description: str | None
    workflows: list[WorkflowInfo]


class JobLoadErrorInfo(_Model):
    job_name: str
    job_dir: str
    error: str


class GetWorkflowsResponse(_Model):
    jobs: list[JobInfo]
    errors: list[JobLoadErrorInfo]

    @classmethod
    def from_catalog(cls, catalog: Catalog) -> GetWorkflowsResponse:
        return cls(
            jobs=[
                JobInfo(
                    name=job.name,
                    summary=job.summary,
                    description=job.description,
                    workflows=[WorkflowInfo(name=w.name, summary=w.summary) for w in job.workflows],
                )
                for job in catalog.jobs
            ],
            errors=[
                JobLoadErrorInfo(job_name=e.job_name, job_dir=str(e.job_dir), error=e.error)
                for e in catalog.errors
            ],
        )


class ExpectedOutput(_Model):
    name: str
    type: Literal["file", "files"]
    description: str
    required: bool
    syntax_for_finished_step_tool: str


class ReviewInfo(_Model):
    run_each: str
    quality_criteria: dict[str, str]
    additional_review_guidance: str | None = None


class StepInput(_Model):
    """A user parameter (no paths) or files an earlier step submitted."""

    step_id: str
    name: str
    description: str | None = None
    from_step: str | None = None
    paths: list[str]


class ActiveStepInfo(_Model):
    session_id: str
    step_id: str
    job_dir: str
    step_expected_outputs: list[ExpectedOutput]
    step_reviews: list[ReviewInfo]
    step_instructions: str
    common_job_info: str
    step_inputs: list[StepInput]

    @classmethod
    def from_brief(cls, brief: StepBrief) -> ActiveStepInfo:
        return cls(
            session_id=brief.session_id,
            step_id=brief.step_id,
            job_dir=str(brief.job_dir),
            step_expected_outputs=[
                ExpectedOutput(
                    name=o.name,
                    type=o.type.value,
                    description=o.description,
                    required=o.required,
                    syntax_for_finished_step_tool=o.syntax_for_finished_step_tool,
                )
                for o in brief.expected_outputs
            ],
            step_reviews=[
                ReviewInfo(
                    run_each=r.review.run_each,
                    quality_criteria=dict(r.review.quality_criteria),
                    additional_review_guidance=r.review.additional_review_guidance,
                )
                for r in brief.reviews
            ],
            step_instructions=brief.instructions,
            common_job_info=brief.common_job_info,
            step_inputs=[
                StepInput(
                    step_id=i.step_id,
                    name=i.name,
                    description=i.description,
                    from_step=i.from_step,
                    paths=list(i.paths),
                )
                for i in brief.inputs
            ],
        )


class StackEntry(_Model):
    workflow: str
    step: str
    session_id: str


def _stack(items: list[StackItem]) -> list[StackEntry]:
    return [StackEntry(workflow=i.workflow, step=i.step, session_id=i.session_id) for i in items]


class StartWorkflowResponse(_Model):
    begin_step: ActiveStepInfo
    stack: list[StackEntry]
    branch_name: str | None
    branch_note: str | None = None

    @classmethod
    def from_result(cls, result: StartResult) -> StartWorkflowResponse:
        return cls(
            begin_step=ActiveStepInfo.from_brief(result.brief),
            stack=_stack(result.stack),
            branch_name=result.branch_name,
            branch_note=result.branch_note,
        )


class QualityCriteriaResult(_Model):
    criterion: str
    passed: bool
    feedback: str | None


class ReviewResult(_Model):
    review_run_each: str
    target_file: str | None
    passed: bool
    feedback: str
    criteria_results: list[QualityCriteriaResult]

    @classmethod
    def from_verdict(cls, verdict: ReviewVerdict) -> ReviewResult:
        return cls(
            review_run_each=verdict.review_run_each,
            target_file=verdict.target_file,
            passed=verdict.passed,
            feedback=verdict.feedback,
            criteria_results=[
                QualityCriteriaResult(criterion=c.criterion, passed=c.passed, feedback=c.feedback)
                for c in verdict.criteria_results
            ],
        )


#: The `finished_step` status values (JOBS-REQ-001.7.2); one enum, shared with the engine.
StepStatus = FinishStatus


class FinishedStepResponse(_Model):
    status: StepStatus
    feedback: str | None = None
    failed_reviews: list[ReviewResult] | None = None
    begin_step: ActiveStepInfo | None = None
    summary: str | None = None
    all_outputs: dict[str, OutputValue] | None = None
    stack: list[StackEntry]

    @classmethod
    def from_result(cls, result: FinishResult) -> FinishedStepResponse:
        return cls(
            status=result.status,
            feedback=result.feedback,
            failed_reviews=(
                [ReviewResult.from_verdict(v) for v in result.failed_reviews]
                if result.status is FinishStatus.NEEDS_WORK
                else None
            ),
            begin_step=ActiveStepInfo.from_brief(result.brief) if result.brief else None,
            summary=result.summary,
            all_outputs=result.all_outputs,
            stack=_stack(result.stack),
        )


class AbortWorkflowResponse(_Model):
    aborted_workflow: str
    aborted_step: str
    explanation: str
    stack: list[StackEntry]
    resumed_workflow: str | None
    resumed_step: str | None

    @classmethod
    def from_result(cls, result: AbortResult) -> AbortWorkflowResponse:
        return cls(
            aborted_workflow=result.aborted_workflow,
            aborted_step=result.aborted_step,
            explanation=result.explanation,
            stack=_stack(result.stack),
            resumed_workflow=result.resumed_workflow,
            resumed_step=result.resumed_step,
        )
