"""`deepwork jobs list` and `deepwork jobs validate`."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from deepwork_mcp.cli import cli

from tests.fixtures.jobdata import changed, valid_job, write_job

ENV = "DEEPWORK_ADDITIONAL_JOBS_FOLDERS"
PROBLEM_LINE = re.compile(
    r"^(?P<file>[^:]+):(?P<line>\d+): (?P<warn>warning: )?(?P<code>[a-z_.]+): "
)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    (root / ".deepwork" / "jobs").mkdir(parents=True)
    return root


def _jobs_dir(project: Path) -> Path:
    return project / ".deepwork" / "jobs"


def _run(*args: str, env: dict[str, str] | None = None) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, list(args), env={ENV: "", **(env or {})})
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result.exit_code, result.stdout, result.stderr


def test_jobs_group_is_reachable_from_the_root_command() -> None:
    code, out, _ = _run("jobs", "--help")
    assert code == 0
    assert "list" in out
    assert "validate" in out


def test_list_shows_jobs_workflows_sources_and_load_errors(project: Path, tmp_path: Path) -> None:
    write_job(_jobs_dir(project), valid_job("demo"), "demo")
    write_job(_jobs_dir(project), changed(valid_job("broken"), ("version",), "x"), "broken")
    extra = tmp_path / "extra"
    write_job(extra, valid_job("shared_job"), "shared_job")
    env = {ENV: f":{tmp_path / 'missing'}::{extra}:"}
    code, out, err = _run("jobs", "list", "--path", str(project), env=env)
    assert code == 1  # issue 43, item 21: a job that cannot be loaded is a failure
    assert "1 job(s) could not be loaded" in err
    assert f"demo 1.0.0  [project] {_jobs_dir(project).resolve() / 'demo'}" in out
    assert "workflow main: The main flow" in out
    assert "steps: first -> second" in out
    assert f"shared_job 1.0.0  [additional] {extra.resolve() / 'shared_job'}" in out
    errors = out.split("Load errors (1):")[1]
    assert "broken  [project]" in errors
    assert "version" in errors


def test_list_shows_concurrent_groups(project: Path) -> None:
    data = changed(valid_job("demo"), ("steps", 1, "dependencies"), [])
    data = changed(data, ("steps", 1, "inputs"), [])
    write_job(_jobs_dir(project), changed(data, ("workflows", 0, "steps"), [["first", "second"]]))
    _, out, _ = _run("jobs", "list", "--path", str(project))
    assert "steps: [first, second]" in out


def test_list_of_an_empty_project_says_so(project: Path) -> None:
    code, out, _ = _run("jobs", "list", "--path", str(project))
    # Standard jobs may exist; an empty project lists no project job and no error.
    assert code == 0
    assert "[project]" not in out
    assert "Load errors" not in out


def test_validate_a_clean_project_exits_0(project: Path) -> None:
    write_job(_jobs_dir(project), valid_job("demo"), "demo")
    code, out, err = _run("jobs", "validate", "--path", str(project))
    assert (code, out) == (0, "")
    assert "1 job(s) checked: 0 error(s), 0 warning(s)." in err


def test_validate_prints_file_line_code_message_and_exits_1(project: Path) -> None:
    data = changed(valid_job("demo"), ("steps", 1, "dependencies"), ["first", "ghost"])
    job_dir = write_job(_jobs_dir(project), data, "demo")
    write_job(_jobs_dir(project), valid_job("fine"), "fine")
    code, out, _ = _run("jobs", "validate", "--path", str(project))
    assert code == 1
    (line,) = out.splitlines()
    match = PROBLEM_LINE.match(line)
    assert match is not None, line
    assert Path(match["file"]).resolve() == (job_dir / "job.yml").resolve()
    assert match["code"] == "job.unknown_dependency"
    assert "steps[1].dependencies[1]" in line


def test_validate_reports_missing_instruction_files(project: Path) -> None:
    job_dir = write_job(_jobs_dir(project), valid_job("demo"), "demo", files=False)
    code, out, _ = _run("jobs", "validate", str(job_dir))
    assert code == 1
    codes = [PROBLEM_LINE.match(line)["code"] for line in out.splitlines()]  # type: ignore[index]
    assert codes == ["job.file_missing", "job.file_missing"]


def test_validate_marks_warnings_and_exits_0_for_warnings_only(project: Path) -> None:
    data = changed(valid_job("demo"), ("workflows", 0, "steps"), ["first"])
    job_dir = write_job(_jobs_dir(project), data, "demo")
    code, out, _ = _run("jobs", "validate", str(job_dir / "job.yml"))
    assert code == 0
    match = PROBLEM_LINE.match(out)
    assert match is not None
    assert (match["warn"], match["code"]) == ("warning: ", "job.unreachable_step")


def test_validate_given_folders_checks_name_against_folder(tmp_path: Path) -> None:
    job_dir = write_job(tmp_path, valid_job("demo"), "not_demo")
    missing = tmp_path / "nothing_here"
    code, out, _ = _run("jobs", "validate", str(job_dir), str(missing))
    assert code == 1
    codes = [PROBLEM_LINE.match(line) for line in out.splitlines()]
    assert "job.name_mismatch" in out
    assert f"{missing / 'job.yml'}: job.not_found:" in out
    assert codes[0] is not None


def test_validate_yaml_errors_keep_their_line(project: Path) -> None:
    write_job(_jobs_dir(project), "name: demo\nsteps: [a, b\n", "demo")
    code, out, _ = _run("jobs", "validate", "--path", str(project))
    assert code == 1
    match = PROBLEM_LINE.match(out)
    assert match is not None
    assert match["code"] == "yaml.syntax"


@pytest.mark.slow
def test_validate_in_a_real_subprocess(project: Path) -> None:
    """`deepwork jobs validate` as users run it, in a fresh project (cwd = the project)."""
    write_job(_jobs_dir(project), changed(valid_job("demo"), ("summary",), ""), "demo")
    executable = Path(sys.executable).with_name("deepwork")
    command = [str(executable)] if executable.exists() else [sys.executable, "-m", "deepwork_mcp"]

    def run(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [*command, "jobs", "validate", *args],
            cwd=cwd,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )

    broken = run(cwd=project)
    assert broken.returncode == 1, broken.stderr
    assert broken.stdout.startswith(".deepwork/jobs/demo/job.yml:3: job.too_short: summary:")
    assert "1 error(s)" in broken.stderr
    elsewhere = run("--path", str(project), cwd=project.parent)
    assert elsewhere.returncode == 1
    assert elsewhere.stdout.startswith("project/.deepwork/jobs/demo/job.yml:3: ")
    write_job(_jobs_dir(project), valid_job("demo"), "demo")
    clean = run(cwd=project)
    assert (clean.returncode, clean.stdout) == (0, "")


def test_validate_reports_every_planted_problem_in_one_run_at_its_line(project: Path) -> None:
    """Six problems of different kinds used to take three runs: the shape errors hid the
    cross-reference and file checks of the step they were in."""
    status, out, _ = _run("jobs", "new", "weekly", "--path", str(project))
    assert status == 0, out
    job_file = _jobs_dir(project) / "weekly" / "job.yml"
    text = job_file.read_text()
    for old, new in (
        ('version: "0.1.0"', "version: 1"),
        ("      - first_step\n", "      - first_step\n      - missing_step\n"),
        ("instructions_file: steps/first_step.md", "instructions_file: steps/nope.md"),
        ("      - run_each: result", "      - run_each: no_such_output"),
        ("    dependencies: []", "    dependencies: [ghost]"),
        ("        required: true", "        required: maybe"),
    ):
        assert old in text, old
        text = text.replace(old, new, 1)
    job_file.write_text(text)
    lines = text.splitlines()

    status, out, _ = _run("jobs", "validate", "--path", str(project))

    assert status == 1
    found = [(m["code"], int(m["line"])) for m in map(PROBLEM_LINE.match, out.splitlines()) if m]
    expected = [
        ("job.wrong_type", "version: 1"),
        ("job.unknown_workflow_step", "- missing_step"),
        ("job.file_missing", "steps/nope.md"),
        ("job.wrong_type", "required: maybe"),
        ("job.unknown_dependency", "[ghost]"),
        ("job.invalid_run_each", "no_such_output"),
    ]
    assert len(found) == len(expected), out
    for (code, line), (want, fragment) in zip(found, expected, strict=True):
        assert code == want, out
        assert fragment in lines[line - 1], (code, line, out)


def test_the_root_help_names_every_jobs_command() -> None:
    """`deepwork --help` gives the `jobs` group's own line, which names each of its commands
    (it once left out `jobs add` and `jobs graph`)."""
    import click
    from deepwork_mcp.cli import _COMMANDS

    ctx = click.Context(cli)
    jobs = cli.get_command(ctx, "jobs")
    assert isinstance(jobs, click.Group)
    listed = _COMMANDS["jobs"][2]
    assert listed == jobs.get_short_help_str(limit=200)
    code, out, _ = _run("--help")
    assert code == 0
    line = " ".join(out.split()).split(" jobs ", 1)[1].split(".", 1)[0]
    named = set(re.findall(r"[a-z]+", line))
    assert set(jobs.list_commands(ctx)) <= named, line  # by the names one types


def _problems_at(project: Path, job_file: Path, text: str) -> list[tuple[str, str]]:
    """Write `text` to `job_file`; each problem `jobs validate` reports, with its line's text."""
    job_file.write_text(text)
    status, out, _ = _run("jobs", "validate", "--path", str(project))
    assert status == 1, out
    lines = text.splitlines()
    found = [(m["code"], int(m["line"])) for m in map(PROBLEM_LINE.match, out.splitlines()) if m]
    return [(code, lines[line - 1].strip()) for code, line in found]


def test_an_evidence_error_is_on_its_line_and_hides_no_other(project: Path) -> None:
    """Issue 43, item 22: an `approval.show` naming no output was reported on the step's `- id:`
    line, and the step's dependency on a step that does not exist was not reported at all."""
    status, out, _ = _run("jobs", "new", "weekly", "--path", str(project))
    assert status == 0, out
    job_file = _jobs_dir(project) / "weekly" / "job.yml"
    text = job_file.read_text().replace("    dependencies: []", "    dependencies: [ghost]")
    approval = '    approval:\n      prompt: "Ship it?"\n      show: [no_such_output]\n'
    assert _problems_at(project, job_file, text + approval) == [
        ("job.unknown_dependency", "dependencies: [ghost]"),
        ("job.invalid_approval", "show: [no_such_output]"),
    ]
    # A may_change glob that leaves the project: on the glob's own line, with the glob quoted.
    may_change = '    may_change: ["docs/*.md", "../outside.md"]\n'
    assert _problems_at(project, job_file, text + may_change) == [
        ("job.unknown_dependency", "dependencies: [ghost]"),
        ("job.invalid_may_change", 'may_change: ["docs/*.md", "../outside.md"]'),
    ]
    _, out, _ = _run("jobs", "validate", "--path", str(project))
    assert "may_change glob '../outside.md' must be relative" in out
