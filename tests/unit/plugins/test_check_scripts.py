"""The client-check scripts that `nox -s plugins` and `nox -s reviewers` run (tools/check_*.py)
import from each other and from tools/client_checks.py as sibling scripts, where neither ruff
nor mypy follows them: each must at least import and start (`--help`), or its nox session fails
only after minutes of installing agent binaries."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.fixtures.coverage_env import unmeasured

TOOLS = Path(__file__).resolve().parents[3] / "tools"


@pytest.mark.parametrize("script", sorted(p.name for p in TOOLS.glob("check_*.py")))
def test_the_script_starts(script: str) -> None:
    result = subprocess.run(
        [sys.executable, str(TOOLS / script), "--help"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env=unmeasured(),  # tools/ is not what coverage measures
    )
    assert result.returncode == 0, (
        result.stderr
    )  # a library script only imports; the rest print usage
