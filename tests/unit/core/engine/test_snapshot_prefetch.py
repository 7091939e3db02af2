"""Outside git, starting a workflow takes no repository snapshot and needs no worker thread."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from deepwork_core.engine.safeguards import OFF_OUTSIDE_GIT, Safeguards
from deepwork_core.engine.workflow import WorkflowEngine
from deepwork_core.jobs.discovery import JobCatalog
from deepwork_core.state.approvals.store import ApprovalStore
from deepwork_core.state.sessions import SessionStore, utc_now
from deepwork_core.state.store.port import Store

from tests.fixtures.workflow_project import make_project


def test_prefetch_outside_git_is_none_and_the_step_still_notes_the_guard_is_off(
    tmp_path: Path,
    make_store: Callable[..., Store],
) -> None:
    root = make_project(tmp_path / "project")
    catalog = JobCatalog.for_project(root)
    store = make_store(root)
    guards = Safeguards(root, utc_now, ApprovalStore(store, root))
    assert guards.prefetch(catalog.get("three_step").definition) is None
    engine = WorkflowEngine(root, catalog, SessionStore(store, root))
    started = engine.start("goal", "three_step", "main")
    assert OFF_OUTSIDE_GIT in (started.branch_note or "")
