"""The call log never changes a tool's answer, whatever reading the stack raises."""

from __future__ import annotations

from typing import Any

from deepwork_mcp.server import CallLog
from fastmcp import Client, FastMCP


class _BrokenEngine:
    def stack(self) -> list[Any]:
        return [][0]  # IndexError, as a session without current steps once caused


async def test_a_stack_that_cannot_be_read_leaves_the_answer_alone() -> None:
    mcp = FastMCP("t", middleware=[CallLog(_BrokenEngine())])  # type: ignore[arg-type]

    @mcp.tool
    def ping() -> str:
        return "pong"

    async with Client(mcp) as client:
        result = await client.call_tool("ping", {})
    assert not result.is_error
    assert result.data == "pong"
