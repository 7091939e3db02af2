"""A start that fails after switching to the workflow branch puts HEAD back: the repository is
never left on a new branch by a run that was not written (docs/runtime.md)."""

from __future__ import annotations

from datetime import date
from pathlib import Path

import pytest
from deepwork_core.base.errors import DeepWorkError
from deepwork_core.engine.branching import ensure_workflow_branch
from deepwork_core.engine.workflow import WorkflowEngine
from deepwork_core.jobs.discovery import JobCatalog
from deepwork_core.state.sessions import SessionStore
from deepwork_core.state.store.opening import open_store

from tests.fixtures.evidence_project import git, make_evidence_project


def test_a_start_failing_on_the_store_switches_back(tmp_path: Path) -> None:
    root = make_evidence_project(tmp_path / "project")
    home = git(root, "branch", "--show-current").strip()
    store = open_store(None, root)
    engine = WorkflowEngine(
        root,
        JobCatalog.for_project(root),
        SessionStore(store, root),
        branch_maker=lambda job, label: ensure_workflow_branch(
            root, job_name=job, label=label, today=date(2026, 12, 2)
        ),
    )
    store.close()  # the store fails once the start writes
    with pytest.raises(DeepWorkError):
        engine.start("g", "scoped", "main")
    assert git(root, "branch", "--show-current").strip() == home
