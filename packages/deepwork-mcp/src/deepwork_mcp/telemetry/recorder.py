"""The event-log observer that turns a run's events into OpenTelemetry spans and metrics.

`Telemetry.observe` is the listener `deepwork serve` adds to the event log: it runs in the thread
of the tool call that wrote the event, folds the event (`runbook`) and hands what it completes to
the SDK, which queues it for its export thread. A session this process has not seen (the server
started again mid-run) is first read back from its log, without emitting what was already sent.
The run's `started` event takes the tool call's span as its parent when the host sent a
`traceparent` (FastMCP puts that call's span under it), so the whole run joins the host's trace;
without one, each call that writes a run's events is exported inside the run (`adoption`).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from importlib.metadata import version
from pathlib import Path
from typing import Final

from deepwork_core.base.errors import DeepWorkError
from deepwork_core.base.identifiers import SessionId
from deepwork_core.state.event_kinds import ApprovalEvent, KnownEvent, OtherEvent, StartedEvent
from deepwork_core.state.events import add_event_listener, read_events
from deepwork_core.state.store.port import Store
from opentelemetry import metrics, trace
from opentelemetry.context import Context
from opentelemetry.metrics import Counter, Histogram
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.trace import (
    NonRecordingSpan,
    SpanContext,
    SpanKind,
    Status,
    StatusCode,
    TraceFlags,
)

from deepwork_mcp.telemetry import names
from deepwork_mcp.telemetry.adoption import CallAdoptions, current_call
from deepwork_mcp.telemetry.emissions import Emission, Measurement, SpanRecord
from deepwork_mcp.telemetry.exporting import ExportFailures, build_providers
from deepwork_mcp.telemetry.forced_ids import ForcedIdGenerator
from deepwork_mcp.telemetry.ids import SpanRef
from deepwork_mcp.telemetry.runbook import SessionBook

INSTRUMENTATION: str = "deepwork"
#: How long `shutdown` waits for the exporters to send what is still queued: an endpoint that
#: is down or answers 503 (which the OTLP exporter retries for its whole timeout) costs the
#: server's exit no more than this.
SHUTDOWN_SECONDS: Final = 2.0

logger = logging.getLogger("deepwork.telemetry")

#: The version of a job of a project (None: unknown), for the run's span.
JobVersion = Callable[[Path, str], str | None]


def catalog_job_versions(additional_jobs_folders: Sequence[Path] = ()) -> JobVersion:
    """Job versions as the project's job catalog finds them (one catalog per project)."""
    from deepwork_core import JobCatalog

    catalogs: dict[Path, JobCatalog] = {}
    lock = threading.Lock()

    def version_of(project_root: Path, job: str) -> str | None:
        with lock:
            catalog = catalogs.get(project_root)
            if catalog is None:
                catalog = JobCatalog.for_project(project_root, additional_jobs_folders)
                catalogs[project_root] = catalog
        try:
            version = catalog.get(job).definition.version
        except DeepWorkError:
            return None
        return None if version is None else str(version)

    return version_of


class Telemetry:
    """Spans and metrics of the runs this process serves, from their event logs."""

    def __init__(
        self,
        tracer_provider: TracerProvider,
        meter_provider: MeterProvider,
        failures: ExportFailures | None = None,
        *,
        platform: str | None = None,
        log_content: bool = False,
        job_version: JobVersion | None = None,
        adoptions: CallAdoptions | None = None,
    ) -> None:
        self.tracer_provider, self.meter_provider = tracer_provider, meter_provider
        #: Where the tool calls without the host's trace are exported (`adoption`); the same
        #: object the span exporter was built with.
        self.adoptions = adoptions
        self.job_version = job_version
        self.failures = failures if failures is not None else ExportFailures()
        self.book = SessionBook(platform=platform, log_content=log_content)
        self._lock = threading.Lock()
        ids = tracer_provider.id_generator
        self._ids = ids if isinstance(ids, ForcedIdGenerator) else None
        self._tracer = tracer_provider.get_tracer(INSTRUMENTATION, version("deepwork-mcp"))
        meter = meter_provider.get_meter(INSTRUMENTATION, version("deepwork-mcp"))
        self._instruments: dict[str, Counter | Histogram] = {}
        for name, (kind, unit, description) in names.METRICS.items():
            make = meter.create_counter if kind == "counter" else meter.create_histogram
            self._instruments[name] = make(name, unit=unit, description=description)
        self._remove: list[object] = []

    @classmethod
    def start(
        cls,
        env: Mapping[str, str],
        *,
        platform: str | None,
        log_content: bool,
        job_version: JobVersion | None = None,
    ) -> Telemetry:
        """OTLP export configured from `env`, as the process's global providers (so FastMCP's
        tool-call spans go out too), following the event log from now on."""
        failures, adoptions = ExportFailures(), CallAdoptions()
        tracer_provider, meter_provider = build_providers(
            env, failures, log_content=log_content, adoptions=adoptions
        )
        trace.set_tracer_provider(tracer_provider)
        metrics.set_meter_provider(meter_provider)
        telemetry = cls(
            tracer_provider,
            meter_provider,
            failures,
            platform=platform,
            log_content=log_content,
            job_version=job_version,
            adoptions=adoptions,
        )
        telemetry.install()
        return telemetry

    def install(self) -> None:
        """Follow the event log (`add_event_listener`)."""
        self._remove.append(add_event_listener(self.observe))

    def shutdown(self, timeout_s: float = SHUTDOWN_SECONDS) -> None:
        """Stop following the log and send what is queued, waiting at most `timeout_s`: what
        the exporters have not sent by then is dropped, and said so once on stderr."""
        for remove in self._remove:
            if callable(remove):
                remove()
        self._remove.clear()
        # In a daemon thread: an exporter still retrying when the time is up ends with the process.
        stopping = threading.Thread(
            target=self._stop_providers, args=(timeout_s,), name="deepwork-otel-stop", daemon=True
        )
        stopping.start()
        stopping.join(timeout_s)
        if stopping.is_alive():
            logger.warning(
                "telemetry: the OpenTelemetry endpoint took more than %.0f s to take the last "
                "spans and metrics; they were dropped",
                timeout_s,
            )

    def _stop_providers(self, timeout_s: float) -> None:
        self.tracer_provider.shutdown()
        self.meter_provider.shutdown(timeout_millis=timeout_s * 1000)

    def observe(self, store: Store, event: KnownEvent) -> None:
        """The listener: fold `event` (written to `store`) and emit the spans and measurements
        it completes."""
        host = version = None
        if isinstance(event, StartedEvent):
            host = _host_span()
            if self.job_version is not None:
                version = self.job_version(Path(store.project.root), event.job)
        call = current_call() if self.adoptions is not None else None
        with self._lock:
            self._catch_up(store, event)
            self._decided_elsewhere(store, event)
            # The step a call acts on, before the event may end it; a run's start, after.
            parent = None if call is None else self.book.call_parent(event)
            self._emit(self.book.fold(event, host, version))
            if call is not None and parent is None:
                parent = self.book.call_parent(event)
        if call is not None and parent is not None and self.adoptions is not None:
            self.adoptions.adopt(call, parent)

    def _emit(self, emissions: list[Emission]) -> None:
        for emission in emissions:
            if isinstance(emission, SpanRecord):
                self._emit_span(emission)
            else:
                self._measure(emission)

    def _decided_elsewhere(self, store: Store, event: KnownEvent) -> None:
        """Fold the approvals `deepwork approve` (another process) logged since the request."""
        if isinstance(event, ApprovalEvent) or not self.book.awaits_approval(event.session_id):
            return
        try:
            logged = read_events(store, event.session_id)
        except DeepWorkError:
            return
        for past in logged:
            if isinstance(past, ApprovalEvent) and self.book.awaits_approval(
                past.session_id, past.request_id
            ):
                self._emit(self.book.fold(past))

    def reviewer_env(
        self, session_id: str, step_id: str, review: str, target_file: str | None
    ) -> dict[str, str]:
        """`TRACEPARENT` for a reviewer process, the span its review call will be exported as,
        and the host's `TRACESTATE` when the run joined a host trace that had one."""
        with self._lock:
            ref = self.book.reserve_review(session_id, step_id, review, target_file)
        if ref is None:
            return {}
        env = {"TRACEPARENT": ref.traceparent()}
        if ref.state:
            env["TRACESTATE"] = ref.state
        return env

    # -- catching up after a restart ------------------------------------------------------

    def _catch_up(self, store: Store, event: KnownEvent) -> None:
        wanted: list[SessionId] = []
        if isinstance(event, StartedEvent):
            if event.parent_session_id is not None:
                wanted.append(event.parent_session_id)
        else:
            wanted.append(event.session_id)
            reviewed = getattr(event, "reviewed_session_id", None)
            if isinstance(reviewed, str):  # the id of a session the log names
                wanted.append(SessionId(reviewed))
        seen: set[str] = set()
        for session_id in wanted:
            self._replay(store, session_id, event, seen)

    def _replay(
        self, store: Store, session_id: SessionId, stop: KnownEvent, seen: set[str]
    ) -> None:
        """Fold `session_id`'s logged events (up to `stop`) without emitting anything."""
        if self.book.knows(session_id) or session_id in seen:
            return
        seen.add(session_id)
        try:
            past = read_events(store, session_id)
        except DeepWorkError:
            return
        for logged in past:
            if logged == stop:
                break
            if isinstance(logged, OtherEvent):
                continue
            if isinstance(logged, StartedEvent) and logged.parent_session_id is not None:
                self._replay(store, logged.parent_session_id, stop, seen)
            self.book.fold(logged)

    # -- emitting -------------------------------------------------------------------------

    def _emit_span(self, record: SpanRecord) -> None:
        context = Context()
        if record.parent_span_id is not None:
            parent = SpanContext(
                record.ref.trace_id,
                record.parent_span_id,
                is_remote=True,
                trace_flags=TraceFlags(TraceFlags.SAMPLED),
            )
            context = trace.set_span_in_context(NonRecordingSpan(parent), context)
        attributes = dict(record.attributes)
        if record.error is not None:
            attributes[names.ERROR_TYPE] = record.error
        if self._ids is None:
            return
        with self._ids.forced(record.ref.trace_id, record.ref.span_id):
            span = self._tracer.start_span(
                record.name,
                context=context,
                kind=SpanKind.INTERNAL,
                attributes=attributes,
                start_time=_nanos(record.start),
            )
        end = _nanos(record.end)
        for name, event_attributes in record.events:
            span.add_event(name, event_attributes, timestamp=end)
        if record.error is not None:
            span.set_status(Status(StatusCode.ERROR, record.error))
        span.end(end_time=end)

    def _measure(self, measurement: Measurement) -> None:
        instrument = self._instruments[measurement.instrument]
        if isinstance(instrument, Counter):
            instrument.add(measurement.value, measurement.attributes)
        else:
            instrument.record(measurement.value, measurement.attributes)


def _host_span() -> SpanRef | None:
    """The current tool call's span, when the host placed the call in its own trace."""
    span = trace.get_current_span()
    context = span.get_span_context()
    if not context.is_valid or getattr(span, "parent", None) is None:
        return None
    return SpanRef(context.trace_id, context.span_id, context.trace_state.to_header())


def _nanos(moment: datetime) -> int:
    return int(moment.timestamp() * 1_000_000_000)
