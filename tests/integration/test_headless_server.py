"""A headless server (`create_server(headless=True)`, what `deepwork serve --headless` and
`CI=true` build) answers a human gate with `awaiting_approval` and the instruction to stop, marks
the run `parked`, offers no form, and reads no decision while it is parked (docs/headless.md)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from deepwork_core.engine.headless.parking import headless_from_env
from deepwork_core.state.sessions import SessionStore
from deepwork_core.state.store.port import Store
from deepwork_mcp.server import create_server
from fastmcp import Client

from tests.fixtures.configs import config
from tests.fixtures.evidence_project import decide_outside, make_evidence_project
from tests.fixtures.tool_calls import call_ok


@pytest.mark.parametrize(
    ("environ", "headless"),
    [
        ({}, False),
        ({"CI": "true"}, True),
        ({"CI": "false"}, False),
        ({"DEEPWORK_RUN": "sess_x"}, True),
        ({"DEEPWORK_RUN": ""}, False),
    ],
)
def test_ci_and_a_run_s_agent_imply_headless(environ: dict[str, str], headless: bool) -> None:
    assert headless_from_env(environ) is headless


async def test_a_human_gate_parks_the_run_and_no_form_is_offered(
    tmp_path: Path, make_store: Callable[..., Store]
) -> None:
    root = make_evidence_project(tmp_path / "project")
    (root / "plan.md").write_text("plan\n")
    forms: list[str] = []

    async def elicit(message: str, *_: Any) -> dict[str, str]:
        forms.append(message)
        return {"decision": "approve", "comment": ""}

    server = create_server(root, config(), headless=True)
    async with Client(server, elicitation_handler=elicit) as client:
        started = await call_ok(
            client, "start_workflow", goal="g", job_name="approved", workflow_name="main"
        )
        session_id = started["begin_step"]["session_id"]
        parked = await call_ok(client, "finished_step", outputs={"plan": "plan.md"})
        assert parked["status"] == "awaiting_approval"
        assert "Stop now" in parked["feedback"]
        assert f"deepwork run --resume {session_id}" in parked["feedback"]

        store = make_store(root)
        session = SessionStore(store, root).load(session_id)
        assert session.parked is not None
        assert session.parked.reason.value == "awaiting_approval"
        # Even a recorded decision is not read while the run is parked.
        decide_outside(store, root, session_id, actor="agent@ci")
        again = await call_ok(client, "finished_step", outputs={"plan": "plan.md"})
        assert again["status"] == "awaiting_approval"
    assert forms == []
