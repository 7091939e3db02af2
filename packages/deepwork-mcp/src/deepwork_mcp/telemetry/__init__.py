"""OpenTelemetry export of workflow runs, reviews and approvals (docs/telemetry.md).

Telemetry observes what the engine already records: every event appended to a session's log
(`deepwork_core.state.events.add_event_listener`) is folded into spans and metrics here. Only
`switch` is imported by `deepwork serve` when telemetry is off, and it imports no part of the
OpenTelemetry SDK; `ids` and `runbook` are plain Python; `exporting` and `recorder` load the SDK.
"""
