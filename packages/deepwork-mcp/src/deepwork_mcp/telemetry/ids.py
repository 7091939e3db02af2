"""Trace and span ids derived from session ids, so a run's spans fit together across processes.

A run that a host did not place in its own trace gets the trace id `trace_id_for(run_id)`; every
workflow and step span id is a hash of the session id, the step and the run of the step, so a
server started again mid-run ends the spans the first one began, under the same ids.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass


def _digest(*parts: object) -> bytes:
    text = "\x1f".join(str(part) for part in parts)
    return hashlib.sha256(text.encode()).digest()


def trace_id_for(run_id: str) -> int:
    """The 128-bit trace id of a run that joined no host trace."""
    return int.from_bytes(_digest("deepwork.trace", run_id)[:16], "big") or 1


def span_id_for(*parts: object) -> int:
    """A 64-bit span id for what `parts` name (never 0, the invalid id)."""
    return int.from_bytes(_digest("deepwork.span", *parts)[:8], "big") or 1


@dataclass(frozen=True, slots=True)
class SpanRef:
    """Where a span sits: its trace and its own id."""

    trace_id: int
    span_id: int
    #: The W3C `tracestate` that came with the host's trace ("" when none).
    state: str = ""

    def traceparent(self) -> str:
        """The W3C `traceparent` naming this span as the parent (sampled)."""
        return f"00-{self.trace_id:032x}-{self.span_id:016x}-01"
