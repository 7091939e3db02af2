"""What leaves the process without `DEEPWORK_OTEL_LOG_CONTENT=1`: no content (docs/telemetry.md).

An error's text can quote content: `quality_gate.max_attempts` names the reviewers' feedback,
and the SDK (FastMCP's `tools/call` span among them) records an exception with its message and
stack trace, and sets the span's status to the message. `Redacted` wraps the span exporter and
sends each span with its exception events reduced to the exception's type, its status
description to the span's `error.type` (a code, never a sentence), and its `deepwork.content`
events dropped: the failure stays visible, what it said does not.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from opentelemetry.sdk.trace import Event, ReadableSpan
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult
from opentelemetry.trace import Status, StatusCode

from deepwork_mcp.telemetry.copies import rebuilt

#: Attributes of an `exception` event that name what failed without quoting it.
_KEPT: Final = frozenset({"exception.type", "exception.escaped"})
#: The attribute of DeepWork's own content events (the opt-in's only carrier).
CONTENT_ATTRIBUTE: Final = "deepwork.content"


def redact(span: ReadableSpan) -> ReadableSpan:
    """`span` without the texts of its errors and without content events."""
    events = []
    for event in span.events:
        attributes = dict(event.attributes or {})
        if CONTENT_ATTRIBUTE in attributes:
            continue
        if event.name == "exception":
            attributes = {k: v for k, v in attributes.items() if k in _KEPT}
        events.append(Event(event.name, attributes, timestamp=event.timestamp))
    status = span.status
    if status.status_code is StatusCode.ERROR and status.description:
        code = (span.attributes or {}).get("error.type")
        status = Status(StatusCode.ERROR, str(code) if code is not None else None)
    return rebuilt(span, events=events, status=status)


class Redacted(SpanExporter):
    """Exports through `inner` what `redact` leaves of each span."""

    def __init__(self, inner: SpanExporter) -> None:
        self._inner = inner

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        return self._inner.export([redact(span) for span in spans])

    def shutdown(self) -> None:
        self._inner.shutdown()

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return self._inner.force_flush(timeout_millis)
