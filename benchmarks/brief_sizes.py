"""What a review costs before any file: the brief of a `light` and a `standard` review, in bytes.

For every review of every step of the standard jobs, the brief the external reviewer gets at
the start of stdin (docs/quality-gate.md, "Review depth") is built at both depths with every
output submitted; the figures are the sums over all of them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from deepwork_core.base.config import ReviewDepth
from deepwork_core.gate.briefs import build_review_brief
from deepwork_core.gate.checkpoint import Checkpoint
from deepwork_core.gate.quality import plan_review_tasks
from deepwork_core.jobs.discovery import STANDARD_JOBS_DIR
from deepwork_core.jobs.model import JobDefinition
from deepwork_core.jobs.parser import load_job
from deepwork_core.state.store.opening import open_store
from deepwork_core.state.store.port import Store


def brief_bytes(depth: ReviewDepth, root: Path) -> tuple[int, int]:
    """(total bytes, number of briefs) over every review of the standard jobs at `depth`."""
    total = count = 0
    with open_store(None, root) as store:  # a checkpoint names its run's store
        for job_dir in sorted(p for p in STANDARD_JOBS_DIR.iterdir() if p.is_dir()):
            job = load_job(job_dir)
            for step in job.steps:
                checkpoint = _checkpoint(job, step.id, root, store)
                for task in plan_review_tasks(checkpoint, depth):
                    total += len(build_review_brief(checkpoint, task).encode())
                    count += 1
    return total, count


def _checkpoint(job: JobDefinition, step_id: str, root: Path, store: Store) -> Checkpoint:
    step = job.step(step_id)
    outputs: dict[str, Any] = {
        name: [f"out/{name}.md"] if spec.type.value == "files" else f"out/{name}.md"
        for name, spec in step.outputs.items()
    }
    return Checkpoint(
        project_root=root,
        store=store,
        session_id="bench",
        job=job,
        step_ids=(step_id,),
        outputs=outputs,
        input_files=[],
        notes="The agent's notes on what it did.",
        work_summary="What the agent did.",
    )
