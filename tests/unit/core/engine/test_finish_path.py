"""The path of a `finished_step`'s outputs through the code (issue 30, docs/architecture.md):
followed call by call, they stay in few modules and seldom come back to one they left."""

from __future__ import annotations

import itertools
import sys
from collections.abc import Callable
from pathlib import Path
from types import FrameType
from typing import Any

from deepwork_core.engine.workflow import WorkflowEngine
from deepwork_core.jobs.discovery import JobCatalog
from deepwork_core.state.sessions import SessionStore
from deepwork_core.state.store.port import Store

from tests.fixtures.reviewer import ScriptedGate, passes_every_step
from tests.fixtures.workflow_project import make_project, write_files

#: Types whose instances carry the outputs from one stage to the next.
CARRIERS = {"Submission", "ValidatedOutputs", "Checkpoint", "mappingproxy", "_Pending"}


def outputs_path(tmp_path: Path, make_store: Callable[..., Store]) -> list[str]:
    """The modules, in call order, of every call that is handed the outputs or a carrier."""
    root = make_project(tmp_path / "project")
    gate = ScriptedGate(otherwise=passes_every_step)
    sessions = SessionStore(make_store(root), root)
    engine = WorkflowEngine(root, JobCatalog.for_project(root), sessions, gate=gate)
    engine.start("g", "reviewed", "main")
    write_files(root, "report.md")
    outputs = {"report": "report.md"}
    path: list[str] = []

    def holds(frame: FrameType) -> bool:
        code = frame.f_code
        for name in code.co_varnames[: code.co_argcount + code.co_kwonlyargcount]:
            value: Any = frame.f_locals.get(name)
            if value is outputs or type(value).__name__ in CARRIERS:
                return True
            if isinstance(value, dict) and value == outputs:
                return True
        return False

    def profile(frame: FrameType, event: str, _arg: object) -> None:
        module = str(frame.f_globals.get("__name__", ""))
        if event == "call" and module.startswith("deepwork") and holds(frame):
            path.append(module)

    sys.setprofile(profile)
    try:
        engine.finish(outputs)
    finally:
        sys.setprofile(None)
    return path


def test_the_outputs_of_a_finished_step_take_a_short_path(
    tmp_path: Path, make_store: Callable[..., Store]
) -> None:
    stays = [module for module, _ in itertools.groupby(outputs_path(tmp_path, make_store))]
    returns = [m for i, m in enumerate(stays) if m in stays[:i]]
    assert stays[:2] == ["deepwork_core.engine.workflow", "deepwork_core.engine.finish"]
    assert len(stays) <= 10, stays
    assert len(returns) <= 3, stays
