"""Tool calls without the host's trace are exported in the run's trace (deepwork_mcp.telemetry.
adoption, docs/telemetry.md): through the providers `deepwork serve` builds, to the SDK's
in-memory exporter."""

from __future__ import annotations

from deepwork_mcp.telemetry.adoption import CallAdoptions, current_call
from deepwork_mcp.telemetry.ids import SpanRef
from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import NonRecordingSpan, SpanContext, TraceFlags

from tests.fixtures.telemetry_data import in_memory

RUN = SpanRef(0x1234, 0x99)


def providers(adoptions: CallAdoptions) -> tuple[TracerProvider, InMemorySpanExporter]:
    memory = in_memory(adoptions=adoptions)
    return memory.tracer_provider, memory.spans


def by_name(spans: InMemorySpanExporter) -> dict[str, ReadableSpan]:
    return {span.name: span for span in spans.get_finished_spans()}


def test_an_adopted_call_and_the_spans_under_it_go_into_the_runs_trace() -> None:
    adoptions = CallAdoptions()
    tracer_provider, spans = providers(adoptions)
    tracer = tracer_provider.get_tracer("test")
    with tracer.start_as_current_span("tools/call finished_step") as call:
        found = current_call()
        assert found == call.get_span_context()
        adoptions.adopt(found, RUN)
        adoptions.adopt(found, SpanRef(0x5678, 0x77))  # the first run a call writes to wins
        with tracer.start_as_current_span("inside"):
            pass
    with tracer.start_as_current_span("tools/call get_workflows"):
        pass  # wrote no event: not adopted
    tracer_provider.force_flush()
    exported = by_name(spans)
    moved, inside = exported["tools/call finished_step"], exported["inside"]
    assert moved.context is not None
    assert inside.context is not None
    assert (moved.context.trace_id, moved.context.span_id) == (
        0x1234,
        call.get_span_context().span_id,
    )
    assert moved.parent is not None
    assert (moved.parent.trace_id, moved.parent.span_id) == (0x1234, 0x99)
    assert inside.context.trace_id == 0x1234
    assert inside.parent is not None
    assert inside.parent.span_id == moved.context.span_id
    alone = exported["tools/call get_workflows"]
    assert alone.context is not None
    assert alone.context.trace_id != 0x1234
    assert alone.parent is None


def test_a_call_the_host_placed_in_its_trace_is_never_adopted() -> None:
    tracer_provider, _ = providers(CallAdoptions())
    host = SpanContext(0xABC, 0xDEF, is_remote=True, trace_flags=TraceFlags(TraceFlags.SAMPLED))
    context = trace.set_span_in_context(NonRecordingSpan(host))
    with tracer_provider.get_tracer("test").start_as_current_span("tools/call", context=context):
        assert current_call() is None
    assert current_call() is None  # no call at all
