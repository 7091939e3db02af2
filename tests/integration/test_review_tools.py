"""The review MCP tools through an in-memory FastMCP client."""

from __future__ import annotations

import asyncio
import re

import pytest
from deepwork_core.jobs.discovery import JobCatalog
from deepwork_mcp.roots import ProjectServices
from deepwork_mcp.tool_errors import ToolErrors
from deepwork_mcp.tools.reviews import register_review_tools
from deepwork_mcp.tools.services import ToolServices, lifespan
from deepwork_review.passes import ReviewPasses
from fastmcp import Client, FastMCP
from fastmcp.client.client import CallToolResult
from fastmcp.exceptions import ToolError
from mcp.types import TextContent

PROMPT_RE = re.compile(r'prompt: "@([^"]+)"')


def _text(result: CallToolResult) -> str:
    (content,) = result.content
    assert isinstance(content, TextContent)
    return content.text


def _server(root, platform: str = "claude") -> FastMCP:
    """A server with only the review tools, for the project at `root` (no engine is made)."""

    def no_store():
        raise AssertionError("the review tools never need the store")

    def no_engine(_store):
        raise AssertionError("the review tools never need the workflow engine")

    project = ProjectServices(root, JobCatalog.for_project(root), no_store, no_engine)
    tools = ToolServices(lambda: project, platform=platform)
    mcp = FastMCP(
        "test", mask_error_details=True, middleware=[ToolErrors()], lifespan=lifespan(tools)
    )
    register_review_tools(mcp)
    return mcp


async def test_tools_are_listed_with_annotations(repo) -> None:
    async with Client(_server(repo.root)) as client:
        tools = {tool.name: tool for tool in await client.list_tools()}
    assert set(tools) == {
        "get_review_instructions",
        "get_configured_reviews",
        "mark_review_as_passed",
    }
    for name in ("get_review_instructions", "get_configured_reviews"):
        assert tools[name].annotations.read_only_hint is True
    for tool in tools.values():
        assert tool.annotations.open_world_hint is False


async def test_get_review_instructions_and_pass_memory(repo) -> None:
    repo.write("a.py")
    async with Client(_server(repo.root)) as client:
        result = await client.call_tool("get_review_instructions", {})
        assert result.structured_content is None  # the long text is sent once, as text
        text = _text(result)
        assert text.startswith("Invoke the following list of Tasks in parallel:")
        (prompt,) = PROMPT_RE.findall(text)
        content = (repo.root / prompt).read_text()
        review_id = re.search(r'review_id: "([^"]+)"', content).group(1)

        marked = await client.call_tool(
            "mark_review_as_passed",
            {"review_id": review_id, "reason": "The user keeps the\nlong name on purpose."},
        )
        assert marked.structured_content["passed"] is True
        assert marked.structured_content["reason"] == "The user keeps the long name on purpose."
        assert ReviewPasses(repo.root).pass_reasons() == {
            review_id: "The user keeps the long name on purpose."
        }

        again = await client.call_tool("get_review_instructions", {})
        assert "already passed" in _text(again)

        with pytest.raises(ToolError, match=r"^review\.unknown_review_id: "):
            await client.call_tool("mark_review_as_passed", {"review_id": "python--" + "0" * 20})


async def test_explicit_files_and_informational_answers(repo) -> None:
    repo.write("a.py")
    repo.write("notes.md")
    async with Client(_server(repo.root, platform="gemini")) as client:
        only_md = await client.call_tool("get_review_instructions", {"files": ["notes.md"]})
        assert _text(only_md) == "No review rules matched the changed files."
        py = await client.call_tool("get_review_instructions", {"files": ["a.py"]})
        assert "agent: generalist" in _text(py)


async def test_errors_become_tool_errors_with_the_code(tmp_path) -> None:
    async with Client(_server(tmp_path.resolve())) as client:
        no_rules = await client.call_tool("get_review_instructions", {})
        assert _text(no_rules) == "No .deepreview configuration files found."
        (tmp_path / ".deepreview").write_text(
            "py:\n  description: d\n  match: {include: ['*.py']}\n"
            "  review:\n    strategy: individual\n    instructions: Look.\n"
        )
        with pytest.raises(ToolError, match=r"^review\.not_a_git_repository: "):
            await client.call_tool("get_review_instructions", {})
        with pytest.raises(ToolError, match=r"^path\.outside_project: "):
            await client.call_tool("get_review_instructions", {"files": ["../x.py"]})


async def test_get_configured_reviews(repo) -> None:
    repo.write("bad/.deepreview", "x: [\n")
    async with Client(_server(repo.root)) as client:
        everything = await client.call_tool("get_configured_reviews", {})
        rules = everything.structured_content["result"]
        assert rules[0] == {
            "name": "python",
            "description": "Python files",
            "defining_file": ".deepreview:1",
        }
        assert rules[1]["name"] == "PARSE_ERROR"
        assert rules[1]["defining_file"].startswith("bad/.deepreview")

        filtered = await client.call_tool(
            "get_configured_reviews", {"only_rules_matching_files": ["README.md"]}
        )
        assert [rule["name"] for rule in filtered.structured_content["result"]] == ["PARSE_ERROR"]


async def test_two_concurrent_calls_both_keep_their_files(repo) -> None:
    for index in range(20):
        repo.write(f"f{index}.py", str(index))
    async with Client(_server(repo.root)) as client:
        first, second = await asyncio.gather(
            client.call_tool("get_review_instructions", {}),
            client.call_tool("get_review_instructions", {}),
        )
    prompts = PROMPT_RE.findall(_text(first)) + PROMPT_RE.findall(_text(second))
    assert len(prompts) == 40
    assert len(set(prompts)) == 20  # equal tasks share their content-named files
    assert all((repo.root / prompt).is_file() for prompt in prompts)


async def test_get_configured_reviews_without_rules_says_so(tmp_path) -> None:
    async with Client(_server(tmp_path.resolve())) as client:
        result = await client.call_tool("get_configured_reviews", {})
        assert result.structured_content == {"result": []}
        assert "No review rules are configured" in _text(result)
