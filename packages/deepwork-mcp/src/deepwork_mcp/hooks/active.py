"""The workflow step active in a project, as the hooks need it.

The session store (`deepwork_core.state.sessions`) and job discovery are the readers of the workflow
state and of jobs; they import pydantic and YAML, which cost several times the whole no-op hook.
So hooks first probe with plain `json` and text reads, and open the store only when a workflow
may be running (`stack_is_empty`) and its job may have hooks for the event (`may_have_job_hooks`).
`load_stack` is then the hook process's composition root for the store: it opens the project's
store for the one read (never creating one) and closes it.
The probes are conservative — when in doubt they say "maybe" and the store decides — and read
the store's file names from `deepwork_core.base.layout`, which imports only the standard library.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from deepwork_core.base import layout
from deepwork_core.base.error_codes import ErrorCode
from deepwork_core.base.errors import FileReadError
from deepwork_core.base.fsutil import loads_json, read_bytes_file, read_text_file

if TYPE_CHECKING:
    from deepwork_core.jobs.discovery import LoadedJob
    from deepwork_core.jobs.model import Step
    from deepwork_core.state.sessions import Session

#: The stack file: it exists exactly while a workflow is active.
STACK_PATH = Path(layout.STACK_PATH)

# The job.yml keys that declare actions for each event (docs/job-format.md: `hooks`, `stop_hooks`).
_EVENT_KEYS = {
    "after_agent": ("after_agent", "stop_hooks"),
    "before_tool": ("before_tool",),
    "before_prompt": ("before_prompt",),
}


def stack_is_empty(project_root: Path) -> bool:
    """True when the project's main stack certainly has no active workflow. The hooks act on
    the main stack only: agents' stacks belong to sub-agents that call the tools themselves.

    An unreadable or odd stack file is not "empty": the store then reads it and reports the
    problem properly.
    """
    try:
        data = loads_json(read_text_file(project_root / STACK_PATH, limit=layout.MAX_STATE_BYTES))
    except FileReadError as exc:
        return exc.code == ErrorCode.FILE_NOT_FOUND
    except ValueError:
        return False
    ids = data.get(layout.STACK_MAIN_KEY) if isinstance(data, dict) else None
    return isinstance(ids, list) and not ids


def may_have_job_hooks(project_root: Path, event: str, additional_jobs_folders: str | None) -> bool:
    """False when the job of the top workflow certainly declares no action for `event`.

    Reads the top session's job from the stack marker (`top_job`) and every job.yml of that name
    on the discovery path (project, standard, additional folders) as plain text: a job can only
    declare actions for the event by writing its key.
    """
    keys = _EVENT_KEYS.get(event)
    if keys is None:
        return False
    try:
        stack = loads_json(read_text_file(project_root / STACK_PATH, limit=layout.MAX_STATE_BYTES))
        job_name = stack[layout.STACK_TOP_JOB_KEY]
    except (FileReadError, ValueError, LookupError, TypeError):
        return True
    import deepwork_core
    from deepwork_core.base.identifiers import NAME_PATTERN

    if not isinstance(job_name, str) or not re.match(NAME_PATTERN, job_name):
        return True
    folders = [
        project_root / layout.PROJECT_JOBS_DIR,
        Path(deepwork_core.__file__).parent / layout.STANDARD_JOBS_PACKAGE_DIR,
        *(Path(p.strip()) for p in (additional_jobs_folders or "").split(os.pathsep) if p.strip()),
    ]
    for folder in folders:
        try:
            raw = read_bytes_file(folder / job_name / layout.JOB_FILE, limit=layout.MAX_STATE_BYTES)
        except FileReadError as exc:
            if exc.code == ErrorCode.FILE_NOT_FOUND:
                continue
            return True
        text = raw.decode("utf-8", errors="replace")
        if any(key in text for key in keys):
            return True
    return False


@dataclass(frozen=True, slots=True)
class HookedWorkflow:
    """The top of the project's workflow stack and everything it runs on."""

    stack: list[Session]
    job: LoadedJob
    steps: list[Step]

    @property
    def session(self) -> Session:
        return self.stack[-1]


def load_stack(project_root: Path, store_url: str | None = None) -> list[Session]:
    """The active sessions (bottom to top) in the project's store (`store_url`: the one
    `DEEPWORK_STORE_URL` names, else the project's own); [] without importing pydantic when
    there are none."""
    if stack_is_empty(project_root):
        return []
    from deepwork_core.state.sessions import SessionStore
    from deepwork_core.state.store.opening import choose_store_url, open_existing_store

    store = open_existing_store(choose_store_url(project_root, store_url), project_root)
    if store is None:
        return []
    with store:
        return SessionStore(store, project_root).stack()


def load_active_workflow(
    project_root: Path, additional_jobs_folders: str | None, store_url: str | None = None
) -> HookedWorkflow | None:
    """The workflow on top of the stack with its job and current steps, or None.

    Raises the store's and discovery's errors (`session.state_corrupt`, `job.invalid`, …).
    """
    stack = load_stack(project_root, store_url)
    if not stack:
        return None
    from deepwork_core import JobCatalog
    from deepwork_core.jobs.discovery import parse_folder_list

    catalog = JobCatalog.for_project(project_root, parse_folder_list(additional_jobs_folders))
    job = catalog.get(stack[-1].job_name)
    steps = [job.definition.step(step_id) for step_id in stack[-1].current_step_ids]
    return HookedWorkflow(stack, job, steps)
