"""OpenTelemetry export of a run through the real server, to the SDK's in-memory exporter and
reader (docs/telemetry.md): the span tree of a run with a nested workflow, two reviews and an
approval; the reviewer's TRACEPARENT; metric totals against `deepwork stats --json`."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from deepwork_mcp.cli import cli
from deepwork_mcp.server import create_server
from deepwork_mcp.telemetry.exporting import ExportFailures, build_providers
from deepwork_mcp.telemetry.recorder import Telemetry
from fastmcp import Client
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from tests.fixtures.configs import config
from tests.fixtures.reviewer import ScriptedReviewer
from tests.fixtures.telemetry_data import metric_sums, span_tree
from tests.fixtures.tool_calls import call_ok
from tests.fixtures.traced_project import approve, make_traced_project, run_traced


@pytest.fixture
def root(tmp_path: Path) -> Path:
    return make_traced_project(tmp_path / "project")


class Recorded:
    def __init__(self, *, log_content: bool = False) -> None:
        self.spans = InMemorySpanExporter()
        self.reader = InMemoryMetricReader()
        tracer_provider, meter_provider = build_providers(
            {},
            ExportFailures(),
            span_exporter=self.spans,
            metric_reader=self.reader,
            log_content=log_content,
        )
        self.telemetry = Telemetry(
            tracer_provider, meter_provider, platform="claude", log_content=log_content
        )

    def finished(self) -> list[ReadableSpan]:
        self.telemetry.tracer_provider.force_flush()
        return list(self.spans.get_finished_spans())

    def metrics(self) -> dict[tuple[str, tuple[tuple[str, Any], ...]], float]:
        data = self.reader.get_metrics_data()
        assert data is not None
        return metric_sums(json.loads(data.to_json()))


@pytest.fixture
def recorded() -> Iterator[Recorded]:
    recording = Recorded()
    recording.telemetry.install()
    yield recording
    recording.telemetry.shutdown()


async def traced_run(root: Path, recorded: Recorded, reviewer: ScriptedReviewer) -> str:
    server = create_server(
        root,
        config(external_runner="claude", max_attempts=3),
        trace_env=recorded.telemetry.reviewer_env,
    )
    async with Client(server, mode="legacy", elicitation_handler=approve) as client:
        return await run_traced(client, reviewer)


async def test_a_run_is_one_trace_whose_tree_matches_the_run(
    root: Path, recorded: Recorded, reviewer_on_path: ScriptedReviewer
) -> None:
    session_id = await traced_run(root, recorded, reviewer_on_path)
    spans = recorded.finished()
    assert len({span.context.trace_id for span in spans}) == 1
    assert span_tree(spans) == [
        "invoke_workflow traced.main",
        "  deepwork.step plan",
        "    deepwork.approval plan",
        "  deepwork.step notes",
        "    invoke_workflow traced.inner",
        "      deepwork.step draft",
        "  deepwork.step write",
        "    invoke_agent report.md",
        "    invoke_agent report.md",
    ]
    by_name = {span.name: span for span in spans}
    root_span = by_name["invoke_workflow traced.main"]
    assert root_span.parent is None
    assert root_span.attributes is not None
    assert root_span.attributes["gen_ai.conversation.id"] == session_id
    assert root_span.attributes["gen_ai.workflow.name"] == "traced.main"
    assert root_span.attributes["deepwork.workflow.status"] == "completed"
    assert root_span.attributes["deepwork.agent.platform"] == "claude"
    reviews = sorted(
        (s for s in spans if s.name.startswith("invoke_agent")), key=lambda s: s.start_time or 0
    )
    verdicts = [(s.attributes or {}).get("deepwork.review.verdict") for s in reviews]
    assert verdicts == ["failed", "passed"]
    write = by_name["deepwork.step write"].attributes or {}
    assert (write["deepwork.step.attempts"], write["deepwork.step.outcome"]) == (2, "reviewer")
    approval = by_name["deepwork.approval plan"].attributes or {}
    assert approval["deepwork.approval.decision"] == "approved"
    assert approval["deepwork.approval.channel"] == "elicitation"
    assert approval["deepwork.approval.evidence_matched"] is True
    assert "deepwork.approval.signer" not in approval  # unsigned: the seal decided
    # Content is off by default: no goal, feedback or comment leaves the process.
    for span in spans:
        assert not span.events
        assert "Ship it" not in json.dumps(dict(span.attributes or {}))
    assert "a traced run" not in json.dumps([dict(s.attributes or {}) for s in spans])


async def test_each_reviewer_process_gets_the_traceparent_of_its_review_span(
    root: Path, recorded: Recorded, reviewer_on_path: ScriptedReviewer
) -> None:
    await traced_run(root, recorded, reviewer_on_path)
    spans = recorded.finished()
    reviews = sorted(
        (s for s in spans if s.name.startswith("invoke_agent")), key=lambda s: s.start_time or 0
    )
    expected = [f"00-{s.context.trace_id:032x}-{s.context.span_id:016x}-01" for s in reviews]
    assert [call["traceparent"] for call in reviewer_on_path.calls()] == expected


async def test_token_and_cost_totals_equal_deepwork_stats(
    root: Path, recorded: Recorded, reviewer_on_path: ScriptedReviewer
) -> None:
    reviewer_on_path.spend(0.3125)
    await traced_run(root, recorded, reviewer_on_path)
    sums = recorded.metrics()
    outcome = CliRunner().invoke(cli, ["stats", "--json", "--path", str(root)])
    assert outcome.exit_code == 0, outcome.output
    [job] = json.loads(outcome.output)["review_costs"]["jobs"]
    usage = job["usage"]

    def total(metric: str, **attributes: str) -> float:
        return sum(
            value
            for (name, attrs), value in sums.items()
            if name == metric and all(dict(attrs).get(k) == v for k, v in attributes.items())
        )

    kinds = {"input": "input_tokens", "output": "output_tokens"}
    kinds |= {"cache_read": "cache_read_tokens", "cache_creation": "cache_creation_tokens"}
    for kind, field in kinds.items():
        assert total("deepwork.review.tokens", **{"deepwork.token.kind": kind}) == usage[field]
    all_input = usage["input_tokens"] + usage["cache_read_tokens"] + usage["cache_creation_tokens"]
    assert total("gen_ai.client.token.usage", **{"gen_ai.token.type": "input"}) == all_input
    output = total("gen_ai.client.token.usage", **{"gen_ai.token.type": "output"})
    assert output == usage["output_tokens"]
    assert round(total("deepwork.review.cost"), 6) == usage["cost_usd"] == 0.625
    assert total("deepwork.gate.first_pass", **{"deepwork.gate.passed": False}) == 1


async def test_a_server_started_again_mid_run_continues_the_same_trace(
    root: Path, reviewer_on_path: ScriptedReviewer
) -> None:
    first, second = Recorded(), Recorded()
    current = [first]
    first.telemetry.install()
    server = create_server(
        root,
        config(external_runner="claude", max_attempts=3),
        trace_env=lambda *task: current[0].telemetry.reviewer_env(*task),
    )
    async with Client(server, mode="legacy", elicitation_handler=approve) as client:
        started = await call_ok(
            client, "start_workflow", goal="g", job_name="traced", workflow_name="main"
        )
        await call_ok(client, "finished_step", outputs={"plan.md": "plan.md"})
        first.telemetry.shutdown()  # the first server is gone; the second knows nothing yet
        current[0] = second
        second.telemetry.install()
        await call_ok(client, "finished_step", outputs={"draft.md": "draft.md"})
        reviewer_on_path.answer("fail")
        await call_ok(client, "finished_step", outputs={"report.md": "report.md"})
        reviewer_on_path.answer("pass")
        await call_ok(client, "finished_step", outputs={"report.md": "report.md"})
    before, after = first.finished(), second.finished()
    assert [span.name for span in before] == ["deepwork.approval plan", "deepwork.step plan"]
    spans = before + after
    assert len({span.context.trace_id for span in spans}) == 1
    assert span_tree(spans) == [
        "invoke_workflow traced.main",
        "  deepwork.step plan",
        "    deepwork.approval plan",
        "  deepwork.step notes",
        "    invoke_workflow traced.inner",
        "      deepwork.step draft",
        "  deepwork.step write",
        "    invoke_agent report.md",
        "    invoke_agent report.md",
    ]
    root_span = next(span for span in spans if span.name == "invoke_workflow traced.main")
    assert (root_span.attributes or {})["gen_ai.conversation.id"] == started["begin_step"][
        "session_id"
    ]


async def test_content_is_exported_when_the_user_asks_for_it(
    root: Path, reviewer_on_path: ScriptedReviewer
) -> None:
    recording = Recorded(log_content=True)
    recording.telemetry.install()
    try:
        await traced_run(root, recording, reviewer_on_path)
    finally:
        recording.telemetry.shutdown()
    spans = recording.finished()
    texts = [
        str(event.attributes.get("deepwork.content"))
        for span in spans
        for event in span.events
        if event.attributes is not None
    ]
    assert "a traced run" in texts  # the goal
    assert "Ship it" in texts  # the approver's comment
    assert "The report is too short." in texts  # the failing review's feedback
