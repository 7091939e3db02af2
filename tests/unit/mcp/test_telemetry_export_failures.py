"""What a person reads when the OTLP endpoint refuses DeepWork's telemetry: the HTTP status it
answered and how to stop sending what it does not take (docs/telemetry.md). Against a real HTTP
endpoint on 127.0.0.1 that refuses every export."""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from deepwork_mcp.telemetry.exporting import ExportFailures, build_providers


class _Refuses(BaseHTTPRequestHandler):
    """An endpoint without the path asked for (a traces-only backend asked for metrics)."""

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length", "0")))
        self.send_response(404)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, format: str, *args: object) -> None:
        """Quiet: nothing on the test's stderr."""


@pytest.fixture
def endpoint() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Refuses)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()
    thread.join()


def test_a_refused_export_names_the_status_and_the_switch(
    endpoint: str, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """Issue 43, item 21: the warning named neither the HTTP status nor the fix."""
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint)
    failures = ExportFailures()
    tracer_provider, meter_provider = build_providers(
        {"OTEL_EXPORTER_OTLP_ENDPOINT": endpoint}, failures
    )
    with caplog.at_level(logging.WARNING, logger="deepwork.telemetry"):
        for _ in range(2):
            tracer_provider.get_tracer("test").start_span("deepwork.step s").end()
            tracer_provider.force_flush()
        meter_provider.get_meter("test").create_counter("deepwork.test").add(1)
        meter_provider.force_flush()
    tracer_provider.shutdown()
    meter_provider.shutdown()
    warnings = [r.getMessage() for r in caplog.records if r.name == "deepwork.telemetry"]
    assert failures.spans == 2
    assert failures.metric_batches >= 1  # at the flush, and again at the shutdown
    # One warning per signal, each with the status and the variable that stops sending it.
    assert len(warnings) == 2, warnings
    spans, metrics = warnings
    assert "answered HTTP 404 to spans" in spans
    assert "OTEL_TRACES_EXPORTER=none" in spans
    assert "answered HTTP 404 to metrics" in metrics
    assert "OTEL_METRICS_EXPORTER=none" in metrics
