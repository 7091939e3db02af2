"""Verdicts reused by content (docs/quality-gate.md, "Verdicts reused").

A review task's verdict is kept in the store (`state.store.tables.verdict_rows`) under a
key of what the reviewer judged: the brief (criteria, guidance, the persona this runner gets,
the additional context, the depth), the runner and the model, and the SHA-256 of every file the
reviewer saw: the outputs under review, the inputs from earlier steps its depth shows, and the
undeclared changes it was told to read. The author's notes, the attempt and the names of the
job and step are not part of it: a `needs_work` round that changed one file, another run or
another checkout of a shared store finds the verdicts of the tasks whose files did not change.

`quality_gate.reuse` says which kept verdicts a task takes: `passes` (the default: a passed
verdict only; a failed task is always judged again), `all`, or `off` (none are taken, none are
kept). A verdict whose reviewer left a criterion unjudged is never kept. A changed byte in any
file the reviewer saw changes the key; a store the project does not share holds none of its
verdicts.
"""

from __future__ import annotations

import hashlib
import json
from typing import Final

from deepwork_core.base.config import DEFAULT_REUSE, ReuseMode
from deepwork_core.evidence.hashes import sha256_file
from deepwork_core.evidence.verdicts import ReviewVerdict
from deepwork_core.gate.briefs import ANSWER_FORMAT, LIGHT_ROLE, THOROUGH_NOTE, task_input_paths
from deepwork_core.gate.checkpoint import Checkpoint
from deepwork_core.gate.quality import REVIEWER_SYSTEM_PROMPT
from deepwork_core.gate.tasks import QualityReviewTask
from deepwork_core.state.store.port import Store
from deepwork_core.state.store.tables.verdict_rows import StoredVerdict, find_verdict, keep_verdict

#: Changes when what a reviewer is told around the brief changes, so older verdicts stop
#: matching: the fixed texts every brief carries are part of the key.
_FRAME: Final = hashlib.sha256(
    "\0".join(
        ["reuse/1", REVIEWER_SYSTEM_PROMPT, ANSWER_FORMAT, LIGHT_ROLE, THOROUGH_NOTE]
    ).encode()
).hexdigest()
_MISSING: Final = "missing"


def seen_files(checkpoint: Checkpoint, task: QualityReviewTask) -> dict[str, list[list[str]]]:
    """Every file the reviewer of `task` sees, by role, each `[path, sha256]`."""
    root = checkpoint.project_root

    def hashed(paths: list[str]) -> list[list[str]]:
        return [[path, sha256_file(root, path) or _MISSING] for path in paths]

    return {
        "outputs": hashed(list(task.files)),
        "inputs": hashed(task_input_paths(checkpoint, task)),
        "undeclared": hashed(list(checkpoint.undeclared_changes)),
    }


def reuse_key(
    checkpoint: Checkpoint, task: QualityReviewTask, runner: str, model: str | None
) -> str:
    """The key of what a reviewer of `task` judges (see the module)."""
    persona = (task.agent or {}).get(runner)
    material = {
        "frame": _FRAME,
        "criteria": [[name, question] for name, question in task.criteria.items()],
        "guidance": task.guidance,
        "persona": persona,
        "context": list(task.context),
        "depth": task.depth,
        "runner": runner,
        "model": model,
        "files": seen_files(checkpoint, task),
    }
    text = json.dumps(material, sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(text.encode()).hexdigest()


class VerdictReuse:
    """The reuse policy of `quality_gate.reuse` over the store's kept verdicts."""

    def __init__(self, mode: ReuseMode = DEFAULT_REUSE) -> None:
        self.mode = mode

    def lookup(self, store: Store, key: str) -> StoredVerdict | None:
        """The kept verdict a task with `key` may take, or None (see the module)."""
        if self.mode == "off":
            return None
        found = find_verdict(store, key)
        if found is None or (self.mode == "passes" and not found.verdict.passed):
            return None
        return found

    def reused(self, found: StoredVerdict, task: QualityReviewTask) -> ReviewVerdict:
        """The kept verdict as this task's, saying where it was judged."""
        return found.verdict.model_copy(
            update={
                "step_id": task.step_id,
                "review_run_each": task.run_each,
                "target_file": task.target_file,
                "reused_from": found.origin,
            }
        )

    def keep(
        self,
        store: Store,
        key: str,
        verdict: ReviewVerdict,
        *,
        session_id: str,
        cost_usd: float | None,
    ) -> None:
        """Keep a verdict a reviewer just gave (nothing under `reuse: off`)."""
        if self.mode != "off":
            keep_verdict(store, key, verdict, session_id=session_id, cost_usd=cost_usd)
