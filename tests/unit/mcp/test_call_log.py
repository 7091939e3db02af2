"""The call log never changes a tool's answer, whatever reading the stack raises."""

from __future__ import annotations

import logging
from typing import Any

import pytest
from deepwork_mcp.server import CallLog
from fastmcp import Client, FastMCP


class _BrokenEngine:
    def stack(self, agent_id: str | None = None) -> list[Any]:
        return [][0]  # IndexError, as a session without current steps once caused


async def test_a_stack_that_cannot_be_read_leaves_the_answer_alone() -> None:
    mcp = FastMCP("t", middleware=[CallLog(_BrokenEngine)])  # type: ignore[arg-type]

    @mcp.tool
    def ping() -> str:
        return "pong"

    async with Client(mcp) as client:
        result = await client.call_tool("ping", {})
    assert not result.is_error
    assert result.data == "pong"


class _CountingEngine:
    def __init__(self) -> None:
        self.reads = 0

    def stack(self, agent_id: str | None = None) -> list[Any]:
        self.reads += 1
        return []


async def test_an_answer_that_states_the_stack_is_logged_without_reading_state(
    caplog: pytest.LogCaptureFixture,
) -> None:
    engine = _CountingEngine()
    mcp = FastMCP("t", middleware=[CallLog(lambda: engine)])  # type: ignore[arg-type, return-value]

    @mcp.tool
    def step() -> dict[str, Any]:
        return {"stack": [{"workflow": "job/main", "step": "write", "session_id": "s1"}]}

    @mcp.tool
    def ping() -> str:
        return "pong"

    with caplog.at_level(logging.INFO, logger="deepwork"):
        async with Client(mcp) as client:
            await client.call_tool("step", {})
            assert engine.reads == 0
            await client.call_tool("ping", {})
            assert engine.reads == 1  # an answer without a stack: the log reads it
    assert "tool=step ok | stack: job/main:write" in caplog.text
