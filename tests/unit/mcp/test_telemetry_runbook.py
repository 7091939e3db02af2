"""The fold from events to spans and measurements (deepwork_mcp.telemetry.runbook), and the names
it uses, held to the pinned GenAI semantic conventions (docs/telemetry.md)."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from deepwork_core.evidence.verdicts import VerdictKind
from deepwork_core.state.event_kinds import (
    AbortedEvent,
    GoToStepEvent,
    KnownEvent,
    NeedsWorkEvent,
    OutputsSubmittedEvent,
    ReviewUsageEvent,
    StartedEvent,
    StepBegunEvent,
    StepFinishedEvent,
)
from deepwork_mcp.telemetry import names
from deepwork_mcp.telemetry.emissions import Measurement, SpanRecord
from deepwork_mcp.telemetry.exporting import ExportFailures, build_providers
from deepwork_mcp.telemetry.ids import SpanRef, trace_id_for
from deepwork_mcp.telemetry.recorder import catalog_job_versions
from deepwork_mcp.telemetry.runbook import SessionBook
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult
from opentelemetry.semconv._incubating.attributes import gen_ai_attributes
from opentelemetry.semconv._incubating.metrics import gen_ai_metrics
from opentelemetry.semconv.attributes import error_attributes

from tests.fixtures.workflow_project import make_project

T0 = datetime(2026, 11, 27, 3, 0, tzinfo=UTC)
SESSION = "s1"


def at(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


def fold_all(book: SessionBook, events: list[KnownEvent]) -> list[SpanRecord | Measurement]:
    out: list[SpanRecord | Measurement] = []
    for event in events:
        out += book.fold(event)
    return out


def started(session: str = SESSION, parent: str | None = None) -> StartedEvent:
    return StartedEvent(
        ts=at(0), session_id=session, job="j", workflow="w", parent_session_id=parent
    )


def spans(emitted: list[SpanRecord | Measurement]) -> dict[str, SpanRecord]:
    return {e.name: e for e in emitted if isinstance(e, SpanRecord)}


def test_a_jump_back_ends_the_step_as_left_and_its_next_run_is_another_span() -> None:
    book = SessionBook()
    emitted = fold_all(
        book,
        [
            started(),
            StepBegunEvent(ts=at(1), session_id=SESSION, step_ids=["a"]),
            GoToStepEvent(ts=at(2), session_id=SESSION, from_step_ids=["a"], to_step_ids=["a"]),
            StepBegunEvent(ts=at(2), session_id=SESSION, step_ids=["a"]),
            StepFinishedEvent(
                ts=at(3), session_id=SESSION, step_ids=["a"], verdict=VerdictKind.UNREVIEWED
            ),
        ],
    )
    steps = [e for e in emitted if isinstance(e, SpanRecord)]
    assert [
        (s.attributes["deepwork.step.outcome"], s.attributes["deepwork.step.run"]) for s in steps
    ] == [
        ("left", 1),
        ("unreviewed", 2),
    ]
    assert steps[0].ref.span_id != steps[1].ref.span_id
    assert {s.ref.trace_id for s in steps} == {trace_id_for(SESSION)}


def test_an_abort_ends_open_steps_and_the_run_with_its_status() -> None:
    book = SessionBook()
    emitted = fold_all(
        book,
        [
            started(),
            StepBegunEvent(ts=at(1), session_id=SESSION, step_ids=["a"]),
            AbortedEvent(ts=at(5), session_id=SESSION, step_ids=["a"], reason="secret reason"),
        ],
    )
    found = spans(emitted)
    assert found["deepwork.step a"].attributes["deepwork.step.outcome"] == "aborted"
    run = found["invoke_workflow j.w"]
    assert run.attributes["deepwork.workflow.status"] == "aborted"
    assert run.parent_span_id is None
    assert (run.end - run.start).total_seconds() == 5
    assert "secret reason" not in repr(emitted)  # content is opt-in
    [duration] = [e for e in emitted if isinstance(e, Measurement)]
    assert (duration.instrument, duration.value) == ("deepwork.workflow.duration", 5)
    assert not book.knows(SESSION)


def test_a_run_started_in_a_host_trace_sits_under_the_hosts_span() -> None:
    book = SessionBook()
    host = SpanRef(trace_id=0xABC, span_id=0xDEF)
    book.fold(started(), host)
    nested = started("s2", parent=SESSION)
    book.fold(StepBegunEvent(ts=at(1), session_id=SESSION, step_ids=["sub"]))
    book.fold(nested)
    emitted = fold_all(book, [AbortedEvent(ts=at(2), session_id="s2", reason="r")])
    inner = spans(emitted)["invoke_workflow j.w"]
    step_ref = book.review_parent(SESSION, "sub")
    assert step_ref is not None
    assert (inner.ref.trace_id, inner.parent_span_id) == (0xABC, step_ref.span_id)


def test_a_self_review_is_neither_a_span_nor_metered() -> None:
    book = SessionBook()
    book.fold(started())
    usage = ReviewUsageEvent(
        ts=at(1), session_id=SESSION, job="j", step_id="a", review="r", mode="self", outcome="x"
    )
    assert book.fold(usage) == []


def test_the_reserved_review_span_is_the_one_exported() -> None:
    book = SessionBook()
    book.fold(started())
    book.fold(StepBegunEvent(ts=at(1), session_id=SESSION, step_ids=["a"]))
    reserved = book.reserve_review(SESSION, "a", "r", None)
    assert reserved is not None
    usage = ReviewUsageEvent(
        ts=at(3),
        session_id=SESSION,
        job="j",
        step_id="a",
        review="r",
        outcome="passed",
        seconds=2.0,
        input_tokens=5,
        cache_read_tokens=7,
        output_tokens=3,
        cost_usd=0.5,
    )
    [span] = [e for e in book.fold(usage) if isinstance(e, SpanRecord)]
    assert span.ref == reserved
    assert span.start == at(1)
    assert span.attributes["gen_ai.usage.input_tokens"] == 12
    assert reserved.traceparent() == f"00-{reserved.trace_id:032x}-{reserved.span_id:016x}-01"


def test_a_codex_review_names_its_provider_and_carries_no_cost() -> None:
    book = SessionBook()
    book.fold(started())
    book.fold(StepBegunEvent(ts=at(1), session_id=SESSION, step_ids=["a"]))
    usage = ReviewUsageEvent(
        ts=at(3),
        session_id=SESSION,
        job="j",
        step_id="a",
        review="r",
        outcome="passed",
        seconds=2.0,
        output_tokens=3,
        cost_usd=None,
        runner="codex",
    )
    emitted = book.fold(usage)
    [span] = [e for e in emitted if isinstance(e, SpanRecord)]
    assert span.attributes["gen_ai.provider.name"] == "openai"
    assert "deepwork.review.cost_usd" not in span.attributes
    # Phoenix still prices its tokens; no cost of ours stands in for the one not reported.
    assert "llm.cost.total" not in span.attributes
    assert span.attributes["llm.provider"] == "openai"
    assert span.attributes["llm.token_count.completion"] == 3
    names_measured = [e.instrument for e in emitted if isinstance(e, Measurement)]
    assert "deepwork.review.cost" not in names_measured  # no cost reported: none measured
    assert names_measured  # the tokens and duration still are


def test_every_exported_name_is_a_convention_or_deepworks_own() -> None:
    """GenAI names are the pinned conventions', `error.type` the general one; the OpenInference
    names (what Phoenix prices a call by) are in OpenInference's namespaces; the rest DeepWork's."""
    operations = {value.value for value in gen_ai_attributes.GenAiOperationNameValues}
    attributes = {v for k, v in vars(gen_ai_attributes).items() if k.startswith("GEN_AI_")}
    metrics = {v for k, v in vars(gen_ai_metrics).items() if k.startswith("GEN_AI_")}
    values = {k: v for k, v in vars(names).items() if k.isupper() and isinstance(v, str)}
    assert names.INVOKE_WORKFLOW in operations
    assert names.INVOKE_AGENT in operations
    assert names.ERROR_TYPE == error_attributes.ERROR_TYPE
    values_not_names = {"INVOKE_WORKFLOW", "INVOKE_AGENT", "OI_KIND_LLM"}
    for key, value in values.items():
        if value.startswith("gen_ai."):
            known = metrics if key.startswith("M_") else attributes
            assert value in known, (key, value)
        elif key.startswith("OI_") and key not in values_not_names:
            assert value.startswith("openinference."), (key, value)
        elif key.startswith("LLM_"):
            assert value.startswith("llm."), (key, value)
        elif key.startswith("ERROR_") and key != "ERROR_TYPE":
            assert value.isidentifier(), (key, value)  # a code, never a sentence
        elif key not in values_not_names | {"ERROR_TYPE"}:
            assert value.startswith("deepwork."), (key, value)
    for metric in names.METRICS:
        assert metric in metrics or metric.startswith("deepwork."), metric


class _Refusing(SpanExporter):
    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        return SpanExportResult.FAILURE


def test_failed_exports_are_counted_and_logged_once(caplog: pytest.LogCaptureFixture) -> None:
    failures = ExportFailures()
    tracer_provider, meter_provider = build_providers(
        {}, failures, span_exporter=_Refusing(), metric_reader=InMemoryMetricReader()
    )
    tracer = tracer_provider.get_tracer("test")
    with caplog.at_level(logging.WARNING, logger="deepwork.telemetry"):
        for _ in range(3):
            tracer.start_span("deepwork.step s").end()
            tracer_provider.force_flush()
    tracer_provider.shutdown()
    meter_provider.shutdown()
    assert failures.spans == 3
    assert len([r for r in caplog.records if r.name == "deepwork.telemetry"]) == 1


def test_the_run_span_carries_its_jobs_version_from_the_projects_catalog(tmp_path: Path) -> None:
    root = make_project(tmp_path / "project")
    version_of = catalog_job_versions()
    assert version_of(root, "three_step") == "1.0.0"
    assert version_of(root, "no_such_job") is None
    book = SessionBook()
    book.fold(started(), job_version=version_of(root, "three_step"))
    emitted = book.fold(AbortedEvent(ts=at(1), session_id=SESSION, reason="r"))
    assert spans(emitted)["invoke_workflow j.w"].attributes["deepwork.job.version"] == "1.0.0"


def test_a_review_that_reports_after_its_checkpoint_was_answered_stays_under_that_checkpoint() -> (
    None
):
    book = SessionBook()
    book.fold(started())
    book.fold(StepBegunEvent(ts=at(1), session_id=SESSION, step_ids=["a"]))
    book.fold(OutputsSubmittedEvent(ts=at(2), session_id=SESSION, step_ids=["a"]))
    reserved = book.reserve_review(SESSION, "a", "r", None)
    assert reserved is not None
    refused = spans(
        book.fold(NeedsWorkEvent(ts=at(4), session_id=SESSION, step_ids=["a"], attempt=1))
    )["deepwork.checkpoint a"]
    assert reserved.span_id != refused.ref.span_id
    assert (refused.error, refused.attributes["deepwork.checkpoint.attempt"]) == ("needs_work", 1)
    book.fold(OutputsSubmittedEvent(ts=at(5), session_id=SESSION, step_ids=["a"]))
    usage = ReviewUsageEvent(
        ts=at(6), session_id=SESSION, job="j", step_id="a", review="r", outcome="failed"
    )
    review = spans(book.fold(usage))["invoke_agent r"]
    assert (review.ref.span_id, review.parent_span_id) == (reserved.span_id, refused.ref.span_id)
    assert review.error == "review_failed"


def test_a_checkpoint_open_when_its_step_is_left_ends_with_the_step() -> None:
    book = SessionBook()
    book.fold(started())
    book.fold(StepBegunEvent(ts=at(1), session_id=SESSION, step_ids=["a"]))
    book.fold(OutputsSubmittedEvent(ts=at(2), session_id=SESSION, step_ids=["a"]))
    emitted = spans(book.fold(AbortedEvent(ts=at(3), session_id=SESSION, reason="r")))
    checkpoint = emitted["deepwork.checkpoint a"]
    assert checkpoint.attributes["deepwork.checkpoint.outcome"] == "aborted"
    assert checkpoint.error is None  # an abort is the user's choice, not a failure
    assert checkpoint.parent_span_id == emitted["deepwork.step a"].ref.span_id
