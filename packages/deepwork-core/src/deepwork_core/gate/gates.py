"""The quality gate: where a checkpoint's reviews are planned and judged (docs/quality-gate.md).

Start here to see how the gate decides. Two gates share one planner:

- `SelfReviewGate` writes the review instructions for a sub-agent and answers
  `GateSelfReviewRequested`.
- `ExternalGate` hands every review task to a background job (`deepwork_core.gate.background`)
  that asks a `Reviewer` (the port the server's adapters, one per reviewer CLI, implement)
  through `ReviewCalls` (`deepwork_core.gate.calls`: budget, retries, usage), waits at most
  `quality_gate.wait_seconds`, and answers `GatePassed`, `GateNeedsWork` or, while reviews
  still run, `GateReviewing`.

The planner adds the `.deepreview` rules matching the step's output files through the
`RuleSource` port (the server passes `deepwork_review`'s); a rule file that fails to load is not
skipped silently: every verdict carries a `quality_gate.deepreview_invalid` warning.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Protocol

from deepwork_core.base.config import (
    DEFAULT_MAX_PARALLEL,
    DEFAULT_REVIEW_DEPTH,
    DEFAULT_WAIT_SECONDS,
    QualityGateConfig,
    ReviewDepth,
)
from deepwork_core.base.errors import QualityGateError
from deepwork_core.evidence.hashes import sha256_file
from deepwork_core.evidence.verdicts import ReviewVerdict
from deepwork_core.gate.background import BackgroundReviews, JudgeFactory
from deepwork_core.gate.budget import log_self_reviews, with_self_review
from deepwork_core.gate.calls import ReviewCalls
from deepwork_core.gate.checkpoint import (
    Checkpoint,
    GateNeedsWork,
    GatePassed,
    GateReviewing,
    GateSelfReviewRequested,
    GateVerdict,
    ProgressReporter,
    has_own_reviews,
)
from deepwork_core.gate.costs.quotes import ReviewPrice
from deepwork_core.gate.process_review import feedback_scope
from deepwork_core.gate.quality import (
    combined_feedback,
    plan_review_tasks,
    self_review_feedback,
    write_self_review_file,
)
from deepwork_core.gate.review_queue import ReviewPayload, cancel_reviews
from deepwork_core.gate.reviewer import Reviewer as Reviewer
from deepwork_core.gate.tasks import QualityReviewTask
from deepwork_core.jobs.model import JobDefinition, Step
from deepwork_core.state.store.port import Store
from deepwork_core.state.store.tables.review_jobs import ReviewJobs

_NOTHING_TO_REVIEW = "No review applies to the submitted outputs."
#: At most this many reused verdicts are named in an answer's feedback.
_REUSED_LISTED = 5


class Gate(Protocol):
    """The quality gate as the engine sees it."""

    def consulted_for(self, steps: Sequence[Step]) -> bool:
        """True when a checkpoint of `steps` goes to the gate (else it advances at once)."""
        ...

    @property
    def external(self) -> bool:
        """True when a separate reviewer decides (attempts are counted and capped)."""
        ...

    def evaluate(self, checkpoint: Checkpoint, progress: ProgressReporter | None) -> GateVerdict:
        """Review `checkpoint`. Raises `QualityGateError` when no verdict could be had."""
        ...

    def tasks(self, checkpoint: Checkpoint) -> list[QualityReviewTask]:
        """The review tasks `evaluate` would run for `checkpoint` (a dry run lists them)."""
        ...

    def settled(self, checkpoint: Checkpoint) -> GatePassed | None:
        """`evaluate`'s verdict when no review applies and finding that out runs nothing (no
        git, no reviewer): the engine records it in the checkpoint's own transaction. None:
        call `evaluate`."""
        ...

    def price(
        self, checkpoint: Checkpoint, tasks: Sequence[QualityReviewTask]
    ) -> ReviewPrice | None:
        """What `tasks` are expected to cost (None: nothing DeepWork can meter)."""
        ...

    def start(
        self, project_root: Path, store: Store, load_job: Callable[[str], JobDefinition]
    ) -> None:
        """Serve `project_root`, whose open store is `store`: resume the review jobs a stopped
        server left there."""
        ...

    def close(self) -> None:
        """The server stops: stop what serving started (a later use starts it again)."""
        ...

    def cancel(self, project_root: Path, store: Store, session_ids: Sequence[str]) -> None:
        """The runs `session_ids` were aborted or went back: cancel their queued reviews and
        stop the running ones, so none is paid for after."""
        ...


class RuleSource(Protocol):
    """The `.deepreview` rules at the gate: their tasks for a checkpoint, and load problems."""

    def tasks(self, checkpoint: Checkpoint) -> list[QualityReviewTask]: ...

    def warnings(self, checkpoint: Checkpoint) -> tuple[str, ...]: ...

    def settled(self, checkpoint: Checkpoint) -> tuple[str, ...] | None:
        """`warnings` of `checkpoint` when `tasks` has none for it and finding that out needs
        no git (the rule files are known and still fresh); None: ask `tasks`."""
        ...


class _Planner:
    """What both gates share: which checkpoints they see and the tasks they plan."""

    def __init__(
        self, *, rules: RuleSource | None = None, review_depth: ReviewDepth = DEFAULT_REVIEW_DEPTH
    ) -> None:
        self.rules = rules
        self.review_depth = review_depth

    def consulted_for(self, steps: Sequence[Step]) -> bool:
        return has_own_reviews(steps) or (self.rules is not None and has_file_outputs(steps))

    def tasks(self, checkpoint: Checkpoint) -> list[QualityReviewTask]:
        """The review tasks of `checkpoint`, each at its depth (`quality_gate.review_depth`
        unless its review names one)."""
        tasks = plan_review_tasks(checkpoint, self.review_depth)
        if self.rules is not None:
            tasks += [_hashed(checkpoint.project_root, t) for t in self.rules.tasks(checkpoint)]
        return [t if t.depth else t.model_copy(update={"depth": self.review_depth}) for t in tasks]

    def settled(self, checkpoint: Checkpoint) -> GatePassed | None:
        if plan_review_tasks(checkpoint, self.review_depth):
            return None
        warnings: tuple[str, ...] = ()
        if self.rules is not None:
            found = self.rules.settled(checkpoint)  # one look at the watch, no git
            if found is None:
                return None
            steps = [checkpoint.job.step(step_id) for step_id in checkpoint.step_ids]
            warnings = found if has_file_outputs(steps) else ()
        return GatePassed(feedback=_NOTHING_TO_REVIEW, warnings=warnings)

    def price(
        self, checkpoint: Checkpoint, tasks: Sequence[QualityReviewTask]
    ) -> ReviewPrice | None:
        return None  # self-review runs on the agent's own tokens

    def warnings(self, checkpoint: Checkpoint) -> tuple[str, ...]:
        steps = [checkpoint.job.step(step_id) for step_id in checkpoint.step_ids]
        if self.rules is None or not has_file_outputs(steps):
            return ()
        return self.rules.warnings(checkpoint)


def _hashed(project_root: Path, task: QualityReviewTask) -> QualityReviewTask:
    """`task` with the SHA-256 of its rule files as they are now, as it is planned."""
    hashes = {path: sha256_file(project_root, path) for path in task.sources}
    return task.model_copy(update={"sources_sha256": hashes}) if hashes else task


def has_file_outputs(steps: Sequence[Step]) -> bool:
    return any(spec.type.is_file for step in steps for spec in step.outputs.values())


class SelfReviewGate(_Planner):
    """Self-review mode: the agent has a sub-agent review against a written instruction file."""

    external = False

    def start(
        self, project_root: Path, store: Store, load_job: Callable[[str], JobDefinition]
    ) -> None:
        return None  # nothing runs in the background

    def close(self) -> None:
        return None

    def cancel(self, project_root: Path, store: Store, session_ids: Sequence[str]) -> None:
        cancel_reviews(store, session_ids)  # jobs an external gate of another server queued

    def evaluate(self, checkpoint: Checkpoint, progress: ProgressReporter | None) -> GateVerdict:
        tasks, warnings = self.tasks(checkpoint), self.warnings(checkpoint)
        if not tasks:
            return GatePassed(feedback=_NOTHING_TO_REVIEW, warnings=warnings)
        path = write_self_review_file(checkpoint, tasks)
        log_self_reviews(checkpoint, tasks)
        relative = path.relative_to(checkpoint.project_root).as_posix()
        feedback = self_review_feedback(path)
        return GateSelfReviewRequested(feedback=feedback, review_file=relative, warnings=warnings)


class ExternalGate(_Planner):
    """External mode: each review task is a background job judged through `calls`; attempts
    are counted and capped. One `BackgroundReviews` (job rows and workers) per project folder."""

    external = True

    def __init__(
        self,
        calls: ReviewCalls,
        *,
        rules: RuleSource | None = None,
        review_depth: ReviewDepth = DEFAULT_REVIEW_DEPTH,
        wait_seconds: float = DEFAULT_WAIT_SECONDS,
        max_parallel: int = DEFAULT_MAX_PARALLEL,
        settings: QualityGateConfig | None = None,
        judge_for: JudgeFactory | None = None,
    ) -> None:
        """`settings`: what `calls` was built from, kept with each queued job; `judge_for`:
        the judge of a job another server queued under other settings."""
        super().__init__(rules=rules, review_depth=review_depth)
        self.calls = calls
        self.settings = settings
        self.judge_for = judge_for
        self.wait_seconds = wait_seconds
        self.max_parallel = max_parallel
        self._lock = threading.Lock()
        self._projects: dict[Path, BackgroundReviews] = {}

    def start(
        self, project_root: Path, store: Store, load_job: Callable[[str], JobDefinition]
    ) -> None:
        self.background(project_root, store, load_job)

    def close(self) -> None:
        """Stop the workers of every project; their running reviews are claimed again once
        their leases run out (docs/quality-gate.md), by the next server or by this gate when
        it is used again."""
        with self._lock:
            projects, self._projects = list(self._projects.values()), {}
        for reviews in projects:
            reviews.close()

    def cancel(self, project_root: Path, store: Store, session_ids: Sequence[str]) -> None:
        with self._lock:
            found = self._projects.get(project_root.resolve())
        if found is not None:
            found.cancel_sessions(session_ids)
        else:
            cancel_reviews(store, session_ids)

    def background(
        self, project_root: Path, store: Store, load_job: Callable[[str], JobDefinition]
    ) -> BackgroundReviews:
        """The project's background reviews on its queue in `store`, started (and its left-over
        jobs resumed) once."""
        root = project_root.resolve()
        with self._lock:
            found = self._projects.get(root)
            if found is None:
                jobs = ReviewJobs(store, ReviewPayload)
                found = BackgroundReviews(
                    root,
                    self.calls,
                    load_job,
                    self.max_parallel,
                    jobs,
                    settings=self.settings,
                    judge_for=self.judge_for,
                )
                self._projects[root] = found
        return found

    def price(
        self, checkpoint: Checkpoint, tasks: Sequence[QualityReviewTask]
    ) -> ReviewPrice | None:
        return self.calls.price(checkpoint, tasks)

    def evaluate(self, checkpoint: Checkpoint, progress: ProgressReporter | None) -> GateVerdict:
        tasks, warnings = self.tasks(checkpoint), self.warnings(checkpoint)
        if not tasks:
            return GatePassed(feedback=_NOTHING_TO_REVIEW, warnings=warnings)
        job = checkpoint.job
        reviews = self.background(checkpoint.project_root, checkpoint.store, lambda _name: job)
        price = self.calls.price(checkpoint, tasks)
        try:
            outcome = reviews.run(checkpoint, tasks, self.wait_seconds, progress, price.tasks)
        except QualityGateError as exc:  # stalled or out of budget: self-review is the way on
            calls = self.calls
            raise with_self_review(
                exc, checkpoint, tasks, calls.budget, calls.day.max_usd
            ) from None
        if isinstance(outcome, GateReviewing):
            expected = tuple(
                replace(r, expected=e) for r, e in zip(outcome.reviews, price.tasks, strict=True)
            )
            feedback = f"{outcome.feedback} Reviews {price.text}."
            return GateReviewing(
                feedback=feedback, reviews=expected, warnings=warnings, price=price
            )
        if all(verdict.passed for verdict in outcome):
            passed = "All reviews passed." + reused_note(outcome)
            return GatePassed(feedback=passed, reviews=outcome, warnings=warnings)
        feedback = combined_feedback(outcome) + reused_note(outcome)
        return GateNeedsWork(feedback=feedback, reviews=outcome, warnings=warnings)


def reused_note(verdicts: Sequence[ReviewVerdict]) -> str:
    """` 2 of 5 verdicts were reused, costing nothing: polish: output 'a' (a.md) reused from
    s1/polish, 2026-11-27T10:00:00Z; …` (empty when none was)."""
    reused = [v for v in verdicts if v.reused_from is not None]
    if not reused:
        return ""
    listed = "; ".join(
        f"{v.step_id}: {feedback_scope(v.review_run_each)}"
        f"{f' ({v.target_file})' if v.target_file else ''} {v.reused_from.text}"
        for v in reused[:_REUSED_LISTED]
        if v.reused_from is not None
    )
    more = f"; and {len(reused) - _REUSED_LISTED} more" if len(reused) > _REUSED_LISTED else ""
    return (
        f" {len(reused)} of {len(verdicts)} verdict(s) were reused from earlier reviews of the "
        f"same brief over the same bytes, costing nothing: {listed}{more}."
    )
