"""`deepwork review` as a real subprocess on real repositories."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # `deepwork review` as a subprocess


def _deepwork(
    *args: str, cwd: Path, stdin: int | None = subprocess.DEVNULL, input_text: str | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "deepwork_mcp", "review", *args],
        cwd=cwd,
        stdin=None if input_text is not None else stdin,
        input=input_text,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_prints_tasks_for_changed_files(repo) -> None:
    repo.write("new.py")
    result = _deepwork(cwd=repo.root)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("Invoke the following list of Tasks in parallel:")
    assert 'name: "python review of new.py"' in result.stdout


def test_nothing_to_review_exits_zero_with_the_message(repo) -> None:
    result = _deepwork(cwd=repo.root)
    assert result.returncode == 0
    assert result.stdout.strip() == "No changed files detected."


def test_errors_exit_one_with_the_code_on_stderr(tmp_path: Path) -> None:
    (tmp_path / ".deepreview").write_text(
        "py:\n  description: d\n  match: {include: ['*.py']}\n"
        "  review:\n    strategy: individual\n    instructions: Look.\n"
    )
    result = _deepwork("--path", str(tmp_path), cwd=tmp_path)
    assert result.returncode == 1
    assert result.stderr.startswith("Error: review.not_a_git_repository: ")
    assert result.stdout == ""


def test_base_ref_and_path_options(repo, tmp_path: Path) -> None:
    repo.write("first.py")
    repo.commit("first")
    checkpoint = repo.git("rev-parse", "HEAD").strip()
    repo.write("second.py")
    repo.commit("second")

    result = _deepwork("--path", str(repo.root), "--base-ref", checkpoint, cwd=tmp_path)

    assert result.returncode == 0, result.stderr
    assert "second.py" in result.stdout
    assert "first.py" not in result.stdout
    bad = _deepwork("--base-ref", "nope", cwd=repo.root)
    assert bad.returncode == 1
    assert bad.stderr.startswith("Error: review.base_ref_unknown: ")


def test_files_option_is_repeatable(repo) -> None:
    repo.write("a.py")
    repo.write("b.py")
    repo.write("c.py")
    result = _deepwork("--files", "a.py", "--files", "c.py", cwd=repo.root)
    assert result.returncode == 0, result.stderr
    assert "review of a.py" in result.stdout
    assert "review of c.py" in result.stdout
    assert "b.py" not in result.stdout


def test_file_list_on_stdin(repo) -> None:
    repo.write("a.py")
    repo.write("b.py")
    result = _deepwork(cwd=repo.root, input_text="b.py\n\n")
    assert result.returncode == 0, result.stderr
    assert "review of b.py" in result.stdout
    assert "review of a.py" not in result.stdout


def test_a_stdin_pipe_that_never_closes_is_ignored(repo) -> None:
    repo.write("a.py")
    read_end, write_end = os.pipe()
    try:
        result = _deepwork(cwd=repo.root, stdin=read_end)
    finally:
        os.close(read_end)
        os.close(write_end)
    assert result.returncode == 0, result.stderr
    assert "review of a.py" in result.stdout  # fell back to git


@pytest.mark.parametrize(
    ("config", "expected"), [("platforms: [gemini]\n", "Gemini CLI"), ("", "Tasks")]
)
def test_platform_defaults_to_the_project_config(repo, config: str, expected: str) -> None:
    repo.write(".deepwork/config.yml", config)
    repo.write("a.py")
    result = _deepwork(cwd=repo.root)
    assert result.returncode == 0, result.stderr
    assert expected in result.stdout.splitlines()[0]
    explicit = _deepwork("--instructions-for", "claude", cwd=repo.root)
    assert explicit.stdout.startswith("Invoke the following list of Tasks in parallel:")
