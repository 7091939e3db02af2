"""`deepwork verify --rereview`: each receipt's reviews judged again, by a reviewer the agent
does not control, against the committed bytes; a receipt whose reviews all pass is countersigned
with the CI key (docs/verify.md, "Re-review").

Only a receipt whose every other check holds is judged again: its outputs are the bytes it
hashed and its job definition is the one the run used, so the review tasks planned again here,
from the job at HEAD and the receipt's outputs, are the gate's tasks over the same bytes. Each
review the receipt records must be one of them, with the same criteria
(`verify.rereview_unmatched`). Every task runs through the `Reviewer` port, one call at a time,
asked once more when it left a criterion unjudged, with the review settings of the base ref's
`.deepwork/config.yml`. No verdict kept in a store is reused and no store is opened: the point
is a judge the agent did not choose. With a verdict cache (`receipts.verdict_cache`), a task
whose reuse key CI judged before, in an entry signed by a CI key the base ref trusts, takes that
verdict instead of a call: it was judged by CI too, over the same bytes.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from deepwork_core.base.config import QualityGateConfig
from deepwork_core.base.error_codes import ErrorCode
from deepwork_core.base.errors import DeepWorkError, QualityGateError
from deepwork_core.base.fsutil import atomic_write_text
from deepwork_core.base.identifiers import SessionId
from deepwork_core.base.layout import CI_KEYS_DIR
from deepwork_core.evidence.verdicts import ReviewVerdict
from deepwork_core.gate.calibration.judging import judge_alone
from deepwork_core.gate.checkpoint import Checkpoint, ResolvedInput
from deepwork_core.gate.gates import RuleSource
from deepwork_core.gate.quality import (
    plan_review_tasks,
)
from deepwork_core.gate.reuse import reuse_key
from deepwork_core.gate.reviewer import Reviewer, ReviewerReply
from deepwork_core.gate.tasks import QualityReviewTask
from deepwork_core.jobs.discovery import JobCatalog
from deepwork_core.jobs.model import JobDefinition, Step
from deepwork_core.jobs.steps.parts import OutputType
from deepwork_core.receipts.checks import countersign_fields, trusted_key
from deepwork_core.receipts.codes import ReceiptCode
from deepwork_core.receipts.findings import Finding
from deepwork_core.receipts.keys import COUNTERSIGN_LABEL, CiKey
from deepwork_core.receipts.model import Countersignature, Receipt, ReceiptStep, RereviewEntry
from deepwork_core.receipts.repository import Repository
from deepwork_core.receipts.verdict_cache import CacheEntry, VerdictCache, Wanted
from deepwork_core.state.sessions import OutputValue
from deepwork_core.state.store.port import NoStore


@dataclass
class Rereview:
    """What `--rereview` judges with and signs with: the reviewer CLI, the CI key, the
    `.deepreview` rules (None: not applied) and the clock of `signed_at`."""

    reviewer: Reviewer
    key: CiKey
    rules: RuleSource | None = None
    clock: Callable[[], datetime] = field(default=lambda: datetime.now(UTC))
    #: Reviewer calls made and what they cost (as the reviewer reported it), over all receipts.
    calls: int = 0
    cost_usd: float = 0.0
    #: Set once the reviewer CLI is not installed: later receipts are not tried again.
    missing: Finding | None = None
    #: CI's kept verdicts (`--verdict-cache`); None: every task is judged.
    cache: VerdictCache | None = None
    #: One line per task that took a kept verdict: `<task>: reused from <session>/<step>, <when>`.
    reused: list[str] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class Rejudged:
    """One receipt judged again: its findings, and the countersigned receipt when none."""

    findings: list[Finding]
    countersigned: Receipt | None


def rereview_receipt(
    rereview: Rereview, repo: Repository, relative: str, receipt: Receipt, gate: QualityGateConfig
) -> Rejudged:
    """Judge every review of the receipt at `relative` again; countersign it when all pass."""
    refused = _key_refused(rereview.key, repo, relative)
    if refused is not None:
        return Rejudged([refused], None)
    if rereview.missing is not None:
        return Rejudged([rereview.missing.model_copy(update={"receipt": relative})], None)
    if rereview.cache is not None:
        rereview.cache.mode = gate.reuse  # the base ref's, as every review setting here
    try:
        job = JobCatalog.for_project(repo.root).get(receipt.body.job).definition
    except DeepWorkError as exc:
        return Rejudged([_finding(ReceiptCode.VERIFY_REREVIEW_ERROR, relative, exc.message)], None)
    findings: list[Finding] = []
    entries: list[RereviewEntry] = []
    for step in receipt.body.steps:
        if step.step not in job.steps_by_id:
            continue
        checkpoint = _checkpoint(repo.root, job, receipt, step)
        tasks = _tasks(checkpoint, rereview.rules, gate)
        findings += _unmatched(relative, step, tasks)
        for task in tasks:
            wanted = _wanted(rereview, checkpoint, task, gate)
            kept = _kept(rereview, repo, wanted, task, relative)
            if kept is not None:
                findings += _failed(relative, kept.verdict)
                entries.append(_entry(rereview, task, gate, kept.verdict, kept.origin.text))
                continue
            judged = _judge(rereview, checkpoint, task, gate, relative)
            if isinstance(judged, Finding):
                findings.append(judged)
                if judged.code is ReceiptCode.VERIFY_RUNNER_MISSING:
                    return Rejudged(findings, None)
                continue
            _keep(rereview, wanted, judged, receipt, relative)
            findings += _failed(relative, judged)
            entries.append(_entry(rereview, task, gate, judged))
    if findings:
        return Rejudged(findings, None)
    return Rejudged([], countersign(rereview, receipt, entries))


def countersign(rereview: Rereview, receipt: Receipt, entries: list[RereviewEntry]) -> Receipt:
    """`receipt` with the CI key's countersignature over `entries` (replacing an earlier one by
    the same key)."""
    unsigned = Countersignature(
        key=rereview.key.name,
        signed_at=rereview.clock().astimezone(UTC).isoformat(),
        runner=rereview.reviewer.name,
        reviews=entries,
        ed25519="",
    )
    signed = rereview.key.sign(countersign_fields(receipt, unsigned), COUNTERSIGN_LABEL)
    kept = [c for c in receipt.countersignatures if c.key != rereview.key.name]
    sign = unsigned.model_copy(update={"ed25519": signed})
    return receipt.model_copy(update={"countersignatures": [*kept, sign]})


def write_receipt(root: Path, relative: str, receipt: Receipt) -> None:
    """Write the countersigned receipt over the one it was read from."""
    atomic_write_text(root / relative, receipt.text().decode("ascii"))


def _key_refused(key: CiKey, repo: Repository, relative: str) -> Finding | None:
    listed = trusted_key(repo, CI_KEYS_DIR, key.name)
    if listed == key.public_key():
        return None
    if listed is ReceiptCode.VERIFY_KEY_ADDED_IN_CHANGE:
        why = "is listed only by this change; a key counts once merged into the base branch"
    else:
        why = "is not listed on the base ref (or is listed with another public key)"
    return _finding(
        ReceiptCode.VERIFY_CI_KEY_UNTRUSTED,
        relative,
        f"the CI key {key.name!r} of DEEPWORK_CI_KEY {why}: commit "
        f"{CI_KEYS_DIR}/{key.name}.pub to the base branch; nothing was countersigned",
    )


def _checkpoint(root: Path, job: JobDefinition, receipt: Receipt, step: ReceiptStep) -> Checkpoint:
    """The step's checkpoint again: its outputs as the receipt holds them, its file inputs as
    the receipt's earlier steps made them."""
    definition = job.step(step.step)
    return Checkpoint(
        project_root=root,
        store=NoStore(str(root)),
        session_id=SessionId(receipt.body.session_id),
        job=job,
        step_ids=(step.step,),
        outputs=_outputs(definition, step),
        input_files=_inputs(definition, receipt),
    )


def _outputs(definition: Step, step: ReceiptStep) -> dict[str, OutputValue]:
    """The step's file outputs as `finished_step` gave them: one path, or a list for `files`
    (and for a `file_path` output that gave several)."""
    paths: dict[str, list[str]] = {}
    for entry in step.outputs:
        if entry.output in definition.outputs:
            paths.setdefault(entry.output, []).append(entry.path)
    return {
        name: listed[0]
        if len(listed) == 1 and definition.outputs[name].type is not OutputType.FILES
        else listed
        for name, listed in paths.items()
    }


def _inputs(definition: Step, receipt: Receipt) -> list[ResolvedInput]:
    made: dict[tuple[str, str], list[str]] = {}
    for earlier in receipt.body.steps:
        for output in earlier.outputs:
            made.setdefault((earlier.step, output.output), []).append(output.path)
    return [
        ResolvedInput(definition.id, item.file, None, item.from_step, made[key])
        for item in definition.inputs
        if item.file is not None and item.from_step is not None
        for key in [(item.from_step, item.file)]
        if key in made
    ]


def _tasks(
    checkpoint: Checkpoint, rules: RuleSource | None, gate: QualityGateConfig
) -> list[QualityReviewTask]:
    """The gate's tasks of the checkpoint, each at its depth (as `gates._Planner.tasks`)."""
    tasks = plan_review_tasks(checkpoint, gate.review_depth)
    if rules is not None and gate.deepreview_rules:
        tasks += rules.tasks(checkpoint)
    return [t if t.depth else t.model_copy(update={"depth": gate.review_depth}) for t in tasks]


def _unmatched(relative: str, step: ReceiptStep, tasks: list[QualityReviewTask]) -> list[Finding]:
    """A finding for each review the receipt records that is not a task planned again."""
    planned = {(t.run_each, t.target_file, t.criteria_sha256) for t in tasks}
    return [
        _finding(
            ReceiptCode.VERIFY_REREVIEW_UNMATCHED,
            relative,
            f"review {entry.review!r}{_of(entry.target_file)} of the receipt is not a review "
            "the job at HEAD plans for these outputs, with these criteria",
            step=step.step,
        )
        for entry in step.passed.reviews
        if entry.criteria_sha256 is not None
        and (entry.review, entry.target_file, entry.criteria_sha256) not in planned
    ]


def _judge(
    rereview: Rereview,
    checkpoint: Checkpoint,
    task: QualityReviewTask,
    gate: QualityGateConfig,
    relative: str,
) -> ReviewVerdict | Finding:
    """The task's verdict from one call (asked again once when a criterion was left
    unjudged), or the finding of a call that gave none."""
    spent: list[ReviewerReply] = []
    try:
        return judge_alone(rereview.reviewer, checkpoint, task, gate, spent)
    except QualityGateError as exc:
        missing = exc.code == ErrorCode.QUALITY_GATE_NOT_INSTALLED
        code = ReceiptCode.VERIFY_RUNNER_MISSING if missing else ReceiptCode.VERIFY_REREVIEW_ERROR
        found = _finding(code, relative, f"{task.label}: {exc.code}: {exc.message}", task.step_id)
        if missing:
            rereview.missing = found
        return found
    finally:
        rereview.calls += len(spent)
        rereview.cost_usd += sum(reply.usage.cost_usd or 0.0 for reply in spent)


def _wanted(
    rereview: Rereview, checkpoint: Checkpoint, task: QualityReviewTask, gate: QualityGateConfig
) -> Wanted:
    model = gate.models.for_depth(task.depth or gate.review_depth)
    runner = rereview.reviewer.name
    return Wanted(
        key=reuse_key(checkpoint, task, runner, model),
        runner=runner,
        model=model,
        criteria_sha256=task.criteria_sha256,
        criteria=frozenset(task.criteria),
    )


def _kept(
    rereview: Rereview, repo: Repository, wanted: Wanted, task: QualityReviewTask, relative: str
) -> CacheEntry | None:
    """The cache's trusted entry for the task, or None (judge it)."""
    if rereview.cache is None:
        return None
    label = f"{relative}: {task.label}"
    entry = rereview.cache.lookup(repo, wanted, label)
    if entry is not None:
        rereview.reused.append(f"{label}: {entry.origin.text}")
    return entry


def _keep(
    rereview: Rereview, wanted: Wanted, verdict: ReviewVerdict, receipt: Receipt, relative: str
) -> None:
    if rereview.cache is None or {r.criterion for r in verdict.criteria_results} != wanted.criteria:
        return  # a verdict that left a criterion unjudged is not kept
    entry = CacheEntry(
        key=wanted.key,
        verdict=verdict.model_copy(update={"reused_from": None}),
        runner=wanted.runner,
        model=wanted.model,
        criteria_sha256=wanted.criteria_sha256,
        judged_at=rereview.clock().astimezone(UTC),
        receipt=relative,
        session_id=receipt.body.session_id,
        step_id=verdict.step_id,
        signer=rereview.key.name,
    )
    rereview.cache.keep(rereview.key, entry)


def _failed(relative: str, verdict: ReviewVerdict) -> list[Finding]:
    return [
        _finding(
            ReceiptCode.VERIFY_REREVIEW_FAILED,
            relative,
            f"re-review of {verdict.review_run_each!r}{_of(verdict.target_file)} failed "
            f"criterion {result.criterion!r}: {result.feedback}",
            step=verdict.step_id,
        )
        for result in verdict.criteria_results
        if not result.passed
    ]


def _entry(
    rereview: Rereview,
    task: QualityReviewTask,
    gate: QualityGateConfig,
    verdict: ReviewVerdict,
    reused_from: str | None = None,
) -> RereviewEntry:
    return RereviewEntry(
        reused_from=reused_from,
        step=task.step_id,
        review=task.run_each,
        target_file=task.target_file,
        runner=rereview.reviewer.name,
        model=gate.models.for_depth(task.depth or gate.review_depth),
        criteria_sha256=task.criteria_sha256,
        verdict="passed" if verdict.passed else "failed",
    )


def _of(target: str | None) -> str:
    return f" ({target})" if target else ""


def _finding(code: ReceiptCode, relative: str, message: str, step: str | None = None) -> Finding:
    return Finding(code=code, file=relative, receipt=relative, step=step, message=message)
