"""Branches are no surprise (issue 34): starting a top-level workflow says which branch it left
and which it switched to, completion names the branch and how to merge it or go back, and
`deepwork status` lists DeepWork's branches and which are merged (docs/runtime.md)."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner
from deepwork_mcp.cli import cli
from deepwork_mcp.server import create_server
from fastmcp import Client

from tests.fixtures.configs import config
from tests.fixtures.evidence_project import commit_all, git, make_evidence_project
from tests.fixtures.tool_calls import call_ok


def _status(root: Path) -> str:
    result = CliRunner().invoke(cli, ["status", "--path", str(root)])
    assert result.exit_code == 0, result.output
    return result.output


async def test_a_workflow_branch_is_announced_named_at_the_end_and_listed(tmp_path: Path) -> None:
    root = make_evidence_project(tmp_path / "project")
    home = git(root, "branch", "--show-current").strip()
    async with Client(create_server(root, config(create_branch=True))) as client:
        started = await call_ok(
            client, "start_workflow", goal="g", job_name="scoped", workflow_name="main"
        )
        branch = git(root, "branch", "--show-current").strip()
        assert branch.startswith("deepwork/scoped-")
        note = started["branch_note"]
        assert f"from `{home}` to the branch `{branch}`" in note
        assert f"`git switch {home}`" in note
        (root / "out.md").write_text("report\n")
        done = await call_ok(client, "finished_step", outputs={"out": "out.md"})
    assert done["status"] == "workflow_complete"
    assert f"`{branch}`" in done["summary"]
    assert f"`git switch {home} && git merge {branch}`" in done["summary"]
    commit_all(root, "the workflow's work")
    assert f"{branch}  not merged into {home}" in _status(root)
    git(root, "switch", home)
    git(root, "merge", "--no-edit", branch)
    assert f"{branch}  merged into {home}" in _status(root)


async def test_a_run_that_committed_nothing_says_so_instead_of_merged(tmp_path: Path) -> None:
    root = make_evidence_project(tmp_path / "project")
    home = git(root, "branch", "--show-current").strip()
    async with Client(create_server(root, config(create_branch=True))) as client:
        await call_ok(client, "start_workflow", goal="g", job_name="scoped", workflow_name="main")
        branch = git(root, "branch", "--show-current").strip()
        (root / "out.md").write_text("report\n")
        done = await call_ok(client, "finished_step", outputs={"out": "out.md"})
    assert done["status"] == "workflow_complete"
    summary = done["summary"]
    assert "Its work is on the branch" not in summary  # the branch holds nothing of the run
    assert f"Its outputs are not committed yet: the branch `{branch}`" in summary
    assert "Commit them first" in summary
    assert f"`git switch {home} && git merge {branch}`" in summary  # once they are committed
    status = _status(root)
    assert f"{branch}  merged into" not in status
    assert f"{branch}  no commits yet (its run's outputs are uncommitted)" in status
