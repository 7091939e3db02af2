"""The OpenTelemetry SDK's providers and OTLP exporters, configured the standard way.

Exporters read the standard variables themselves (`OTEL_EXPORTER_OTLP_ENDPOINT`, `_PROTOCOL`,
`_HEADERS`, `_TIMEOUT` and their per-signal forms); the resource takes `OTEL_SERVICE_NAME` (else
`deepwork`) and `OTEL_RESOURCE_ATTRIBUTES`. Spans go through a batching processor with a bounded
queue and metrics through a periodic reader, both on the SDK's own threads, so an exporter that is
down or slow never holds up a tool call. Failed exports are counted, and the first failure of
each signal is logged with the endpoint's HTTP status and the way out (docs/telemetry.md).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping, Sequence
from typing import Final

import requests
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import (
    MetricExporter,
    MetricExportResult,
    MetricReader,
    MetricsData,
    PeriodicExportingMetricReader,
)
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult

from deepwork_mcp.telemetry.adoption import Adopting, CallAdoptions
from deepwork_mcp.telemetry.forced_ids import ForcedIdGenerator
from deepwork_mcp.telemetry.redaction import Redacted

logger = logging.getLogger("deepwork.telemetry")

DEFAULT_SERVICE_NAME: Final = "deepwork"
#: Spans waiting for export beyond this are dropped (and the SDK says so once).
MAX_QUEUED_SPANS: Final = 2048
_OTLP_LOGGERS: Final = (
    "opentelemetry.exporter.otlp.proto.http.trace_exporter",
    "opentelemetry.exporter.otlp.proto.http.metric_exporter",
    "opentelemetry.exporter.otlp.proto.http._common",
)


class ExportFailures:
    """Counts what could not be exported; logs the first failure of each signal only, with the
    HTTP status the endpoint answered (seen through `session`) and how to stop sending it."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.spans = 0
        self.metric_batches = 0
        self._statuses: dict[str, int] = {}

    def session(self, signal: str) -> requests.Session:
        """The HTTP session an OTLP exporter of `signal` sends with; it notes refusals."""
        session = requests.Session()

        def note(response: requests.Response, *_args: object, **_kwargs: object) -> None:
            if response.status_code >= 400:
                with self._lock:
                    self._statuses[signal] = response.status_code

        session.hooks["response"].append(note)
        return session

    def failed(self, signal: str, count: int) -> None:
        with self._lock:
            first = (self.spans if signal == "spans" else self.metric_batches) == 0
            if signal == "spans":
                self.spans += count
            else:
                self.metric_batches += count
            status = self._statuses.get(signal)
        if first:
            logger.warning("%s", failure_text(signal, status))


def failure_text(signal: str, status: int | None) -> str:
    """The warning of the first failed export of `signal` ("spans" or "metrics")."""
    named = "traces" if signal == "spans" else "metrics"
    answer = (
        f"the OTLP endpoint answered HTTP {status} to {signal}"
        if status is not None
        else f"the OTLP endpoint did not take the {signal} (no answer, or it timed out)"
    )
    return (
        f"telemetry: {answer}; if the backend takes no {named}, set "
        f"OTEL_{named.upper()}_EXPORTER=none, else check OTEL_EXPORTER_OTLP_ENDPOINT and its "
        "headers. Later failures are counted, not logged (tool calls are not affected)"
    )


class _CountedSpans(SpanExporter):
    def __init__(self, inner: SpanExporter, failures: ExportFailures) -> None:
        self._inner, self._failures = inner, failures

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        try:
            result = self._inner.export(spans)
        except Exception:  # an exporter's bug must not kill the export thread
            result = SpanExportResult.FAILURE
        if result is not SpanExportResult.SUCCESS:
            self._failures.failed("spans", len(spans))
        return result

    def shutdown(self) -> None:
        self._inner.shutdown()

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return self._inner.force_flush(timeout_millis)


class _CountedMetrics(MetricExporter):
    def __init__(self, inner: MetricExporter, failures: ExportFailures) -> None:
        super().__init__(
            preferred_temporality=inner._preferred_temporality,
            preferred_aggregation=inner._preferred_aggregation,
        )
        self._inner, self._failures = inner, failures

    def export(
        self, metrics_data: MetricsData, timeout_millis: float = 10_000, **kwargs: object
    ) -> MetricExportResult:
        try:
            result = self._inner.export(metrics_data, timeout_millis=timeout_millis)
        except Exception:  # as above
            result = MetricExportResult.FAILURE
        if result is not MetricExportResult.SUCCESS:
            self._failures.failed("metrics", 1)
        return result

    def force_flush(self, timeout_millis: float = 10_000) -> bool:
        return self._inner.force_flush(timeout_millis)

    def shutdown(self, timeout_millis: float = 30_000, **kwargs: object) -> None:
        self._inner.shutdown(timeout_millis=timeout_millis)


def resource_for(env: Mapping[str, str]) -> Resource:
    """`OTEL_SERVICE_NAME` (else `deepwork`) and `OTEL_RESOURCE_ATTRIBUTES`."""
    attributes = {} if env.get("OTEL_SERVICE_NAME") else {"service.name": DEFAULT_SERVICE_NAME}
    return Resource.create(attributes)


def build_providers(
    env: Mapping[str, str],
    failures: ExportFailures,
    *,
    span_exporter: SpanExporter | None = None,
    metric_reader: MetricReader | None = None,
    log_content: bool = False,
    adoptions: CallAdoptions | None = None,
) -> tuple[TracerProvider, MeterProvider]:
    """The tracer and meter providers; OTLP/HTTP exporters unless others are given (tests).
    Without `log_content` every span is exported redacted (`telemetry.redaction`); with
    `adoptions`, the tool calls they name are exported in their run's trace (`adoption`)."""
    for name in _OTLP_LOGGERS:  # ExportFailures says it once instead of every batch
        logging.getLogger(name).setLevel(logging.CRITICAL)
    resource = resource_for(env)
    if span_exporter is None and not _switched_off(env, "TRACES"):
        span_exporter = _otlp_spans(env, failures)
    # No shutdown of their own at exit: `Telemetry.shutdown` stops them, bounded in time.
    tracer_provider = TracerProvider(
        resource=resource, id_generator=ForcedIdGenerator(), shutdown_on_exit=False
    )
    if span_exporter is not None:
        if not log_content:
            span_exporter = Redacted(span_exporter)
        if adoptions is not None:
            span_exporter = Adopting(span_exporter, adoptions)
        counted = _CountedSpans(span_exporter, failures)
        tracer_provider.add_span_processor(
            BatchSpanProcessor(counted, max_queue_size=MAX_QUEUED_SPANS)
        )
    if metric_reader is None and not _switched_off(env, "METRICS"):
        # Every OTEL_METRIC_EXPORT_INTERVAL (the SDK's default: 60 s), and when the server stops.
        exporter = _CountedMetrics(_otlp_metrics(env, failures), failures)
        metric_reader = PeriodicExportingMetricReader(exporter)
    readers = [] if metric_reader is None else [metric_reader]
    meter_provider = MeterProvider(
        resource=resource, metric_readers=readers, shutdown_on_exit=False
    )
    return tracer_provider, meter_provider


def _switched_off(env: Mapping[str, str], signal: str) -> bool:
    """`OTEL_TRACES_EXPORTER=none` or `OTEL_METRICS_EXPORTER=none`: that signal is not sent."""
    return env.get(f"OTEL_{signal}_EXPORTER", "").strip().lower() == "none"


def _protocol(env: Mapping[str, str], signal: str) -> str:
    specific = env.get(f"OTEL_EXPORTER_OTLP_{signal}_PROTOCOL")
    return (specific or env.get("OTEL_EXPORTER_OTLP_PROTOCOL") or "http/protobuf").strip()


def _otlp_spans(env: Mapping[str, str], failures: ExportFailures) -> SpanExporter:
    _check_protocol(env, "TRACES")
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

    return OTLPSpanExporter(session=_session(env, "TRACES", failures))


def _otlp_metrics(env: Mapping[str, str], failures: ExportFailures) -> MetricExporter:
    _check_protocol(env, "METRICS")
    from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter

    return OTLPMetricExporter(session=_session(env, "METRICS", failures))


def _session(
    env: Mapping[str, str], signal: str, failures: ExportFailures
) -> requests.Session | None:
    """The session that notes the endpoint's refusals; None (the SDK's own) where the
    environment names a credential provider that makes the session."""
    if env.get(f"OTEL_PYTHON_EXPORTER_OTLP_HTTP_{signal}_CREDENTIAL_PROVIDER") or env.get(
        "OTEL_PYTHON_EXPORTER_OTLP_HTTP_CREDENTIAL_PROVIDER"
    ):
        return None
    return failures.session("spans" if signal == "TRACES" else "metrics")


def _check_protocol(env: Mapping[str, str], signal: str) -> None:
    if _protocol(env, signal) != "http/protobuf":
        logger.warning(
            "telemetry: DeepWork exports over OTLP http/protobuf only; %s is ignored "
            "(point OTEL_EXPORTER_OTLP_ENDPOINT at the collector's HTTP port, usually 4318)",
            _protocol(env, signal),
        )
