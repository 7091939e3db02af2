"""`deepwork jobs new`: the click command over `deepwork_core.jobs.scaffold`."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner
from deepwork_core.jobs.parser import parse_job_dir
from deepwork_mcp.cli.jobs.new import new


def test_jobs_new_command_creates_and_refuses_twice(tmp_path: Path) -> None:
    runner = CliRunner()
    first = runner.invoke(new, ["demo", "--path", str(tmp_path)])
    assert first.exit_code == 0, first.output
    job_dir = tmp_path / ".deepwork" / "jobs" / "demo"
    assert parse_job_dir(job_dir, expected_name="demo").problems == ()

    second = runner.invoke(new, ["demo", "--path", str(tmp_path)])
    assert second.exit_code == 1
    assert "job.already_exists" in second.output

    bad = runner.invoke(new, ["Bad-Name", "--path", str(tmp_path)])
    assert bad.exit_code == 1
    assert "identifier.invalid" in bad.output
