"""Issue 34, item 11: a server the tests stop with SIGTERM still writes its coverage data, so
`nox -s tests` counts the dashboard and `serve` over http (they read 0 % before)."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

import pytest
from coverage import CoverageData

from tests.fixtures.coverage_env import unmeasured

REPO = Path(__file__).resolve().parents[2]


def _measured(folder: Path) -> set[str]:
    files: set[str] = set()
    for path in folder.glob(".coverage*"):
        data = CoverageData(basename=str(path))
        data.read()
        files.update(Path(name).name for name in data.measured_files() if data.lines(name))
    return files


INITIALIZE = (
    b'{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": '
    b'"2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}\n'
)


def _run_until_terminated(folder: Path, *command: str, ready: bytes) -> None:
    env = {**unmeasured(), "COVERAGE_FILE": str(folder / ".coverage")}
    rcfile = f"--rcfile={REPO / 'pyproject.toml'}"
    process = subprocess.Popen(
        [sys.executable, "-m", "coverage", "run", rcfile, "-m", *command],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.PIPE,
        env=env,
        cwd=folder,
    )
    try:
        assert process.stdout is not None
        assert process.stdin is not None
        if command[1] == "serve":
            process.stdin.write(INITIALIZE)
            process.stdin.flush()
        assert process.stdout.readline().startswith(ready)  # it is serving
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
        process.communicate()  # closes the pipes
    assert process.returncode == -signal.SIGTERM


@pytest.mark.slow
def test_a_dashboard_stopped_with_sigterm_writes_its_coverage(tmp_path: Path) -> None:
    _run_until_terminated(
        tmp_path, "deepwork_mcp", "dashboard", "--no-open", "--path", ".", ready=b"http://"
    )
    assert {"dashboard.py", "serving.py"} <= _measured(tmp_path)


@pytest.mark.slow
def test_serve_stopped_with_sigterm_passes_it_on_to_coverage(tmp_path: Path) -> None:
    # `serve` installs its own SIGTERM handler (it stops its children); it must chain coverage's.
    _run_until_terminated(tmp_path, "deepwork_mcp", "serve", "--path", ".", ready=b'{"jsonrpc"')
    assert "serve.py" in _measured(tmp_path)
