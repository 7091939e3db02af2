"""Tool calls that came without the host's trace are exported inside the run they acted on.

FastMCP opens each `tools/call` span before DeepWork knows which run the call is about, so a
call without a `traceparent` from the host starts a trace of its own: a backend would list every
MCP call as a trace beside the run's. When such a call writes an event of a run, the recorder
notes the run's span it belongs under (`CallAdoptions.adopt`: the step it acted on, else the
run's own span), and `Adopting`, in the export chain, sends the call's span (and any span under
it) in the run's trace, as a child of that span (docs/telemetry.md, "Tool calls"). A call that
wrote no event, and every call the host placed in its own trace, is exported as recorded.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Sequence
from typing import Final

from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult
from opentelemetry.trace import SpanContext

from deepwork_mcp.telemetry.copies import rebuilt
from deepwork_mcp.telemetry.ids import SpanRef

#: Calls noted and not yet exported beyond this are forgotten, oldest first (exported as they are).
MAX_PENDING: Final = 4096


def current_call() -> SpanContext | None:
    """The span of the tool call running in this context, when it is the root of a trace of its
    own (no host trace): the one span `adopt` may move."""
    span = trace.get_current_span()
    context = span.get_span_context()
    if not context.is_valid or not span.is_recording():
        return None
    return context if getattr(span, "parent", None) is None else None


class CallAdoptions:
    """Which root trace of a tool call goes into which run's trace, under which span."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        #: The call's own trace id -> (its span id, the run's span it goes under).
        self._calls: OrderedDict[int, tuple[int, SpanRef]] = OrderedDict()

    def adopt(self, call: SpanContext, parent: SpanRef) -> None:
        """Export the trace of `call` under `parent` (the first run a call writes to wins)."""
        with self._lock:
            if call.trace_id in self._calls:
                return
            self._calls[call.trace_id] = (call.span_id, parent)
            while len(self._calls) > MAX_PENDING:
                self._calls.popitem(last=False)

    def move(self, span: ReadableSpan) -> ReadableSpan:
        """`span` as it is exported: in the run's trace when its call was adopted."""
        context = span.context
        if context is None:
            return span
        with self._lock:
            adopted = self._calls.get(context.trace_id)
            if adopted is not None and adopted[0] == context.span_id:
                del self._calls[context.trace_id]  # the call's span ends after the ones under it
        if adopted is None:
            return span
        call_span_id, parent = adopted
        moved = SpanContext(
            parent.trace_id, context.span_id, False, context.trace_flags, context.trace_state
        )
        if context.span_id == call_span_id:
            above = SpanContext(parent.trace_id, parent.span_id, False, context.trace_flags)
        elif span.parent is not None:
            above = SpanContext(
                parent.trace_id, span.parent.span_id, False, span.parent.trace_flags
            )
        else:
            return span
        return rebuilt(span, context=moved, parent=above)


class Adopting(SpanExporter):
    """Exports through `inner` each span where `adoptions` puts it."""

    def __init__(self, inner: SpanExporter, adoptions: CallAdoptions) -> None:
        self._inner, self._adoptions = inner, adoptions

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        return self._inner.export([self._adoptions.move(span) for span in spans])

    def shutdown(self) -> None:
        self._inner.shutdown()

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return self._inner.force_flush(timeout_millis)
