"""`deepwork jobs add`: copying a library job into a project (docs/job-library.md)."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

from click.testing import CliRunner
from deepwork_core.base.error_codes import ErrorCode
from deepwork_core.jobs.parser import check_job_files, parse_job_dir
from deepwork_mcp.cli.group import cli
from deepwork_mcp.cli.jobs.add import add, library_job_names

from tests.fixtures.paths import REPO_ROOT

LIBRARY_DIR = REPO_ROOT / "library" / "jobs"


def _copy_library_tool() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "_copy_library", REPO_ROOT / "tools" / "copy_library.py"
    )
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_package_copy_of_the_library_matches_the_repository() -> None:
    """The wheel's library is `library/jobs/` byte for byte: run tools/copy_library.py write."""
    assert _copy_library_tool().differences() == []


def test_every_library_job_can_be_added() -> None:
    expected = sorted(p.parent.name for p in LIBRARY_DIR.glob("*/job.yml"))
    assert library_job_names() == expected


def test_add_copies_the_job_and_it_validates(tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, ["jobs", "add", "release_notes", "--path", str(tmp_path)])
    assert result.exit_code == 0, result.output
    job_dir = tmp_path / ".deepwork" / "jobs" / "release_notes"
    copied = sorted(p.relative_to(job_dir) for p in job_dir.rglob("*") if p.is_file())
    source = LIBRARY_DIR / "release_notes"
    assert copied == sorted(p.relative_to(source) for p in source.rglob("*") if p.is_file())
    assert (job_dir / "job.yml").read_bytes() == (source / "job.yml").read_bytes()
    parsed = parse_job_dir(job_dir, expected_name="release_notes")
    assert parsed.problems == ()
    assert check_job_files(parsed) == []


def test_add_refuses_to_overwrite_without_force(tmp_path: Path) -> None:
    runner = CliRunner()
    assert runner.invoke(add, ["weekly_digest", "--path", str(tmp_path)]).exit_code == 0
    job_file = tmp_path / ".deepwork" / "jobs" / "weekly_digest" / "job.yml"
    job_file.write_text("# my edits\n", encoding="utf-8")

    refused = runner.invoke(add, ["weekly_digest", "--path", str(tmp_path)])
    assert refused.exit_code == 1
    assert ErrorCode.LIBRARY_JOB_EXISTS.value in refused.output
    assert "--force" in refused.output
    assert job_file.read_text(encoding="utf-8") == "# my edits\n"


def test_force_replaces_the_folder_with_the_library_version(tmp_path: Path) -> None:
    runner = CliRunner()
    job_dir = tmp_path / ".deepwork" / "jobs" / "weekly_digest"
    (job_dir / "steps").mkdir(parents=True)
    (job_dir / "job.yml").write_text("# my edits\n", encoding="utf-8")
    (job_dir / "steps" / "stale.md").write_text("old step\n", encoding="utf-8")

    result = runner.invoke(add, ["weekly_digest", "--path", str(tmp_path), "--force"])
    assert result.exit_code == 0, result.output
    source = LIBRARY_DIR / "weekly_digest" / "job.yml"
    assert (job_dir / "job.yml").read_bytes() == source.read_bytes()
    assert not (job_dir / "steps" / "stale.md").exists()


def test_an_unknown_name_lists_the_library(tmp_path: Path) -> None:
    result = CliRunner().invoke(add, ["no_such_job", "--path", str(tmp_path)])
    assert result.exit_code == 1
    assert ErrorCode.LIBRARY_UNKNOWN_JOB.value in result.output
    for name in library_job_names():
        assert name in result.output
    assert not (tmp_path / ".deepwork").exists()


def test_list_shows_one_line_per_library_job_and_adds_nothing(tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, ["jobs", "add", "--list", "--path", str(tmp_path)])
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert [line.split()[0] for line in lines] == library_job_names()
    weekly = next(line for line in lines if line.startswith("weekly_digest "))
    assert "recurring digest" in weekly
    assert all("(no summary)" not in line for line in lines)
    assert not (tmp_path / ".deepwork").exists()


def test_add_without_a_name_or_list_is_a_usage_error(tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, ["jobs", "add", "--path", str(tmp_path)])
    assert result.exit_code == 2
    assert "--list" in result.output
