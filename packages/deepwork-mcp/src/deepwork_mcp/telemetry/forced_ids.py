"""An id generator that hands out chosen ids when asked to, and random ones otherwise.

The SDK asks its id generator for a span's ids when the span starts; `RunRecorder` starts each
span of a run inside `forced(trace_id, span_id)` so the span gets the id derived from its
session (`ids`), and every other span (FastMCP's tool-call spans) gets a random one.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

from opentelemetry.sdk.trace.id_generator import IdGenerator, RandomIdGenerator


class ForcedIdGenerator(IdGenerator):
    def __init__(self) -> None:
        self._random = RandomIdGenerator()
        self._local = threading.local()

    @contextmanager
    def forced(self, trace_id: int, span_id: int) -> Iterator[None]:
        self._local.ids = (trace_id, span_id)
        try:
            yield
        finally:
            self._local.ids = None

    def _ids(self) -> tuple[int, int] | None:
        ids: tuple[int, int] | None = getattr(self._local, "ids", None)
        return ids

    def generate_span_id(self) -> int:
        ids = self._ids()
        return ids[1] if ids is not None else self._random.generate_span_id()

    def generate_trace_id(self) -> int:
        ids = self._ids()
        return ids[0] if ids is not None else self._random.generate_trace_id()
