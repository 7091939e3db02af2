"""Going back does not launder a change (docs/navigation.md, docs/evidence.md): `go_to_step`
keeps the scope guard's baseline of the step it left, so an undeclared edit made before going
back is still reported at the next checkpoint."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from deepwork_core.engine.navigation import go_back
from deepwork_core.engine.results import FinishStatus
from deepwork_core.engine.workflow import WorkflowEngine
from deepwork_core.jobs.discovery import JobCatalog
from deepwork_core.state.sessions import SessionStore
from deepwork_core.state.store.port import Store

from tests.fixtures.evidence_project import make_evidence_project


def test_an_undeclared_edit_survives_going_back(
    tmp_path: Path, make_store: Callable[..., Store]
) -> None:
    root = make_evidence_project(tmp_path / "project")
    engine = WorkflowEngine(
        root, JobCatalog.for_project(root), SessionStore(make_store(root), root)
    )
    engine.start("g", "scoped_strict", "main")
    (root / "src" / "app.py").write_text("print('changed before going back')\n")
    go_back(engine, "edit")
    (root / "out.md").write_text("report\n")

    blocked = engine.finish({"out": "out.md"})
    assert blocked.status is FinishStatus.NEEDS_WORK
    assert blocked.evidence is not None
    assert blocked.evidence.undeclared_changes == ["src/app.py"]
