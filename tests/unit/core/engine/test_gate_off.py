"""With the quality gate off (`--no-quality-gate`), a step's reviews are neither listed to the
agent as if they will run nor called "no review applies": every view says the gate was off."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from deepwork_core.base.identifiers import SessionId
from deepwork_core.engine.workflow import WorkflowEngine
from deepwork_core.evidence.verdicts import GATE_OFF_REASON
from deepwork_core.jobs.discovery import JobCatalog
from deepwork_core.state.read_model.detail import session_detail
from deepwork_core.state.sessions import SessionStore
from deepwork_core.state.store.port import Store

from tests.fixtures.workflow_project import make_project, write_files


def test_a_reviewed_step_without_a_gate_reads_not_reviewed_gate_off(
    tmp_path: Path, make_store: Callable[..., Store]
) -> None:
    root = make_project(tmp_path / "project")
    sessions = SessionStore(make_store(root), root)
    engine = WorkflowEngine(root, JobCatalog.for_project(root), sessions)  # no gate
    started = engine.start("write it", "reviewed", "main", "acme")
    assert started.brief.reviews == []  # none will run: none is listed
    write_files(root, "report.md")
    engine.finish({"report": "report.md"})
    detail = session_detail(sessions, SessionId(started.brief.session_id))
    [line] = detail.summary.verdicts
    assert line.label == GATE_OFF_REASON
    assert line.reason == GATE_OFF_REASON
    assert "no review appl" not in line.label


def test_a_gate_on_still_lists_the_step_reviews(
    tmp_path: Path, make_store: Callable[..., Store]
) -> None:
    from tests.fixtures.reviewer import ScriptedGate

    root = make_project(tmp_path / "project")
    sessions = SessionStore(make_store(root), root)
    engine = WorkflowEngine(root, JobCatalog.for_project(root), sessions, gate=ScriptedGate())
    started = engine.start("write it", "reviewed", "main", "acme")
    assert [review.step_id for review in started.brief.reviews] == ["write"]
