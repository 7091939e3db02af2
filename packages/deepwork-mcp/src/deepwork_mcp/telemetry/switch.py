"""Whether telemetry is on, and starting it: the only part `deepwork serve` imports when it is off.

Telemetry is on when `DEEPWORK_OTEL=1` or a standard OTLP endpoint variable is set, and off when
`OTEL_SDK_DISABLED=true` (docs/telemetry.md). Nothing of the OpenTelemetry SDK is imported
before that is decided; with the `deepwork[otel]` extra missing, one warning says so and the
server runs without telemetry.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    from deepwork_mcp.telemetry.recorder import Telemetry

SWITCH_ENV: Final = "DEEPWORK_OTEL"
CONTENT_ENV: Final = "DEEPWORK_OTEL_LOG_CONTENT"
ENDPOINT_ENVS: Final = (
    "OTEL_EXPORTER_OTLP_ENDPOINT",
    "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
    "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT",
)
_TRUE: Final = frozenset({"1", "true", "yes", "on"})
MISSING_EXTRA: Final = (
    "warning: telemetry was asked for ({why}) but the OpenTelemetry SDK is not installed; "
    "install the deepwork[otel] extra of this DeepWork (from a clone: `uvx --from "
    "'<clone>[otel]' deepwork serve`; not PyPI's `deepwork` before this release is there). The "
    "server runs without telemetry."
)


@dataclass(frozen=True, slots=True)
class TelemetrySwitch:
    """What the environment asks for."""

    enabled: bool
    #: Which variable switched it on (for the warning).
    reason: str = ""
    #: Prompts, briefs, outputs and feedback are exported only when this is set.
    log_content: bool = False


def telemetry_switch(env: Mapping[str, str]) -> TelemetrySwitch:
    """Read the switch from `env` (the CLI passes `os.environ`)."""
    content = env.get(CONTENT_ENV, "").strip().lower() in _TRUE
    if env.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return TelemetrySwitch(enabled=False)
    if env.get(SWITCH_ENV, "").strip().lower() in _TRUE:
        return TelemetrySwitch(enabled=True, reason=f"{SWITCH_ENV}=1", log_content=content)
    for name in ENDPOINT_ENVS:
        if env.get(name, "").strip():
            return TelemetrySwitch(enabled=True, reason=name, log_content=content)
    return TelemetrySwitch(enabled=False)


def start_telemetry(
    env: Mapping[str, str],
    *,
    platform: str | None,
    warn: Callable[[str], None],
    additional_jobs_folders: Sequence[Path] = (),
) -> Telemetry | None:
    """The running telemetry, or None when it is off or the SDK is missing (after `warn`).
    Job versions come from each project's jobs and `additional_jobs_folders`."""
    switch = telemetry_switch(env)
    if not switch.enabled:
        return None
    try:
        from deepwork_mcp.telemetry.recorder import Telemetry, catalog_job_versions
    except ImportError:
        warn(MISSING_EXTRA.format(why=switch.reason))
        return None
    return Telemetry.start(
        env,
        platform=platform,
        log_content=switch.log_content,
        job_version=catalog_job_versions(additional_jobs_folders),
    )
