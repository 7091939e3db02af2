"""A review task: one reviewer run over some outputs of a step (docs/quality-gate.md).

Its own module so that the planner (`quality`), the briefs and the gate's ports all import it
without importing each other.
"""

from __future__ import annotations

import hashlib
import json

from pydantic import BaseModel, ConfigDict, Field

from deepwork_core.base.config import ReviewDepth
from deepwork_core.gate.process_review import task_scope


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class QualityReviewTask(_Model):
    """One reviewer run: a review of a step applied to some of its output files."""

    step_id: str
    run_each: str
    #: The one file reviewed, for `run_each: <files output>` (one task per file); else None.
    target_file: str | None = None
    #: Project-relative output paths under review.
    files: list[str] = Field(default_factory=list)
    #: Criterion name → the question the reviewer answers (review criteria + doc-spec criteria).
    criteria: dict[str, str]
    guidance: str | None = None
    #: How much the reviewer is told (docs/quality-gate.md, "Review depth"); None until the
    #: gate fills in `quality_gate.review_depth`.
    depth: ReviewDepth | None = None
    #: The review's `agent`: runner or platform name → reviewer persona (docs/quality-gate.md).
    agent: dict[str, str] | None = None
    #: What the review's `additional_context` asks for, one line each; in the brief at any depth.
    context: list[str] = Field(default_factory=list)
    #: The project files beside job.yml that define the review: a `.deepreview` rule's file and
    #: its instructions file (a receipt hashes them, docs/verify.md).
    sources: list[str] = Field(default_factory=list)
    #: The SHA-256 of each of `sources` when the gate planned the task (None: absent): the
    #: rules as the gate applied them, which the run's receipt compares with the definition
    #: at completion.
    sources_sha256: dict[str, str | None] = Field(default_factory=dict)

    @property
    def criteria_sha256(self) -> str:
        """The SHA-256 of the criteria as the reviewer is given them (names and questions)."""
        text = json.dumps(self.criteria, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
        return hashlib.sha256(text.encode("ascii")).hexdigest()

    @property
    def label(self) -> str:
        """A short human description, e.g. `draft: output 'report' (out/b.md)`."""
        scope = task_scope(self.run_each)
        where = f" ({self.target_file})" if self.target_file else ""
        return f"{self.step_id}: {scope}{where}"
