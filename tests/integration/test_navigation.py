"""Navigation over real stdio: go_to_step, get_active_workflow, agent stacks, MCP roots, and the
status/log commands over the state a real run left."""

from __future__ import annotations

import json
import os
import sys
import warnings
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from deepwork_mcp.cli import cli
from mcp import ClientSession, StdioServerParameters, stdio_client
from mcp import types as mt
from mcp.shared.exceptions import MCPDeprecationWarning

from tests.fixtures.workflow_project import make_project, write_files, write_job

pytestmark = pytest.mark.slow

FOUR_STEP = """
name: four_step
version: "1.0.0"
summary: Four steps in a row
common_job_info_provided_to_all_steps_at_runtime: Four-step context.
workflows:
  - name: main
    summary: a, b, c, d
    steps: [a, b, c, d]
steps:
  - id: a
    name: A
    description: step a
    instructions_file: steps/a.md
    outputs:
      a_out: {type: file, description: a output, required: true}
    reviews: []
  - id: b
    name: B
    description: step b
    instructions_file: steps/b.md
    inputs:
      - file: a_out
        from_step: a
    dependencies: [a]
    outputs:
      b_out: {type: file, description: b output, required: true}
    reviews: []
  - id: c
    name: C
    description: step c
    instructions_file: steps/c.md
    outputs:
      c_out: {type: file, description: c output, required: true}
    reviews: []
  - id: d
    name: D
    description: step d
    instructions_file: steps/d.md
    outputs:
      d_out: {type: file, description: d output, required: true}
    reviews: []
"""


class Client:
    def __init__(self, session: ClientSession, init: mt.InitializeResult) -> None:
        self.session = session
        self.init = init

    async def ok(self, tool: str, **arguments: Any) -> dict[str, Any]:
        result = await self.session.call_tool(tool, arguments)
        text = "".join(p.text for p in result.content if isinstance(p, mt.TextContent))
        assert not result.is_error, text
        assert isinstance(result.structured_content, dict)
        return result.structured_content

    async def error(self, tool: str, code: str, **arguments: Any) -> str:
        result = await self.session.call_tool(tool, arguments)
        text = "".join(p.text for p in result.content if isinstance(p, mt.TextContent))
        assert result.is_error, result.structured_content
        assert text.startswith(f"{code}: "), text
        return text


@asynccontextmanager
async def serve(
    cwd: Path, *args: str, roots: list[Path] | None = None, log: Path | None = None
) -> AsyncIterator[Client]:
    """`deepwork serve --no-branch ARGS` in `cwd`; the client offers `roots` when given."""
    params = StdioServerParameters(
        command=sys.executable,
        args=["-c", "from deepwork_mcp.cli import main; main()", "serve", "--no-branch", *args],
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
        cwd=str(cwd),
    )
    offered = roots if roots is not None else []

    async def list_roots(_context: Any) -> mt.ListRootsResult:
        return mt.ListRootsResult(roots=[mt.Root(uri=folder.as_uri()) for folder in offered])

    callback = list_roots if roots is not None else None
    with (log or cwd.parent / "server.stderr").open("a") as errlog:
        async with (
            stdio_client(params, errlog=errlog) as (read, write),
            ClientSession(read, write, list_roots_callback=callback) as session,
        ):
            init = await session.initialize()
            yield Client(session, init)


async def _roots_changed(client: Client) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", MCPDeprecationWarning)
        await client.session.send_roots_list_changed()


@pytest.fixture
def root(tmp_path: Path) -> Path:
    project = make_project(tmp_path / "project")
    write_job(project, "four_step", FOUR_STEP)
    write_files(project, "a.md", "b.md", "c.md", "d.md", "b2.md")
    return project


def _cli(*args: str) -> str:
    result = CliRunner().invoke(cli, list(args))
    assert result.exit_code == 0, result.output
    return result.output


async def test_go_back_two_steps_and_finish_again(root: Path) -> None:
    async with serve(root, "--path", str(root)) as server:
        started = await server.ok(
            "start_workflow", goal="four", job_name="four_step", workflow_name="main"
        )
        session_id = started["begin_step"]["session_id"]
        await server.ok("finished_step", outputs={"a_out": "a.md"})
        await server.ok("finished_step", outputs={"b_out": "b.md"})
        at_d = await server.ok("finished_step", outputs={"c_out": "c.md"})
        assert at_d["begin_step"]["step_id"] == "d"

        back = await server.ok("go_to_step", step_id="b")
        assert back["begin_step"]["step_id"] == "b"
        assert back["begin_step"]["session_id"] == session_id
        assert back["begin_step"]["step_inputs"][0]["paths"] == ["a.md"]
        assert [e["step"] for e in back["stack"]] == ["b"]

        forward = await server.error("go_to_step", "navigation.forward_jump", step_id="d")
        assert "a, b" in forward
        await server.error("go_to_step", "navigation.unknown_step", step_id="zz")

        active = await server.ok("get_active_workflow")
        assert active["begin_step"]["step_id"] == "b"
        [entry] = active["stack"]
        assert (entry["job"], entry["workflow"], entry["step"]) == (
            "four_step",
            "four_step/main",
            "b",
        )
        assert entry["session_id"] == session_id
        assert entry["attempts"] == 0

        await server.ok("finished_step", outputs={"b_out": "b2.md"})
        await server.ok("finished_step", outputs={"c_out": "c.md"})
        done = await server.ok("finished_step", outputs={"d_out": "d.md"})
        assert done["status"] == "workflow_complete"
        assert done["all_outputs"] == {
            "a_out": "a.md",
            "b_out": "b2.md",
            "c_out": "c.md",
            "d_out": "d.md",
        }
        assert (await server.ok("get_active_workflow"))["begin_step"] is None

    events = json.loads(_cli("log", session_id, "--path", str(root), "--json"))
    names = [e["event"] for e in events]
    assert names[0] == "started"
    assert names[-1] == "completed"
    begun = [e["step_ids"] for e in events if e["event"] == "step_begun"]
    assert begun == [["a"], ["b"], ["c"], ["d"], ["b"], ["c"], ["d"]]
    submitted = [e["outputs"] for e in events if e["event"] == "outputs_submitted"]
    assert [o.get("b_out") for o in submitted if "b_out" in o] == ["b.md", "b2.md"]
    [jump] = [e for e in events if e["event"] == "go_to_step"]
    assert jump["from_step_ids"] == ["d"]
    assert jump["to_step_ids"] == ["b"]
    assert names.index("go_to_step") == 1 + max(
        i for i, e in enumerate(events[: names.index("go_to_step")]) if e["event"] == "step_begun"
    )
    readable = _cli("log", session_id, "--path", str(root))
    assert "go_to_step" in readable

    status = json.loads(_cli("status", "--path", str(root), "--json"))
    assert status["stacks"] == []
    assert status["finished"][0]["session_id"] == session_id
    assert status["finished"][0]["status"] == "completed"


async def test_two_agents_run_two_workflows_side_by_side(root: Path) -> None:
    async with serve(root, "--path", str(root)) as server:
        one = await server.ok(
            "start_workflow", goal="1", job_name="four_step", workflow_name="main", agent_id="one"
        )
        two = await server.ok(
            "start_workflow", goal="2", job_name="three_step", workflow_name="main", agent_id="two"
        )
        assert [e["workflow"] for e in one["stack"]] == ["four_step/main"]
        assert [e["workflow"] for e in two["stack"]] == ["three_step/main"]
        write_files(root, "notes.md", "drafts/1.md", "final.md")
        steps = [
            ("one", {"a_out": "a.md"}, "b"),
            ("two", {"notes": "notes.md"}, "draft"),
            ("one", {"b_out": "b.md"}, "c"),
            ("two", {"drafts": ["drafts/1.md"]}, "publish"),
            ("one", {"c_out": "c.md"}, "d"),
        ]
        for agent, outputs, next_step in steps:
            answer = await server.ok("finished_step", outputs=outputs, agent_id=agent)
            assert answer["begin_step"]["step_id"] == next_step, (agent, answer)
            assert len(answer["stack"]) == 1

        status = json.loads(_cli("status", "--path", str(root), "--json"))
        by_agent = {s["agent_id"]: s["entries"] for s in status["stacks"]}
        assert set(by_agent) == {"one", "two"}
        assert by_agent["one"][0]["steps"] == ["d"]

        nobody = await server.ok("get_active_workflow")
        assert nobody == {"stack": [], "begin_step": None}
        await server.error("finished_step", "session.none_active", outputs={})

        done_two = await server.ok("finished_step", outputs={"final": "final.md"}, agent_id="two")
        done_one = await server.ok("finished_step", outputs={"d_out": "d.md"}, agent_id="one")
        assert done_two["status"] == done_one["status"] == "workflow_complete"
        assert done_two["all_outputs"]["final"] == "final.md"
        assert "final" not in done_one["all_outputs"]
        assert done_one["all_outputs"]["d_out"] == "d.md"
    assert not (root / ".deepwork/tmp/stack.json").exists()
    log = (root.parent / "server.stderr").read_text()
    assert "tool=finished_step ok | stack of agent 'one': four_step/main:b" in log
    assert "tool=get_active_workflow ok | stack: empty" in log


async def test_roots_choose_the_project_and_follow_changes(tmp_path: Path) -> None:
    first = tmp_path / "first"
    second = tmp_path / "second"
    elsewhere = tmp_path / "elsewhere"
    write_job(first, "only_in_first", FOUR_STEP.replace("four_step", "only_in_first"))
    write_job(second, "only_in_second", FOUR_STEP.replace("four_step", "only_in_second"))
    write_job(elsewhere, "only_elsewhere", FOUR_STEP.replace("four_step", "only_elsewhere"))
    offered = [first]

    def jobs(listing: dict[str, Any]) -> set[str]:
        return {job["name"] for job in listing["jobs"]} & {
            "only_in_first",
            "only_in_second",
            "only_elsewhere",
        }

    async with serve(elsewhere, roots=offered, log=tmp_path / "roots.stderr") as server:
        assert "only_elsewhere" in (server.init.instructions or "")
        assert jobs(await server.ok("get_workflows")) == {"only_in_first"}
        offered[:] = [second]
        assert jobs(await server.ok("get_workflows")) == {"only_in_first"}  # not told yet
        await _roots_changed(server)
        assert jobs(await server.ok("get_workflows")) == {"only_in_second"}
        started = await server.ok(
            "start_workflow", goal="g", job_name="only_in_second", workflow_name="main"
        )
        assert started["begin_step"]["step_id"] == "a"
    assert (second / ".deepwork/tmp/stack.json").exists()
    assert not (elsewhere / ".deepwork/tmp/stack.json").exists()

    async with serve(elsewhere, log=tmp_path / "roots.stderr") as no_roots:
        assert jobs(await no_roots.ok("get_workflows")) == {"only_elsewhere"}
    async with serve(elsewhere, "--path", str(first), roots=[second]) as pinned:
        assert jobs(await pinned.ok("get_workflows")) == {"only_in_first"}
