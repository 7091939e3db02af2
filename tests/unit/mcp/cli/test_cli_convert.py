"""`deepwork jobs convert`: by name or path, warnings on stderr, stable error codes."""

from __future__ import annotations

import shutil
from pathlib import Path

from click.testing import CliRunner
from deepwork_mcp.cli.jobs import jobs

from tests.fixtures.paths import FIXTURES

FIXTURE = FIXTURES / "jobs_014" / "meeting_digest"


def test_cli_converts_a_job_by_name_and_prints_the_warnings(tmp_path: Path) -> None:
    jobs_dir = tmp_path / ".deepwork" / "jobs"
    jobs_dir.mkdir(parents=True)
    shutil.copytree(FIXTURE, jobs_dir / FIXTURE.name)
    outcome = CliRunner().invoke(
        jobs, ["convert", FIXTURE.name, "--to", "0.9", "--path", str(tmp_path)]
    )
    assert outcome.exit_code == 0, outcome.output
    assert "job.converted-0.9.yml" in outcome.output
    assert "warning: " in outcome.output
    refused = CliRunner().invoke(
        jobs, ["convert", FIXTURE.name, "--to", "0.14", "--path", str(tmp_path)]
    )
    assert refused.exit_code == 1
    assert "convert.same_format" in refused.output
