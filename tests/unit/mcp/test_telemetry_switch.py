"""Telemetry is off by default and costs nothing then; asked for without the SDK, it warns once
and the server runs (docs/telemetry.md)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from deepwork_mcp.telemetry.switch import MISSING_EXTRA, telemetry_switch

#: What telemetry loads when it is on; none of it may load when it is off. (The API package
#: `opentelemetry` itself comes with FastMCP, which imports it for its own spans.)
HEAVY = (
    "opentelemetry.sdk",
    "opentelemetry.exporter",
    "opentelemetry.proto",
    "opentelemetry.semconv",
    "google.protobuf",
    "deepwork_mcp.telemetry.recorder",
)

_LAUNCHER = """
import atexit, sys
HEAVY = tuple(sys.argv[1].split(","))
for blocked in sys.argv[2].split(",") if sys.argv[2] else ():
    sys.modules[blocked] = None  # as if the extra were not installed
def report():
    print("LOADED", sorted({m for m in sys.modules if m.startswith(HEAVY) and sys.modules[m]}),
          file=sys.stderr)
atexit.register(report)
from deepwork_mcp.cli import main
main(["serve", "--path", sys.argv[3], "--no-branch"])
"""


def serve_once(root: Path, env: dict[str, str], blocked: str = "") -> tuple[int, str]:
    """`deepwork serve` started and stopped at once (stdin at its end); its stderr."""
    done = subprocess.run(
        [sys.executable, "-c", _LAUNCHER, ",".join(HEAVY), blocked, str(root)],
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
        env=env,
        check=False,
    )
    return done.returncode, done.stderr


def plain_env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "DEEPWORK_OTEL"))}


@pytest.mark.parametrize(
    ("env", "enabled"),
    [
        ({}, False),
        ({"DEEPWORK_OTEL": "1"}, True),
        ({"DEEPWORK_OTEL": "0"}, False),
        ({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318"}, True),
        ({"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://c:4318/v1/traces"}, True),
        ({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318", "OTEL_SDK_DISABLED": "true"}, False),
        ({"OTEL_SERVICE_NAME": "x"}, False),
    ],
)
def test_telemetry_is_on_only_when_asked_for(env: dict[str, str], enabled: bool) -> None:
    assert telemetry_switch(env).enabled is enabled


def test_content_is_exported_only_when_the_flag_is_set() -> None:
    assert telemetry_switch({"DEEPWORK_OTEL": "1"}).log_content is False
    flagged = {"DEEPWORK_OTEL": "1", "DEEPWORK_OTEL_LOG_CONTENT": "1"}
    assert telemetry_switch(flagged).log_content is True


def test_serve_with_telemetry_off_loads_nothing_of_the_sdk(tmp_path: Path) -> None:
    code, stderr = serve_once(tmp_path, plain_env())
    assert code == 0, stderr[-2000:]
    assert "LOADED []" in stderr


def test_serve_with_telemetry_asked_for_but_no_sdk_warns_once_and_runs(tmp_path: Path) -> None:
    env = {**plain_env(), "DEEPWORK_OTEL": "1"}
    code, stderr = serve_once(tmp_path, env, blocked="opentelemetry.sdk")
    assert code == 0, stderr[-2000:]
    warning = MISSING_EXTRA.format(why="DEEPWORK_OTEL=1")
    assert stderr.count(warning.split(";")[0]) == 1
    assert "deepwork[otel]" in stderr
