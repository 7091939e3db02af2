"""Review tasks of the 0.10 format's constructs (docs/job-format.md, docs/quality-gate.md).

- A review without criteria (from a 0.10-format job) is judged on its instructions: one criterion.
- `strategy` decides whether a multi-file output is reviewed file by file or as one set.
- `string` outputs are text, not files: the reviewer reads them in the task's guidance.
- `process_requirements` are judged against the agent's `work_summary`, one task per step.
- `.deepreview` rules at the gate run as tasks whose `run_each` starts with `RULE_PREFIX`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from deepwork_core.gate.checkpoint import Checkpoint
from deepwork_core.jobs.model import Step
from deepwork_core.jobs.steps.parts import OutputType, Review, ReviewStrategy
from deepwork_core.state.sessions import OutputValue

#: `run_each` of a task judging a step's process requirements.
PROCESS_REQUIREMENTS = "process_requirements"
#: `run_each` prefix of a task from a `.deepreview` rule (`.deepreview:<rule>`).
RULE_PREFIX = ".deepreview:"
#: Text outputs longer than this are cut in a reviewer's guidance.
MAX_TEXT_CHARS = 20_000


def review_criteria(review: Review) -> tuple[dict[str, str], str | None]:
    """The criteria and guidance a reviewer gets for `review`."""
    if review.quality_criteria:
        return dict(review.quality_criteria), review.additional_review_guidance
    instructions = (review.additional_review_guidance or "").strip()
    return {"Review instructions": instructions or "The output serves the step's goal."}, None


def reviews_each_file(kind: OutputType, strategy: ReviewStrategy | None) -> bool:
    """True when each file of an output of `kind` gets a review task of its own."""
    if strategy is not None:
        return strategy is ReviewStrategy.INDIVIDUAL
    return kind is OutputType.FILES


def text_outputs(step: Step, outputs: Mapping[str, OutputValue]) -> dict[str, str]:
    """The submitted `string` outputs of `step` (name -> text)."""
    return {
        name: value
        for name, value in outputs.items()
        if isinstance(value, str)
        and name in step.outputs
        and step.outputs[name].type is OutputType.STRING
    }


def with_text_outputs(guidance: str | None, texts: Mapping[str, str]) -> str | None:
    """`guidance` followed by each text output under review."""
    if not texts:
        return guidance
    parts = [guidance.strip()] if guidance and guidance.strip() else []
    for name, text in texts.items():
        shown = text if len(text) <= MAX_TEXT_CHARS else text[:MAX_TEXT_CHARS] + "\n[… cut here]"
        parts.append(f"Output `{name}` (text, under review):\n\n{shown}")
    return "\n\n".join(parts)


def task_scope(run_each: str) -> str:
    """What a task reviews, in words."""
    if run_each == "step":
        return "all outputs"
    if run_each == PROCESS_REQUIREMENTS:
        return "the process requirements"
    if run_each.startswith(RULE_PREFIX):
        return f"rule '{run_each.removeprefix(RULE_PREFIX)}'"
    return f"output '{run_each}'"


def feedback_scope(run_each: str) -> str:
    """What a failed review covered, for `needs_work` feedback: an output's bare name, or words."""
    special = run_each in ("step", PROCESS_REQUIREMENTS) or run_each.startswith(RULE_PREFIX)
    return task_scope(run_each) if special else run_each


def process_requirement_parts(checkpoint: Checkpoint, step: Step) -> list[dict[str, Any]]:
    """The fields of the task judging `step`'s process requirements (none if it has none)."""
    if not step.process_requirements:
        return []
    files = [
        path
        for name, value in checkpoint.outputs.items()
        if name in step.outputs and step.outputs[name].type.is_file
        for path in ([value] if isinstance(value, str) else value)
    ]
    summary = (checkpoint.work_summary or "").strip() or (
        "(No work summary was given: judge from the outputs, and fail a requirement the outputs "
        "cannot show was met.)"
    )
    return [
        {
            "step_id": step.id,
            "run_each": PROCESS_REQUIREMENTS,
            "files": files,
            "criteria": dict(step.process_requirements),
            "guidance": "These requirements are about how the work was done. The agent's work "
            f"summary:\n\n{summary}",
        }
    ]
