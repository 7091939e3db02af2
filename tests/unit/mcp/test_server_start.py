"""A new server answers `tools/list` and the first `get_workflows` without loading the workflow
engine, the session store, the quality gate or the review package: they load on first use."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

from deepwork_core.base.layout import STACK_PATH
from deepwork_mcp.roots import ProjectServices

from tests.fixtures.workflow_project import make_project

LATER = (
    "deepwork_core.engine.workflow",
    "deepwork_core.state.sessions",
    "deepwork_core.gate.checkpoint",
    "deepwork_core.gate.gates",
    "deepwork_review.pipeline",
)

_SCRIPT = textwrap.dedent(
    """
    import asyncio, sys
    from pathlib import Path
    from deepwork_mcp.server import create_server
    from fastmcp import Client

    LATER = sys.argv[2].split(",")

    async def main():
        server = create_server(Path(sys.argv[1]))  # the default gate: self-review
        async with Client(server) as client:
            await client.list_tools()
            listed = await client.call_tool("get_workflows", {})
            assert listed.structured_content["jobs"], listed
            loaded = [name for name in LATER if name in sys.modules]
            print("before:", loaded)
            await client.call_tool(
                "start_workflow", {"goal": "g", "job_name": "three_step", "workflow_name": "main"}
            )
            print("after:", [name for name in LATER if name in sys.modules])

    asyncio.run(main())
    """
)


def test_the_first_answers_load_no_engine_and_a_start_loads_it(tmp_path: Path) -> None:
    root = make_project(tmp_path / "project")
    result = subprocess.run(
        [sys.executable, "-c", _SCRIPT, str(root), ",".join(LATER)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert "before: []" in result.stdout
    assert (
        "after: ['deepwork_core.engine.workflow', 'deepwork_core.state.sessions'" in result.stdout
    )


class _Engine:
    def __init__(self) -> None:
        self.stack_reads = 0

    def stack(self, agent_id: str | None = None) -> list[object]:
        self.stack_reads += 1
        return []


def test_services_make_the_engine_once_and_only_when_needed(tmp_path: Path) -> None:
    made: list[_Engine] = []
    opened: list[object] = []

    class _Store:
        def close(self) -> None:
            opened.remove(self)

    def open_store() -> _Store:
        store = _Store()
        opened.append(store)
        return store

    def make(store: object) -> _Engine:
        assert store is opened[-1]  # the engine is made on the project's store
        made.append(_Engine())
        return made[-1]

    services = ProjectServices(tmp_path, None, open_store, make)  # type: ignore[arg-type]
    assert services.stack() == []  # no stack file: nothing is running, no engine needed
    assert made == []
    (tmp_path / STACK_PATH).parent.mkdir(parents=True)
    (tmp_path / STACK_PATH).write_text("{}")
    services.stack("agent")
    assert services.engine is services.engine
    assert len(made) == 1
    assert made[0].stack_reads == 1
    assert len(opened) == 1  # the store was opened once, with the engine ...
    services.close()
    assert opened == []  # ... and is closed with the services
