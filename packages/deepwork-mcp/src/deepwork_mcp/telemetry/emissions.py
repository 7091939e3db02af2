"""What the fold of a session's events emits (`deepwork_mcp.telemetry.runbook`) and the
recorder hands to the SDK (docs/telemetry.md): a finished span or one measurement, with their
attributes."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from deepwork_mcp.telemetry.ids import SpanRef

#: Attribute values a span or measurement carries.
AttrValue = str | int | float | bool
Attrs = dict[str, AttrValue]


@dataclass(frozen=True, slots=True)
class SpanRecord:
    """One finished span: where it sits, when it ran, what it says."""

    name: str
    ref: SpanRef
    parent_span_id: int | None
    start: datetime
    end: datetime
    attributes: Attrs
    error: str | None = None
    #: (name, attributes) of span events, content only (`log_content`).
    events: tuple[tuple[str, Attrs], ...] = ()


@dataclass(frozen=True, slots=True)
class Measurement:
    """One value for one instrument (`names.METRICS`)."""

    instrument: str
    value: float
    attributes: Attrs


Emission = SpanRecord | Measurement
