"""OpenTelemetry over real OTLP/HTTP: `deepwork serve` as a subprocess, driven over stdio by the
official `mcp` client with a W3C `traceparent` in every request's `_meta`, exporting to a
receiver this test runs on loopback (docs/telemetry.md)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from deepwork_mcp.cli import cli
from deepwork_mcp.telemetry import names
from mcp.types import TextContent
from opentelemetry.semconv._incubating.attributes import gen_ai_attributes
from opentelemetry.semconv._incubating.metrics import gen_ai_metrics

from tests.fixtures.otlp_receiver import ReceivedSpan, otlp_receiver
from tests.fixtures.reviewer import ScriptedReviewer
from tests.fixtures.stdio_server import Server, serve
from tests.fixtures.telemetry_data import span_tree
from tests.fixtures.traced_project import RUN_TREE, make_traced_project

pytestmark = pytest.mark.slow

HOST_TRACE = 0x4BF92F3577B34DA6A3CE929D0E0E4736
HOST_SPAN = 0x00F067AA0BA902B7
TRACEPARENT = f"00-{HOST_TRACE:032x}-{HOST_SPAN:016x}-01"


async def call(server: Server, tool: str, **arguments: Any) -> dict[str, Any]:
    """A tool call carrying the host's trace context in `_meta` (MCP SEP-414)."""
    result = await server.session.call_tool(
        tool, arguments, meta={"traceparent": TRACEPARENT, "tracestate": "host=1"}
    )
    text = "".join(part.text for part in result.content if isinstance(part, TextContent))
    assert not result.is_error, text
    assert isinstance(result.structured_content, dict)
    return result.structured_content


def deepwork_approve(root: Path, session_id: str) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "deepwork_mcp", "approve", session_id, "--path", str(root), "--yes"],
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
        check=False,
    )
    assert done.returncode == 0, done.stderr


async def run_over_stdio(root: Path, reviewer: ScriptedReviewer, endpoint: str) -> str:
    env = {**reviewer.env, "OTEL_EXPORTER_OTLP_ENDPOINT": endpoint}
    env.pop("DEEPWORK_OTEL_LOG_CONTENT", None)
    async with serve(root, "server", "--external-runner", "claude", env=env) as server:
        started = await call(
            server, "start_workflow", goal="a traced run", job_name="traced", workflow_name="main"
        )
        session_id: str = started["begin_step"]["session_id"]
        waiting = await call(server, "finished_step", outputs={"plan.md": "plan.md"})
        assert waiting["status"] == "awaiting_approval", waiting
        deepwork_approve(root, session_id)
        await call(server, "finished_step", outputs={"plan.md": "plan.md"})
        await call(server, "finished_step", outputs={"draft.md": "draft.md"})
        reviewer.answer("fail")
        failed = await call(server, "finished_step", outputs={"report.md": "report.md"})
        assert failed["status"] == "needs_work", failed
        reviewer.answer("pass")
        done = await call(server, "finished_step", outputs={"report.md": "report.md"})
        assert done["status"] == "workflow_complete", done
    return session_id


def named(spans: list[ReceivedSpan], name: str) -> ReceivedSpan:
    [span] = [span for span in spans if span.name == name]
    return span


async def test_a_run_joins_the_hosts_trace_over_otlp(
    tmp_path: Path, scripted_reviewer: ScriptedReviewer
) -> None:
    root = make_traced_project(tmp_path / "project")
    scripted_reviewer.spend(0.125)
    with otlp_receiver() as (receiver, endpoint):
        session_id = await run_over_stdio(root, scripted_reviewer, endpoint)
    received = receiver.spans()
    assert {"/v1/traces", "/v1/metrics"} <= set(receiver.paths)
    # The session's set-up requests carried no `_meta`: only they are outside the host's trace.
    spans = [span for span in received if span.name not in ("initialize", "tools/list")]
    assert len(spans) < len(received)
    assert {span.context.trace_id for span in spans} == {HOST_TRACE}
    assert {span.service for span in spans} == {"deepwork"}

    # Every tool call is the SDK's server span under the host's span; the run's root span sits
    # under the call that started it.
    calls = [span for span in spans if span.name.startswith("tools/call")]
    assert len(calls) == 6
    assert {span.parent.span_id for span in calls if span.parent} == {HOST_SPAN}
    run = named(spans, "invoke_workflow traced.main")
    assert run.parent == named(spans, "tools/call start_workflow").context
    assert run.attributes["gen_ai.conversation.id"] == session_id
    ours = [span for span in spans if not span.name.startswith("tools/call")]
    assert span_tree(ours) == RUN_TREE
    # Only the failing review and the checkpoint it refused end in error, over the wire too.
    failed = sorted((s.name, s.attributes.get("error.type")) for s in ours if s.status_error)
    assert failed == [
        ("deepwork.checkpoint write", "needs_work"),
        ("invoke_agent report.md", "review_failed"),
    ]
    reviews = sorted(
        (span for span in spans if span.name.startswith("invoke_agent")),
        key=lambda span: span.start_time,
    )
    assert [(call["traceparent"], call["tracestate"]) for call in scripted_reviewer.calls()] == [
        (f"00-{HOST_TRACE:032x}-{span.context.span_id:016x}-01", "host=1") for span in reviews
    ]
    approval = named(spans, "deepwork.approval plan").attributes
    assert (approval["deepwork.approval.channel"], approval["deepwork.approval.decision"]) == (
        "cli",
        "approved",
    )
    assert "actor" not in json.dumps([span.attributes for span in spans])
    assert os.environ.get("USER", "\0") not in json.dumps([span.attributes for span in spans])

    # Metric totals are `deepwork stats --json`'s, to the token and the cent.
    sums = receiver.metric_sums()
    outcome = CliRunner().invoke(cli, ["stats", "--json", "--path", str(root)])
    [job] = json.loads(outcome.output)["review_costs"]["jobs"]
    kinds = {
        "input": "input_tokens",
        "output": "output_tokens",
        "cache_read": "cache_read_tokens",
        "cache_creation": "cache_creation_tokens",
    }
    for kind, field in kinds.items():
        exported = sum(
            value
            for (name, attrs), value in sums.items()
            if name == "deepwork.review.tokens" and ("deepwork.token.kind", kind) in attrs
        )
        assert exported == job["usage"][field]
    cost = sum(value for (name, _), value in sums.items() if name == "deepwork.review.cost")
    assert round(cost, 6) == job["usage"]["cost_usd"] == 0.25

    # Every name is the GenAI conventions' (as pinned) or DeepWork's own.
    assert_conventional(spans, {name for name, _ in sums})


def assert_conventional(spans: list[ReceivedSpan], metric_names: set[str]) -> None:
    operations = {value.value for value in gen_ai_attributes.GenAiOperationNameValues}
    attributes = {
        value for key, value in vars(gen_ai_attributes).items() if key.startswith("GEN_AI_")
    }
    metrics = {value for key, value in vars(gen_ai_metrics).items() if key.startswith("GEN_AI_")}
    # What Phoenix prices a review call by: OpenInference's names, as `names` holds them.
    openinference = {
        value for key, value in vars(names).items() if key.startswith(("OI_SPAN", "LLM_"))
    }
    for span in spans:
        if span.name.startswith("tools/call"):
            continue  # FastMCP's own span, named by the MCP conventions
        head = span.name.split(" ", 1)[0]
        assert head in operations or head.startswith("deepwork."), span.name
        for key in span.attributes:
            if key.startswith("gen_ai."):
                assert key in attributes, key
            elif key.startswith(("llm.", "openinference.")):
                assert key in openinference, key
            else:
                assert key.startswith("deepwork.") or key == "error.type", key
    for name in metric_names | set(names.METRICS):
        assert name in metrics or name.startswith("deepwork."), name
    # This run reuses no verdict, so only the counter of reused verdicts is not emitted (it is
    # exported where a verdict is reused: tests/unit/mcp/test_reuse_views.py).
    assert set(names.METRICS) - metric_names == {names.M_REVIEW_REUSED}
    assert metric_names <= set(names.METRICS)
