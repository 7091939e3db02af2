"""The workflow step active in a project, as the hooks need it.

The session store (`deepwork_core.sessions`) is the one reader of the workflow state; it imports
pydantic, which costs more than the whole no-op hook may. So hooks first look at the stack file
with plain `json` (`stack_is_empty`) and open the store only when a workflow may be running.
The probe depends on exactly two facts of the store's format — the stack lives in
`<project>/.deepwork/tmp/stack.json` and lists active ids under `session_ids` — and a test
checks them against `deepwork_core.sessions`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from deepwork_core.discovery import LoadedJob
    from deepwork_core.models import Step
    from deepwork_core.sessions import Session

#: `deepwork_core.runtime_dir.TMP_DIR / deepwork_core.sessions.STACK_FILE`.
STACK_PATH = Path(".deepwork/tmp/stack.json")


def stack_is_empty(project_root: Path) -> bool:
    """True when the project certainly has no active workflow.

    An unreadable or odd stack file is not "empty": the store then reads it and reports the
    problem properly.
    """
    try:
        data = json.loads((project_root / STACK_PATH).read_text(encoding="utf-8"))
    except FileNotFoundError:
        return True
    except (OSError, ValueError):
        return False
    ids = data.get("session_ids") if isinstance(data, dict) else None
    return isinstance(ids, list) and not ids


@dataclass(frozen=True, slots=True)
class ActiveWorkflow:
    """The top of the project's workflow stack and everything it runs on."""

    stack: list[Session]
    job: LoadedJob
    steps: list[Step]

    @property
    def session(self) -> Session:
        return self.stack[-1]


def load_stack(project_root: Path) -> list[Session]:
    """The active sessions (bottom to top); [] without importing pydantic when there are none."""
    if stack_is_empty(project_root):
        return []
    from deepwork_core.sessions import SessionStore

    return SessionStore(project_root).stack()


def load_active_workflow(
    project_root: Path, additional_jobs_folders: str | None
) -> ActiveWorkflow | None:
    """The workflow on top of the stack with its job and current steps, or None.

    Raises the store's and discovery's errors (`session.state_corrupt`, `job.invalid`, …).
    """
    stack = load_stack(project_root)
    if not stack:
        return None
    from deepwork_core.discovery import JobCatalog, parse_folder_list

    catalog = JobCatalog.for_project(project_root, parse_folder_list(additional_jobs_folders))
    job = catalog.get(stack[-1].job_name)
    steps = [job.definition.step(step_id) for step_id in stack[-1].current_step_ids]
    return ActiveWorkflow(stack, job, steps)
