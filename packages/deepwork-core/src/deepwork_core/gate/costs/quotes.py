"""A price before the run, as the answers show it: each review task's expected tokens and USD
with its basis, and the total (docs/quality-gate.md, "A price before the run").

Its own module so that the gate's answers (`deepwork_core.gate.checkpoint`) carry it without
importing the estimator (`deepwork_core.gate.costs.estimates`), which reads checkpoints.
"""

from __future__ import annotations

from typing import Final

from pydantic import BaseModel, ConfigDict

from deepwork_core.evidence.verdicts import ReusedFrom

#: The basis of an estimate without history.
SIZE_BASIS: Final = "estimated from size"


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class TaskPrice(_Model):
    """What one review task is expected to cost."""

    label: str
    tokens: int
    #: None: the model has no price (set one in `quality_gate.prices`).
    usd: float | None
    #: `from 12 earlier reviews`, `estimated from size` or `reused from <session>/<step>, <when>`.
    basis: str
    reused_from: ReusedFrom | None = None


class ReviewPrice(_Model):
    """What the review tasks of a checkpoint are expected to cost, each and in total."""

    tasks: list[TaskPrice]
    tokens: int
    #: The sum of the tasks that have a price; `unpriced` counts the others.
    usd: float
    unpriced: int = 0
    basis: str

    @classmethod
    def of(cls, tasks: list[TaskPrice]) -> ReviewPrice:
        reused = sum(1 for t in tasks if t.reused_from is not None)
        sized = sum(1 for t in tasks if t.basis == SIZE_BASIS)
        history = len(tasks) - reused - sized
        parts = [f"{history} from earlier reviews"] if history else []
        parts += [f"{sized} {SIZE_BASIS}"] if sized else []
        parts += [f"{reused} reused (0 USD)"] if reused else []
        return cls(
            tasks=tasks,
            tokens=sum(t.tokens for t in tasks),
            usd=round(sum(t.usd or 0.0 for t in tasks), 6),
            unpriced=sum(1 for t in tasks if t.usd is None),
            basis=", ".join(parts) or "no review",
        )

    @property
    def text(self) -> str:
        """`expected 0.0420 USD, 12,345 tokens for 3 review(s) (2 from …)`."""
        unpriced = f", {self.unpriced} without a price" if self.unpriced else ""
        return (
            f"expected {self.usd:.4f} USD, {self.tokens:,} tokens for {len(self.tasks)} "
            f"review(s) ({self.basis}{unpriced})"
        )
