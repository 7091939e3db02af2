"""What a client without the DeepWork skill learns from the server alone.

The server instructions and the tool descriptions carry the essentials of the skill in a
sentence each (their size is held by `test_tool_list_and_instructions_stay_small`).
"""

from __future__ import annotations

from pathlib import Path

from deepwork_mcp.server import create_server
from fastmcp import Client

from tests.fixtures.configs import config


async def _guidance(tmp_path: Path) -> tuple[str, dict[str, str]]:
    (tmp_path / ".deepwork").mkdir()
    server = create_server(tmp_path, config())
    async with Client(server) as client:
        listed = await client.session.list_tools()
    text = server.instructions or ""
    descriptions = {
        tool.name: tool.model_dump_json(by_alias=True, exclude_none=True) for tool in listed.tools
    }
    return text, descriptions


async def test_the_instructions_carry_the_skill_in_a_sentence_each(tmp_path: Path) -> None:
    text, tools = await _guidance(tmp_path)

    assert "Checkpoint: finished_step" in text
    assert "concurrent group is one checkpoint" in text
    assert "quality_review_override_reason" in text
    assert "never to skip a criterion" in text
    assert "repair" in text
    assert "reason" in tools["mark_review_as_passed"]
    assert "Self-review" in tools["finished_step"]
