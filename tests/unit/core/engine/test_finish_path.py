"""The path of a `finished_step`'s outputs through the code (docs/architecture.md, "The path of a
checkpoint"): followed call by call, from the engine and from the tool function itself, they
stay in few modules and seldom come back to one they left."""

from __future__ import annotations

import itertools
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from types import FrameType
from typing import Any

import anyio
from deepwork_core.engine.workflow import WorkflowEngine
from deepwork_core.jobs.discovery import JobCatalog
from deepwork_core.state.sessions import SessionStore
from deepwork_core.state.store.port import Store
from deepwork_mcp.roots import ProjectServices
from deepwork_mcp.tools.services import ToolServices, lifespan
from deepwork_mcp.tools.workflows import register_workflow_tools
from fastmcp import Client, FastMCP

from tests.fixtures.reviewer import ScriptedGate, passes_every_step
from tests.fixtures.workflow_project import make_project, write_files

#: Types whose instances carry the outputs from one stage to the next.
CARRIERS = {
    "Submission",
    "ValidatedOutputs",
    "Checkpoint",
    "mappingproxy",
    "_Pending",
    "CheckpointContext",
}
OUTPUTS = {"report": "report.md"}


@contextmanager
def tracing(outputs: dict[str, str]) -> Iterator[list[str]]:
    """The modules, in call order, of every call (in any thread) that is handed the outputs or a
    carrier; a coroutine resuming after an `await` is not a new call."""
    path: list[str] = []
    seen: dict[int, FrameType] = {}  # held, so that no other frame gets a seen frame's id

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
        if event != "call" or not module.startswith("deepwork") or id(frame) in seen:
            return
        seen[id(frame)] = frame
        if holds(frame):
            path.append(module)

    threading.setprofile(profile)
    sys.setprofile(profile)
    try:
        yield path
    finally:
        sys.setprofile(None)
        threading.setprofile(None)


def started_engine(tmp_path: Path, make_store: Callable[..., Store]) -> WorkflowEngine:
    """An engine whose gate passes every step, at the first step of `reviewed` with its output."""
    root = make_project(tmp_path / "project")
    gate = ScriptedGate(otherwise=passes_every_step)
    sessions = SessionStore(make_store(root), root)
    engine = WorkflowEngine(root, JobCatalog.for_project(root), sessions, gate=gate)
    engine.start("g", "reviewed", "main")
    write_files(root, "report.md")
    return engine


def outputs_path(tmp_path: Path, make_store: Callable[..., Store]) -> list[str]:
    """The modules, in call order, of every call that is handed the outputs or a carrier."""
    engine = started_engine(tmp_path, make_store)
    outputs = dict(OUTPUTS)
    with tracing(outputs) as path:
        engine.finish(outputs)
    return path


def tool_path(tmp_path: Path, make_store: Callable[..., Store]) -> list[str]:
    """The same, from the `finished_step` tool function, called over MCP on a server whose
    lifespan state holds the engine."""
    engine = started_engine(tmp_path, make_store)
    store = engine.store.store
    project = ProjectServices(engine.project_root, engine.catalog, lambda: store, lambda _: engine)
    server = FastMCP("trace", lifespan=lifespan(ToolServices(lambda: project)))
    register_workflow_tools(server)
    outputs = dict(OUTPUTS)

    async def finish() -> None:
        async with Client(server) as client:
            answer = await client.call_tool("finished_step", {"outputs": outputs})
        assert answer.structured_content is not None
        assert answer.structured_content["status"] == "next_step"

    with tracing(outputs) as path:
        anyio.run(finish)  # a fresh event loop: its worker threads start while traced
    return path


def figures(path: list[str]) -> tuple[list[str], set[str], list[str]]:
    """The stays (consecutive calls in one module are one), the modules, and the returns to a
    module the path had left."""
    stays = [module for module, _ in itertools.groupby(path)]
    returns = [m for i, m in enumerate(stays) if m in stays[:i]]
    return stays, set(stays), returns


def test_the_outputs_of_a_finished_step_take_a_short_path(
    tmp_path: Path, make_store: Callable[..., Store]
) -> None:
    stays, _, returns = figures(outputs_path(tmp_path, make_store))
    assert stays[:2] == ["deepwork_core.engine.workflow", "deepwork_core.engine.finishing.finish"]
    assert len(stays) <= 10, stays
    assert len(returns) <= 3, stays


def test_from_the_tool_function_the_outputs_take_the_same_short_path(
    tmp_path: Path, make_store: Callable[..., Store]
) -> None:
    stays, modules, returns = figures(tool_path(tmp_path, make_store))
    assert stays[:3] == [
        "deepwork_mcp.tools.workflows",
        "deepwork_core.engine.workflow",
        "deepwork_core.engine.finishing.finish",
    ]
    assert len(stays) <= 12, stays
    assert len(modules) <= 10, stays
    assert len(returns) <= 3, stays
