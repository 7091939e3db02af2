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
from deepwork_mcp.telemetry.adoption import CallAdoptions
from deepwork_mcp.telemetry.ids import trace_id_for
from deepwork_mcp.telemetry.recorder import Telemetry
from fastmcp import Client
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.trace import NoOpTracer

from tests.fixtures.configs import config
from tests.fixtures.reviewer import ScriptedReviewer
from tests.fixtures.telemetry_data import in_memory, metric_sums, span_tree
from tests.fixtures.tool_calls import call_ok
from tests.fixtures.traced_project import RUN_TREE, approve, make_traced_project, run_traced


@pytest.fixture
def root(tmp_path: Path) -> Path:
    return make_traced_project(tmp_path / "project")


class Recorded:
    def __init__(self, *, log_content: bool = False) -> None:
        adoptions = CallAdoptions()
        memory = in_memory(log_content=log_content, adoptions=adoptions)
        self.spans, self.reader = memory.spans, memory.reader
        self.telemetry = Telemetry(
            memory.tracer_provider,
            memory.meter_provider,
            platform="claude",
            log_content=log_content,
            adoptions=adoptions,
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
    assert span_tree(spans) == RUN_TREE
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


async def test_token_and_cost_totals_equal_deepwork_stats_on_metrics_and_spans(
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
    # The review calls' spans carry the same figures, where backends read them.
    reviews = [s.attributes or {} for s in recorded.finished() if s.name.startswith("invoke_agent")]

    def on_spans(key: str) -> float:
        return sum(float(str(review[key])) for review in reviews)

    # The GenAI conventions' token counts (they define no cost attribute) ...
    assert on_spans("gen_ai.usage.input_tokens") == all_input
    assert on_spans("gen_ai.usage.output_tokens") == usage["output_tokens"]
    # ... and OpenInference's: Phoenix prices an LLM span from its token counts and model,
    # Arize AX takes `llm.cost.total` as the call's cost.
    assert {review["openinference.span.kind"] for review in reviews} == {"LLM"}
    assert {review["llm.provider"] for review in reviews} == {"anthropic"}
    assert all(review["llm.model_name"] == review["gen_ai.request.model"] for review in reviews)
    assert on_spans("llm.token_count.prompt") == all_input
    assert on_spans("llm.token_count.completion") == usage["output_tokens"]
    assert on_spans("llm.token_count.total") == all_input + usage["output_tokens"]
    assert on_spans("llm.token_count.prompt_details.cache_read") == usage["cache_read_tokens"]
    cache_write = on_spans("llm.token_count.prompt_details.cache_write")
    assert cache_write == usage["cache_creation_tokens"]
    assert round(on_spans("llm.cost.total"), 6) == usage["cost_usd"] == 0.625
    assert round(on_spans("deepwork.review.cost_usd"), 6) == 0.625


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
    assert [span.name for span in before] == [
        "deepwork.checkpoint plan",
        "deepwork.approval plan",
        "deepwork.checkpoint plan",
        "deepwork.step plan",
    ]
    spans = before + after
    assert len({span.context.trace_id for span in spans}) == 1
    assert span_tree(spans) == RUN_TREE
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


def _status(span: ReadableSpan) -> tuple[str, str | None]:
    return span.status.status_code.name, span.status.description


async def test_a_failed_review_and_its_refused_checkpoint_end_in_error_and_the_retry_is_numbered(
    root: Path, recorded: Recorded, reviewer_on_path: ScriptedReviewer
) -> None:
    await traced_run(root, recorded, reviewer_on_path)
    spans = sorted(recorded.finished(), key=lambda span: span.start_time or 0)
    checkpoints = [span for span in spans if span.name == "deepwork.checkpoint write"]
    reviews = [span for span in spans if span.name.startswith("invoke_agent")]
    # The refused checkpoint and the failing review are errors, named by a code only (the
    # reviewer's feedback stays out without the content opt-in); the retry passed: status unset,
    # as instrumentation leaves a success.
    assert [_status(span) for span in checkpoints] == [("ERROR", "needs_work"), ("UNSET", None)]
    assert [_status(span) for span in reviews] == [("ERROR", "review_failed"), ("UNSET", None)]
    assert [(s.attributes or {}).get("error.type") for s in checkpoints + reviews] == [
        "needs_work",
        None,
        "review_failed",
        None,
    ]
    # Each attempt is numbered, on the checkpoint and on the review call that judged it.
    assert [(s.attributes or {})["deepwork.checkpoint.attempt"] for s in checkpoints] == [1, 2]
    assert [(s.attributes or {})["deepwork.checkpoint.outcome"] for s in checkpoints] == [
        "needs_work",
        "reviewer",
    ]
    assert (checkpoints[0].attributes or {})["deepwork.checkpoint.failed_reviews"] == 1
    assert [(s.attributes or {})["deepwork.review.attempt"] for s in reviews] == [1, 2]
    assert [review.parent.span_id for review in reviews if review.parent] == [
        checkpoint.context.span_id for checkpoint in checkpoints
    ]
    # Everything else that ended well leaves its status unset.
    others = [span for span in spans if span not in (checkpoints[0], reviews[0])]
    assert {_status(span) for span in others} == {("UNSET", None)}
    assert "The report is too short." not in json.dumps(
        [[dict(s.attributes or {}), s.status.description] for s in spans]
    )


async def test_tool_calls_without_the_hosts_trace_are_exported_inside_the_run(
    root: Path,
    recorded: Recorded,
    reviewer_on_path: ScriptedReviewer,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """No `traceparent` from the host: each tool call's span (FastMCP's server span, here recorded
    by this test's provider; the in-memory client opens none) goes into the run's one trace,
    under the step it acted on."""
    import fastmcp.client.telemetry
    import fastmcp.telemetry

    provider = recorded.telemetry.tracer_provider
    monkeypatch.setattr(
        fastmcp.telemetry,
        "otel_get_tracer",
        lambda name, version=None: provider.get_tracer(name, version),
    )
    monkeypatch.setattr(fastmcp.client.telemetry, "get_tracer", lambda version=None: NoOpTracer())
    session_id = await traced_run(root, recorded, reviewer_on_path)
    spans = recorded.finished()
    calls = [span for span in spans if span.name.startswith("tools/call")]
    assert len(calls) == 5
    # The set-up requests wrote no run's event: they stay traces of their own.
    assert {span.context.trace_id for span in spans if span not in calls} - {
        span.context.trace_id for span in spans if span.name.startswith("invoke_workflow")
    } == {span.context.trace_id for span in spans if span.name in ("initialize", "tools/list")}
    ours = [span for span in spans if span.name.startswith(("tools/call", "invoke", "deepwork"))]
    assert {span.context.trace_id for span in ours} == {trace_id_for(session_id)}
    assert span_tree(ours, keep=("tools/call", "invoke_workflow", "deepwork.step")) == [
        "invoke_workflow traced.main",
        "  tools/call start_workflow",
        "  deepwork.step plan",
        "    tools/call finished_step",
        "  deepwork.step notes",
        "    invoke_workflow traced.inner",
        "      deepwork.step draft",
        "        tools/call finished_step",
        "  deepwork.step write",
        "    tools/call finished_step",
        "    tools/call finished_step",
    ]
