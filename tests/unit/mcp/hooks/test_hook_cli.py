"""`deepwork hook` as the platforms run it: a real process, JSON on stdin, JSON on stdout."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from deepwork_review.pipeline import mark_review_passed, run_review

from tests.conftest import Repo

_SCRIPT = Path(sys.executable).with_name("deepwork")
DEEPWORK = [str(_SCRIPT)] if _SCRIPT.exists() else [sys.executable, "-m", "deepwork_mcp"]


def run_hook(
    name: str, payload: dict[str, Any] | str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    text = payload if isinstance(payload, str) else json.dumps(payload)
    return subprocess.run(
        [*DEEPWORK, "hook", name],
        input=text,
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, **(env or {})},
        check=False,
    )


def _bash(command: str, platform: str = "claude") -> dict[str, Any]:
    if platform == "claude":
        return {
            "session_id": "s",
            "transcript_path": "/t",
            "cwd": "/",
            "tool_use_id": "t",
            "hook_event_name": "PostToolUse",
            "tool_name": "Bash",
            "tool_input": {"command": command},
            "tool_response": {"stdout": "", "stderr": "", "interrupted": False},
        }
    return {
        "session_id": "s",
        "transcript_path": "/t",
        "cwd": "/",
        "timestamp": "now",
        "hook_event_name": "AfterTool",
        "tool_name": "run_shell_command",
        "tool_input": {"command": command},
        "tool_response": {"llmContent": "", "returnDisplay": ""},
    }


@pytest.mark.slow
@pytest.mark.parametrize(
    "command",
    [
        "git commit -m 'fix'",
        "git add -A && git commit -am wip",
        "git -C sub commit --amend --no-edit",
        "git -c user.name=x commit -m y",
        "cd repo; git --no-pager commit -m z",
    ],
)
@pytest.mark.parametrize("platform", ["claude", "gemini"])
def test_post_commit_reminder_after_a_commit(command: str, platform: str) -> None:
    done = run_hook("post_commit_reminder", _bash(command, platform))
    assert done.returncode == 0, done.stderr
    answer = json.loads(done.stdout)
    context = answer["hookSpecificOutput"]["additionalContext"]
    assert "review" in context
    assert answer["hookSpecificOutput"]["hookEventName"] == (
        "PostToolUse" if platform == "claude" else "AfterTool"
    )


@pytest.mark.slow
@pytest.mark.parametrize(
    "command", ["git status", "git commit-tree HEAD^{tree}", "git log --grep commit", "ls"]
)
def test_post_commit_reminder_stays_quiet_otherwise(command: str) -> None:
    done = run_hook("post_commit_reminder", _bash(command))
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {}


@pytest.mark.slow
def test_post_commit_reminder_ignores_a_failed_gemini_commit() -> None:
    event = _bash("git commit -m x", "gemini")
    event["tool_response"]["error"] = "nothing to commit"
    assert json.loads(run_hook("post_commit_reminder", event).stdout) == {}


@pytest.mark.slow
def test_platform_from_environment_overrides_the_shape() -> None:
    event = {"hook_event_name": "SessionStart", "cwd": "/", "timestamp": "now"}
    done = run_hook("session_start", event, {"DEEPWORK_HOOK_PLATFORM": "claude"})
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {}


@pytest.mark.slow
@pytest.mark.parametrize(
    ("name", "text", "env", "code"),
    [
        ("no_such_hook", "{}", {}, "hook.unknown"),
        ("post_commit_reminder", "this is not json", {}, "hook.bad_input"),
        ("post_commit_reminder", "", {}, "hook.bad_input"),
        (
            "post_commit_reminder",
            '{"hook_event_name": "Stop"}',
            {"DEEPWORK_HOOK_PLATFORM": "vim"},
            "hook.bad_platform",
        ),
        ("post_commit_reminder", "{}", {"DEEPWORK_HOOK_STDIN_TIMEOUT": "soon"}, "hook.bad_setting"),
        ("post_commit_reminder", "{}", {"DEEPWORK_HOOK_STDIN_TIMEOUT": "nan"}, "hook.bad_setting"),
        ("post_commit_reminder", "{}", {"DEEPWORK_HOOK_STDIN_TIMEOUT": "inf"}, "hook.bad_setting"),
        (
            "post_commit_reminder",
            "{}",
            {"DEEPWORK_HOOK_STDIN_TIMEOUT": "1e308"},
            "hook.bad_setting",
        ),
        ("workflow", "{}", {"DEEPWORK_HOOK_SCRIPT_TIMEOUT": "nan"}, "hook.bad_setting"),
    ],
)
def test_unusable_input_is_a_non_blocking_error(
    name: str, text: str, env: dict[str, str], code: str
) -> None:
    done = run_hook(name, text, env)
    # 1 is a non-blocking error on both platforms (2 would block the agent).
    assert done.returncode == 1
    assert done.stdout == ""
    assert f"deepwork hook: {code}:" in done.stderr


@pytest.mark.slow
def test_click_help_lists_the_hooks() -> None:
    done = subprocess.run(
        [*DEEPWORK, "hook", "--help"], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0
    for name in ("post_commit_reminder", "workflow", "session_start"):
        assert name in done.stdout


def _spawn(env: dict[str, str] | None = None) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [*DEEPWORK, "hook", "post_commit_reminder"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={**os.environ, **(env or {})},
    )


def _finish(process: subprocess.Popen[bytes]) -> tuple[int, str, str]:
    """Wait (bounded) for the hook to exit on its own while its stdin is still open."""
    try:
        code = process.wait(timeout=30)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
        pytest.fail("deepwork hook hung on a stdin that never closes")
    out, err = process.communicate(timeout=30)  # the hook has exited: this only drains
    return code, out.decode(), err.decode()


@pytest.mark.slow
def test_an_event_on_a_pipe_that_stays_open_is_answered() -> None:
    process = _spawn()
    assert process.stdin is not None
    process.stdin.write(json.dumps(_bash("git commit -m x")).encode())
    process.stdin.flush()  # and never closed until the hook has exited
    code, out, err = _finish(process)
    assert code == 0, err
    assert "review" in json.loads(out)["hookSpecificOutput"]["additionalContext"]


@pytest.mark.slow
def test_a_silent_pipe_that_stays_open_times_out() -> None:
    process = _spawn({"DEEPWORK_HOOK_STDIN_TIMEOUT": "0.5"})
    code, out, err = _finish(process)
    assert code == 1
    assert out == ""
    assert "hook.stdin_timeout" in err


@pytest.mark.slow
def test_a_closed_stdin_is_a_clear_non_blocking_error() -> None:
    # A platform (or a user's shell, `<&-`) may start the hook with no standard input at all;
    # Python then has no `sys.stdin`. That must read as bad input, not as a traceback.
    done = subprocess.run(
        ["/bin/sh", "-c", 'exec "$@" <&-', "sh", *DEEPWORK, "hook", "workflow"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 1
    assert done.stdout == ""
    assert "Traceback" not in done.stderr
    assert "deepwork hook: hook.bad_input:" in done.stderr


def _commit_event(repo: Repo) -> dict[str, Any]:
    event = _bash("git commit -m change")
    event["cwd"] = str(repo.root)
    return event


def _context(done: subprocess.CompletedProcess[str]) -> str | None:
    assert done.returncode == 0, done.stderr
    answer = json.loads(done.stdout)
    return answer["hookSpecificOutput"]["additionalContext"] if answer else None


@pytest.mark.slow
def test_post_commit_reminder_names_the_rules_with_open_reviews(repo: Repo) -> None:
    repo.write("a.py", "a\n")
    repo.commit()

    context = _context(run_hook("post_commit_reminder", _commit_event(repo)))

    assert context is not None
    assert "still open for it (python)" in context


@pytest.mark.slow
def test_post_commit_reminder_is_silent_when_every_review_passed(repo: Repo) -> None:
    repo.write("a.py", "a\n")
    for task in run_review(repo.root).tasks:
        mark_review_passed(repo.root, task.review_id, "declined by the user")
    repo.commit()
    assert _context(run_hook("post_commit_reminder", _commit_event(repo))) is None

    repo.write("a.py", "a, edited after the review\n")
    repo.commit()
    assert "(python)" in (_context(run_hook("post_commit_reminder", _commit_event(repo))) or "")


@pytest.mark.slow
def test_post_commit_reminder_is_silent_when_no_rule_matches(repo: Repo) -> None:
    repo.write("notes.txt", "n\n")
    repo.commit()
    assert _context(run_hook("post_commit_reminder", _commit_event(repo))) is None


@pytest.mark.slow
def test_post_commit_reminder_reminds_in_general_outside_git(tmp_path: Path) -> None:
    event = _bash("git commit -m change")
    event["cwd"] = str(tmp_path)
    context = _context(run_hook("post_commit_reminder", event))
    assert context is not None
    assert "the DeepWork reviews run on" in context
