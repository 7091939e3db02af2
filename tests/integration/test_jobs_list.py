"""`deepwork jobs list` in a project with no jobs of its own shows the standard workflows."""

from __future__ import annotations

import subprocess
import sys
from importlib.util import find_spec
from pathlib import Path

import pytest


@pytest.mark.skipif(
    find_spec("deepwork_mcp.cli.jobs") is None,
    reason="`deepwork jobs list` arrives with branch core (deepwork_mcp/cli/jobs/)",
)
def test_jobs_list_in_an_empty_project_shows_the_standard_workflows(tmp_path: Path) -> None:
    listed = subprocess.run(
        [sys.executable, "-m", "deepwork_mcp", "jobs", "list"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert listed.returncode == 0, listed.stderr
    for workflow in (
        "new_job",
        "record",
        "repair",
        "learn",
        "discover_rules",
        "add_document_update_rule",
    ):
        assert workflow in listed.stdout
