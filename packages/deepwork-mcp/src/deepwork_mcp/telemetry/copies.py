"""A finished span with some of its fields replaced, for the exporter wrappers that send a span
otherwise than the SDK recorded it (`redaction`, `adoption`)."""

from __future__ import annotations

from collections.abc import Sequence

from opentelemetry.sdk.trace import Event, ReadableSpan
from opentelemetry.trace import SpanContext, Status


def rebuilt(
    span: ReadableSpan,
    *,
    context: SpanContext | None = None,
    parent: SpanContext | None = None,
    events: Sequence[Event] | None = None,
    status: Status | None = None,
) -> ReadableSpan:
    """`span` with the fields given replaced (`parent` None: kept)."""
    return ReadableSpan(
        span.name,
        context=context if context is not None else span.context,
        parent=parent if parent is not None else span.parent,
        resource=span.resource,
        attributes=span.attributes,
        events=events if events is not None else span.events,
        links=span.links,
        kind=span.kind,
        status=status if status is not None else span.status,
        start_time=span.start_time,
        end_time=span.end_time,
        instrumentation_scope=span.instrumentation_scope,
    )
