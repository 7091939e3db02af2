"""Each calibration case put to a reviewer as the gate puts a review (docs/quality-gate.md,
"Calibration"): the case's output written into a folder of its own, one review task over it
with the case's criteria at the chosen depth, the gate's brief and reply schema through the
`Reviewer` port, asked once more when a criterion was left unjudged. Its verdict per criterion
is compared with the right one. No verdict is reused and no store is read: the point is how
this reviewer judges now.
"""

from __future__ import annotations

import tempfile
import threading
from collections.abc import Callable, Sequence
from pathlib import Path

from deepwork_core.base.config import QualityGateConfig, ReviewDepth
from deepwork_core.base.errors import QualityGateError
from deepwork_core.base.identifiers import SessionId
from deepwork_core.evidence.verdicts import ReviewVerdict
from deepwork_core.gate.calibration.cases import CalibrationCase
from deepwork_core.gate.checkpoint import Checkpoint
from deepwork_core.gate.quality import build_review_message, unjudged_criteria, verdict_from_reply
from deepwork_core.gate.reviewer import ReviewBrief, Reviewer, ReviewerReply
from deepwork_core.gate.tasks import QualityReviewTask
from deepwork_core.jobs.model import JobDefinition
from deepwork_core.state.calibration.report import CaseResult, CriterionResult
from deepwork_core.state.store.port import NoStore

#: The job a case is reviewed as: one step with one file output.
_JOB = JobDefinition.model_validate(
    {
        "name": "calibration",
        "summary": "A reviewer judged against known verdicts",
        "steps": [
            {
                "id": "case",
                "name": "Case",
                "description": "A calibration case",
                "instructions_file": "case.md",
                "outputs": {
                    "output": {
                        "type": "file",
                        "description": "The output under review",
                        "required": True,
                    }
                },
                "reviews": [],
            }
        ],
    }
)
#: Reports each case when it is judged: (done, total, its result).
Progress = Callable[[int, int, CaseResult], None]


def judge_cases(
    reviewer: Reviewer,
    cases: Sequence[CalibrationCase],
    gate: QualityGateConfig,
    depth: ReviewDepth,
    progress: Progress | None = None,
) -> list[CaseResult]:
    """Every case's result, in order."""
    results = []
    for number, case in enumerate(cases, start=1):
        with tempfile.TemporaryDirectory(prefix="deepwork-calibration-") as folder:
            result = judge_case(reviewer, case, Path(folder), gate, depth)
        results.append(result)
        if progress is not None:
            progress(number, len(cases), result)
    return results


def case_task(case: CalibrationCase, depth: ReviewDepth) -> QualityReviewTask:
    return QualityReviewTask(
        step_id="case",
        run_each="step",
        files=[case.output.path],
        criteria={name: item.question for name, item in case.criteria.items()},
        depth=depth,
    )


def judge_case(
    reviewer: Reviewer,
    case: CalibrationCase,
    folder: Path,
    gate: QualityGateConfig,
    depth: ReviewDepth,
) -> CaseResult:
    """The result of `case`, its output written under `folder` (a folder of its own)."""
    root = folder.resolve()
    target = root / case.output.path
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(case.output.text, encoding="utf-8")
    task = case_task(case, depth)
    checkpoint = Checkpoint(
        project_root=root,
        store=NoStore(str(root)),
        session_id=SessionId("calibration"),
        job=_JOB,
        step_ids=("case",),
        outputs={"output": case.output.path},
        input_files=[],
    )
    spent: list[ReviewerReply] = []
    try:
        verdict = judge_alone(reviewer, checkpoint, task, gate, spent)
    except QualityGateError as exc:
        return _result(case, spent, {}, error=f"{exc.code}: {exc.message}")
    got = {item.criterion: "pass" if item.passed else "fail" for item in verdict.criteria_results}
    return _result(case, spent, got)


def judge_alone(
    reviewer: Reviewer,
    checkpoint: Checkpoint,
    task: QualityReviewTask,
    gate: QualityGateConfig,
    spent: list[ReviewerReply],
) -> ReviewVerdict:
    """The task's verdict from `reviewer`, as the gate would ask it but with no store: no
    reuse, no budget, no events; one call, asked once more when a criterion was left unjudged.
    Each call's reply is appended to `spent` (its usage counts even when it failed). Raises the
    `QualityGateError` of a call that gave no verdict."""
    depth = task.depth or gate.review_depth
    brief = ReviewBrief(
        task=task,
        message=build_review_message(checkpoint, task),
        project_root=checkpoint.project_root,
        session_id=checkpoint.session_id,
        model=gate.models.for_depth(depth),
        timeout=float(gate.timeout_seconds),
        stall_timeout=gate.stall_timeout,
    )
    reply = _ask(reviewer, brief, spent)
    if unjudged_criteria(task, reply.reply):
        reply = _ask(reviewer, brief, spent)
    return verdict_from_reply(task, reply.reply)


def _ask(reviewer: Reviewer, brief: ReviewBrief, spent: list[ReviewerReply]) -> ReviewerReply:
    reply = reviewer.review(brief, threading.Event())
    spent.append(reply)
    if reply.error is not None:
        raise reply.error.error()
    return reply


def _result(
    case: CalibrationCase,
    spent: Sequence[ReviewerReply],
    got: dict[str, str],
    error: str | None = None,
) -> CaseResult:
    criteria = [
        CriterionResult.model_validate(
            {"criterion": name, "expected": item.expected, "got": got.get(name)}
        )
        for name, item in case.criteria.items()
    ]
    return CaseResult(
        case=case.id,
        kind=case.kind,
        source=case.source,
        criteria=criteria,
        error=error,
        cost_usd=round(sum(r.usage.cost_usd or 0.0 for r in spent), 6),
        tokens=sum(r.usage.tokens for r in spent),
        unpriced_calls=sum(1 for r in spent if r.usage.cost_usd is None),
    )
