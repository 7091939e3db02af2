"""No content leaves the process without DEEPWORK_OTEL_LOG_CONTENT=1, error texts included
(docs/telemetry.md): spans through the providers `deepwork serve` builds, to the SDK's in-memory
exporter."""

from __future__ import annotations

import pytest
from deepwork_core.base.error_codes import ErrorCode
from deepwork_core.base.errors import QualityGateError
from fastmcp.exceptions import ToolError
from fastmcp.server.telemetry import record_span_exception
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.trace import StatusCode

from tests.fixtures.telemetry_data import in_memory

FEEDBACK = "The report leaks the launch date of Project Falcon."


def exported(*, log_content: bool) -> list[ReadableSpan]:
    """A failed `tools/call` span as FastMCP records it, and a span that failed inside a `with`
    (the SDK records the exception), both quoting the reviewers' feedback; what is exported."""
    memory = in_memory(log_content=log_content)
    spans, tracer_provider = memory.spans, memory.tracer_provider
    meter_provider = memory.meter_provider
    tracer = tracer_provider.get_tracer("test")
    error = QualityGateError(
        f"the quality gate failed 3 times; the last feedback: {FEEDBACK}",
        code=ErrorCode.QUALITY_GATE_MAX_ATTEMPTS,
    )
    call = tracer.start_span("tools/call finished_step")
    record_span_exception(call, ToolError(f"{error.code}: {error.message}"))
    call.end()

    def fail_inside_a_span() -> None:
        with tracer.start_as_current_span("deepwork.step write") as step:
            step.set_attribute("error.type", str(error.code))
            step.add_event("deepwork.feedback", {"deepwork.content": FEEDBACK})
            raise error

    with pytest.raises(QualityGateError):
        fail_inside_a_span()
    tracer_provider.force_flush()
    found = list(spans.get_finished_spans())
    tracer_provider.shutdown()
    meter_provider.shutdown()
    return found


def texts(span: ReadableSpan) -> list[str]:
    """Every string a backend would show of `span`."""
    found = [str(value) for value in (span.attributes or {}).values()]
    found += [str(v) for event in span.events for v in (event.attributes or {}).values()]
    found.append(span.status.description or "")
    return found


def test_no_error_text_is_exported_without_the_opt_in() -> None:
    spans = exported(log_content=False)
    assert len(spans) == 2
    for span in spans:
        assert span.status.status_code is StatusCode.ERROR  # the failure still shows
        assert not [text for text in texts(span) if "Falcon" in text], span.name
        assert [event.name for event in span.events] == ["exception"]
        assert set(span.events[0].attributes or {}) <= {"exception.type", "exception.escaped"}
    by_name = {span.name: span for span in spans}
    assert by_name["tools/call finished_step"].status.description == "tool_error"
    assert by_name["deepwork.step write"].status.description == "quality_gate.max_attempts"


def test_the_opt_in_exports_error_texts_and_content() -> None:
    spans = exported(log_content=True)
    assert all([text for text in texts(span) if "Falcon" in text] for span in spans)
