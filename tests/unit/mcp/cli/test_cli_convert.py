"""`deepwork jobs convert`: by name or path, warnings on stderr, stable error codes."""

from __future__ import annotations

import shutil
from pathlib import Path

from click.testing import CliRunner
from deepwork_mcp.cli.jobs import jobs

from tests.fixtures.paths import FIXTURES

FIXTURE = FIXTURES / "jobs_v010" / "meeting_digest"


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
        jobs, ["convert", FIXTURE.name, "--to", "0.10", "--path", str(tmp_path)]
    )
    assert refused.exit_code == 1
    assert "convert.same_format" in refused.output


def test_cli_reads_to_0_14_as_the_0_10_format_without_listing_it(tmp_path: Path) -> None:
    jobs_dir = tmp_path / ".deepwork" / "jobs"
    jobs_dir.mkdir(parents=True)
    shutil.copytree(FIXTURE, jobs_dir / FIXTURE.name)
    to_09 = ["convert", FIXTURE.name, "--to", "0.9", "--path", str(tmp_path), "--in-place"]
    assert CliRunner().invoke(jobs, to_09).exit_code == 0
    outcome = CliRunner().invoke(
        jobs, ["convert", FIXTURE.name, "--to", "0.14", "--path", str(tmp_path)]
    )
    assert outcome.exit_code == 0, outcome.output
    assert "job.converted-0.10.yml" in outcome.output
    help_text = CliRunner().invoke(jobs, ["convert", "--help"]).output
    assert "[0.9|0.10]" in help_text
    assert "0.14" not in help_text.replace("0.10 to 0.14", "")
