"""A price before the run: the expected tokens and USD of each review task, and their basis
(docs/quality-gate.md, "A price before the run").

For each task, in this order:

1. a kept verdict it would reuse (`deepwork_core.gate.reuse`): 0 tokens, 0 USD, "reused from
   <session>/<step>, <when>";
2. this project's history of the same rule (`<job>/<step>/<run_each>`), depth and model: the
   median tokens and USD of its last 20 tasks, "from N earlier reviews";
3. else the size of what the reviewer is sent: input tokens at about 4 bytes a token (the
   message, plus the files it only lists, which the reviewer reads), output tokens for a
   verdict on each criterion, priced at the model's `quality_gate.prices`, "estimated from
   size". A model without a price has tokens but no USD.

The total sums the tasks; its basis counts how many tasks rest on each.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from deepwork_core.base.config import DEFAULT_REVIEW_DEPTH, ReviewModels
from deepwork_core.base.errors import DeepWorkError
from deepwork_core.base.identifiers import resolve_inside
from deepwork_core.gate.checkpoint import Checkpoint
from deepwork_core.gate.costs.prices import Prices, cost_at
from deepwork_core.gate.costs.quotes import SIZE_BASIS, ReviewPrice, TaskPrice
from deepwork_core.gate.quality import (
    DEFAULT_MAX_INLINE_FILES,
    MAX_INLINE_BYTES,
    build_review_message,
    task_input_paths,
)
from deepwork_core.gate.reuse import VerdictReuse, reuse_key
from deepwork_core.gate.tasks import QualityReviewTask
from deepwork_core.state.store.tables.spend_rows import TaskSpend, recent_tasks
from deepwork_core.state.usage.pair import RequestUsage

#: How many earlier tasks the median is taken over.
HISTORY: Final = 20
#: About this many bytes of text make one token.
BYTES_PER_TOKEN: Final = 4
#: Output tokens of a verdict: a summary, and a line of feedback per criterion.
OUTPUT_TOKENS_BASE: Final = 150
OUTPUT_TOKENS_PER_CRITERION: Final = 60
#: A listed file the reviewer reads itself counts at most this much.
MAX_LISTED_BYTES: Final = 4 * MAX_INLINE_BYTES


def rule_of(checkpoint: Checkpoint, task: QualityReviewTask) -> str:
    """The review a task belongs to, as history groups it: `<job>/<step>/<run_each>`."""
    return f"{checkpoint.job.name}/{task.step_id}/{task.run_each}"


@dataclass(eq=False)
class Estimator:
    """The expected cost of review tasks for one runner (see the module)."""

    runner: str
    models: ReviewModels
    prices: Prices
    reuse: VerdictReuse
    max_inline_files: int = DEFAULT_MAX_INLINE_FILES

    def review(self, checkpoint: Checkpoint, tasks: Sequence[QualityReviewTask]) -> ReviewPrice:
        return ReviewPrice.of([self.task(checkpoint, task) for task in tasks])

    def task(self, checkpoint: Checkpoint, task: QualityReviewTask) -> TaskPrice:
        model = self.models.for_depth(task.depth or DEFAULT_REVIEW_DEPTH)
        store = checkpoint.store
        found = self.reuse.lookup(store, reuse_key(checkpoint, task, self.runner, model))
        if found is not None:
            return TaskPrice(
                label=task.label,
                tokens=0,
                usd=0.0,
                basis=found.origin.text,
                reused_from=found.origin,
            )
        depth = task.depth or DEFAULT_REVIEW_DEPTH
        history = recent_tasks(store, rule_of(checkpoint, task), depth, model or "", HISTORY)
        if history:
            return self._from_history(task, history, model)
        return self._from_size(checkpoint, task, model)

    def _from_history(
        self, task: QualityReviewTask, history: list[TaskSpend], model: str | None
    ) -> TaskPrice:
        usd: float | None = round(statistics.median(h.usd for h in history), 6)
        priced = self.runner == "claude" or self.prices.of(
            self.prices.model_for(self.runner, model)
        )
        return TaskPrice(
            label=task.label,
            tokens=round(statistics.median(h.tokens for h in history)),
            usd=usd if priced else None,
            basis=f"from {len(history)} earlier review{'s' if len(history) != 1 else ''}",
        )

    def _from_size(
        self, checkpoint: Checkpoint, task: QualityReviewTask, model: str | None
    ) -> TaskPrice:
        sent = len(build_review_message(checkpoint, task, self.max_inline_files).encode())
        sent += _listed_bytes(checkpoint, task, self.max_inline_files)
        usage = RequestUsage(
            input_tokens=-(-sent // BYTES_PER_TOKEN),
            output_tokens=OUTPUT_TOKENS_BASE + OUTPUT_TOKENS_PER_CRITERION * len(task.criteria),
        )
        price = self.prices.of(self.prices.model_for(self.runner, model))
        return TaskPrice(
            label=task.label,
            tokens=usage.tokens,
            usd=cost_at(price, usage) if price is not None else None,
            basis=SIZE_BASIS,
        )


def _listed_bytes(checkpoint: Checkpoint, task: QualityReviewTask, max_inline: int) -> int:
    """The bytes of the files a message lists instead of inlining (the reviewer reads them)."""
    root = checkpoint.project_root
    total = 0
    for paths in (task_input_paths(checkpoint, task), list(task.files)):
        for path in paths:
            size = _size(root, path)
            if len(paths) > max_inline or size > MAX_INLINE_BYTES:
                total += min(size, MAX_LISTED_BYTES)
    return total


def _size(root: Path, path: str) -> int:
    try:
        return resolve_inside(root, path).stat().st_size
    except (OSError, DeepWorkError):
        return 0
