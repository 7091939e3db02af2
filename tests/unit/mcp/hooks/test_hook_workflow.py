"""The `workflow` and `session_start` hooks end to end: a real project, the real engine driving
the workflow, and `deepwork hook` run as the platforms run it (a subprocess)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from deepwork_core.base import layout
from deepwork_core.engine.results import FinishStatus
from deepwork_core.engine.workflow import WorkflowEngine
from deepwork_core.jobs.discovery import JobCatalog
from deepwork_core.state.sessions import SessionStore
from deepwork_core.state.store.port import Store
from deepwork_mcp.hooks.active import STACK_PATH, may_have_job_hooks, stack_is_empty

from tests.fixtures.state_rows import write_session_json

_SCRIPT = Path(sys.executable).with_name("deepwork")
DEEPWORK = [str(_SCRIPT)] if _SCRIPT.exists() else [sys.executable, "-m", "deepwork_mcp"]

PROMPT = "Check that report.md has an executive summary before you stop."

JOB_YML = """\
name: demo
version: "1.0.0"
summary: A demo job with live hooks
common_job_info_provided_to_all_steps_at_runtime: Write short reports.
workflows:
  - name: report
    summary: Write a report
    steps: [write_report, polish]
steps:
  - id: write_report
    name: Write report
    description: Write the report.
    instructions_file: steps/write_report.md
    outputs:
      report.md: {type: file, description: The report, required: true}
    reviews: []
    hooks:
      after_agent:
        - prompt: "PROMPT"
        - script: hooks/check.sh
      before_tool:
        - prompt_file: hooks/tool_note.md
      before_prompt:
        - script: hooks/check.sh
  - id: polish
    name: Polish
    description: Polish the report.
    instructions_file: steps/polish.md
    outputs: {}
    reviews: []
    dependencies: [write_report]
    stop_hooks:
      - script: hooks/SCRIPT
""".replace("PROMPT", PROMPT)

PLAIN_JOB_YML = """\
name: plain
version: "1.0.0"
summary: A job without hooks
common_job_info_provided_to_all_steps_at_runtime: Nothing special.
workflows:
  - name: run
    summary: Run it
    steps: [only]
steps:
  - id: only
    name: Only step
    description: The one step.
    instructions_file: steps/only.md
    outputs: {}
    reviews: []
"""

# Records the event it got, then answers as the test asks through the project's control file.
CHECK_SH = """\
#!/usr/bin/env bash
cat > "$PWD/.event.json"
mode=$(cat "$PWD/.mode" 2>/dev/null || echo quiet)
case "$mode" in
  block) echo '{"decision": "block", "reason": "check.sh: the summary is missing"}' ;;
  exit2) echo "check.sh: refused by exit code" >&2; exit 2 ;;
  context) echo "check.sh: looks fine so far" ;;
  crash) echo "boom" >&2; exit 3 ;;
  *) ;;
esac
"""


def make_project(root: Path, polish_script: str = "hang.sh") -> Path:
    job = root / ".deepwork" / "jobs" / "demo"
    (job / "steps").mkdir(parents=True)
    (job / "hooks").mkdir()
    (job / "job.yml").write_text(JOB_YML.replace("SCRIPT", polish_script))
    (job / "steps" / "write_report.md").write_text("# Write the report\n")
    (job / "steps" / "polish.md").write_text("# Polish\n")
    (job / "hooks" / "tool_note.md").write_text("Keep edits inside docs/.")
    check = job / "hooks" / "check.sh"
    check.write_text(CHECK_SH)
    check.chmod(0o755)
    # Not executable on purpose: run through bash by its suffix. Hangs with a child process.
    (job / "hooks" / "hang.sh").write_text("sleep 300 &\nsleep 300\n")
    plain = root / ".deepwork" / "jobs" / "plain"
    (plain / "steps").mkdir(parents=True)
    (plain / "job.yml").write_text(PLAIN_JOB_YML)
    (plain / "steps" / "only.md").write_text("# Only\n")
    return root


def engine_for(make_store: Callable[..., Store], root: Path) -> WorkflowEngine:
    return WorkflowEngine(root, JobCatalog.for_project(root), SessionStore(make_store(root), root))


def hook(
    name: str, root: Path, event: dict[str, Any], env: dict[str, str] | None = None
) -> dict[str, Any]:
    payload = {"session_id": "platform-1", "transcript_path": "/t.jsonl", "cwd": str(root), **event}
    clean = {
        k: v
        for k, v in os.environ.items()
        if k not in ("CLAUDE_PROJECT_DIR", "GEMINI_PROJECT_DIR", "DEEPWORK_HOOK_PLATFORM")
    }
    done = subprocess.run(
        [*DEEPWORK, "hook", name],
        input=json.dumps(payload),
        capture_output=True,
        text=True,
        timeout=60,
        env={**clean, **(env or {})},
        check=False,
    )
    assert done.returncode == 0, done.stderr
    answer: dict[str, Any] = json.loads(done.stdout)
    return answer


STOP = {"hook_event_name": "Stop", "stop_hook_active": False}
GEMINI_AFTER_AGENT = {
    "hook_event_name": "AfterAgent",
    "timestamp": "now",
    "prompt": "go",
    "prompt_response": "done",
    "stop_hook_active": False,
}


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return make_project(tmp_path.resolve())


@pytest.mark.slow
def test_after_agent_keeps_the_agent_working_until_the_workflow_completes(
    project: Path, make_store: Callable[..., Store]
) -> None:
    assert hook("workflow", project, STOP) == {}  # no workflow yet: the agent may stop

    engine = engine_for(make_store, project)
    started = engine.start("Write the Q3 report", "demo", "report")
    session_id = started.brief.session_id

    answer = hook("workflow", project, STOP)
    assert answer["decision"] == "block"
    assert PROMPT in answer["reason"]
    assert "demo/report" in answer["reason"]
    assert session_id in answer["reason"]
    # The script saw the normalised event plus where it runs.
    seen = json.loads((project / ".event.json").read_text())
    assert seen["event"] == "after_agent"
    assert seen["platform"] == "claude"
    assert seen["platform_event"] == "Stop"
    assert seen["deepwork"]["step_id"] == "write_report"
    assert seen["deepwork"]["session_id"] == session_id

    # Gemini gets the same verdict in its own words.
    gemini = hook("workflow", project, GEMINI_AFTER_AGENT)
    assert gemini["decision"] == "deny"
    assert PROMPT in gemini["reason"]

    (project / "report.md").write_text("# Report\n")
    result = engine.finish({"report.md": "report.md"})
    assert result.status is FinishStatus.NEXT_STEP
    # `polish` has no prompt, only a stop_hooks script; make it a quiet one for this part.
    (project / ".deepwork/jobs/demo/hooks/hang.sh").write_text("exit 0\n")
    assert hook("workflow", project, STOP) == {}

    result = engine.finish({})
    assert result.status is FinishStatus.WORKFLOW_COMPLETE
    assert stack_is_empty(project)
    assert hook("workflow", project, STOP) == {}


@pytest.mark.slow
def test_a_second_stop_in_the_same_turn_is_let_through_with_the_reminder(
    project: Path, make_store: Callable[..., Store]
) -> None:
    engine_for(make_store, project).start("Write it", "demo", "report")
    answer = hook("workflow", project, {**STOP, "stop_hook_active": True})
    assert "decision" not in answer
    assert PROMPT in answer["hookSpecificOutput"]["additionalContext"]
    assert PROMPT in answer["systemMessage"]


@pytest.mark.slow
@pytest.mark.parametrize(
    ("mode", "reason"),
    [("block", "check.sh: the summary is missing"), ("exit2", "check.sh: refused by exit code")],
)
def test_a_script_decision_is_passed_on(
    project: Path, mode: str, reason: str, make_store: Callable[..., Store]
) -> None:
    engine_for(make_store, project).start("Write it", "demo", "report")
    (project / ".mode").write_text(mode)
    # before_prompt has only the script: its block refuses the prompt.
    answer = hook("workflow", project, {"hook_event_name": "UserPromptSubmit", "prompt": "hi"})
    assert answer == {"decision": "block", "reason": reason}
    # Even a repeated stop is blocked when the script says so: the script saw stop_hook_active.
    answer = hook("workflow", project, {**STOP, "stop_hook_active": True})
    assert answer["decision"] == "block"
    assert reason in answer["reason"]


@pytest.mark.slow
def test_script_text_is_context_and_prompt_files_are_read(
    project: Path, make_store: Callable[..., Store]
) -> None:
    engine_for(make_store, project).start("Write it", "demo", "report")
    (project / ".mode").write_text("context")
    answer = hook("workflow", project, {"hook_event_name": "UserPromptSubmit", "prompt": "hi"})
    assert answer["hookSpecificOutput"] == {
        "hookEventName": "UserPromptSubmit",
        "additionalContext": "check.sh: looks fine so far",
    }
    answer = hook(
        "workflow",
        project,
        {"hook_event_name": "PreToolUse", "tool_name": "Write", "tool_input": {"file_path": "x"}},
    )
    specific = answer["hookSpecificOutput"]
    assert "permissionDecision" not in specific
    assert "Keep edits inside docs/." in specific["additionalContext"]
    assert "write_report" in specific["additionalContext"]


@pytest.mark.slow
def test_a_crashing_script_is_reported_without_blocking_the_prompt(
    project: Path, make_store: Callable[..., Store]
) -> None:
    engine_for(make_store, project).start("Write it", "demo", "report")
    (project / ".mode").write_text("crash")
    answer = hook("workflow", project, {"hook_event_name": "UserPromptSubmit", "prompt": "hi"})
    assert "decision" not in answer
    context = answer["hookSpecificOutput"]["additionalContext"]
    assert "exited with code 3" in context
    assert "boom" in context


@pytest.mark.slow
def test_a_hanging_script_is_killed_at_its_timeout_and_reported(
    project: Path, make_store: Callable[..., Store]
) -> None:
    engine = engine_for(make_store, project)
    engine.start("Write it", "demo", "report")
    (project / "report.md").write_text("# Report\n")
    engine.finish({"report.md": "report.md"})  # now at `polish`, whose stop hook hangs
    answer = hook("workflow", project, STOP, {"DEEPWORK_HOOK_SCRIPT_TIMEOUT": "0.5"})
    assert answer["decision"] == "block"
    assert "hooks/hang.sh did not finish within 0.5 s and was killed" in answer["reason"]


@pytest.mark.slow
def test_a_corrupt_state_file_is_reported_not_raised(
    project: Path, make_store: Callable[..., Store]
) -> None:
    engine = engine_for(make_store, project)
    started = engine.start("Write it", "demo", "report")
    write_session_json(engine.store.store, started.brief.session_id, "{not json")
    answer = hook("workflow", project, STOP)
    assert "decision" not in answer
    assert "session.state_corrupt" in answer["systemMessage"]
    assert "session.state_corrupt" in answer["hookSpecificOutput"]["additionalContext"]


@pytest.mark.slow
def test_the_project_is_found_from_a_sub_folder_and_from_the_project_variable(
    project: Path,
    make_store: Callable[..., Store],
) -> None:
    engine_for(make_store, project).start("Write it", "demo", "report")
    sub = project / "docs" / "deep"
    sub.mkdir(parents=True)
    assert hook("workflow", sub, STOP)["decision"] == "block"
    elsewhere = {**STOP, "cwd": "/"}
    answer = hook("workflow", project, elsewhere, {"CLAUDE_PROJECT_DIR": str(project)})
    assert answer["decision"] == "block"


@pytest.mark.slow
@pytest.mark.parametrize(
    ("platform_event", "extra"),
    [
        ({"hook_event_name": "SessionStart", "source": "compact"}, {}),
        (
            {"hook_event_name": "SessionStart", "source": "resume", "timestamp": "now"},
            {"DEEPWORK_HOOK_PLATFORM": "gemini"},
        ),
    ],
)
def test_session_start_briefs_on_the_running_workflow(
    project: Path,
    platform_event: dict[str, Any],
    extra: dict[str, str],
    make_store: Callable[..., Store],
) -> None:
    assert hook("session_start", project, platform_event, extra) == {}
    engine = engine_for(make_store, project)
    parent = engine.start("Write the Q3 report", "demo", "report")
    answer = hook("session_start", project, platform_event, extra)
    brief = answer["hookSpecificOutput"]["additionalContext"]
    assert answer["hookSpecificOutput"]["hookEventName"] == "SessionStart"
    for expected in (
        "demo/report",
        "Write the Q3 report",
        "`write_report`",
        "checkpoint 1 of 2",
        parent.brief.session_id,
        ".deepwork/jobs/demo/steps/write_report.md",
        "`report.md`",
        "finished_step",
        "abort_workflow",
    ):
        assert expected in brief, expected

    nested = engine.start("Nested", "demo", "report")
    brief = hook("session_start", project, platform_event, extra)["hookSpecificOutput"][
        "additionalContext"
    ]
    assert nested.brief.session_id in brief
    assert "Nested inside: `demo/report`" in brief


def test_the_light_stack_probe_matches_the_store(
    project: Path, make_store: Callable[..., Store]
) -> None:
    assert stack_is_empty(project)
    engine = engine_for(make_store, project)
    started = engine.start("Write it", "demo", "report")
    assert not stack_is_empty(project)
    stack_file = json.loads((project / STACK_PATH).read_text())
    assert stack_file[layout.STACK_MAIN_KEY] == [started.brief.session_id]
    assert stack_file[layout.STACK_TOP_JOB_KEY] == "demo"
    assert engine.store.stack_path == project / STACK_PATH
    engine.abort("not needed")
    assert stack_is_empty(project)
    assert engine.store.stack() == []


def test_the_job_hooks_probe_looks_at_the_top_workflows_job(
    project: Path, make_store: Callable[..., Store]
) -> None:
    engine = engine_for(make_store, project)
    engine.start("Write it", "demo", "report")
    for event in ("after_agent", "before_tool", "before_prompt"):
        assert may_have_job_hooks(project, event, None)
    assert not may_have_job_hooks(project, "after_tool", None)
    engine.start("Nested", "plain", "run")  # the top job declares no hooks at all
    for event in ("after_agent", "before_tool", "before_prompt"):
        assert not may_have_job_hooks(project, event, None)
    # The same job name in an additional folder might declare some: the full path decides.
    extra = project / "extra"
    (extra / "plain").mkdir(parents=True)
    (extra / "plain" / "job.yml").write_text("hooks:\n  before_tool: []\n")
    assert may_have_job_hooks(project, "before_tool", f"/nowhere{os.pathsep}{extra}")
    assert not may_have_job_hooks(project, "before_prompt", str(extra))


@pytest.mark.slow
def test_the_no_op_path_does_not_import_pydantic(tmp_path: Path) -> None:
    code = textwrap.dedent(
        """
        import io, json, sys
        from deepwork_mcp.hooks.runner import HookSettings, run_hook
        event = json.dumps({"hook_event_name": "Stop", "cwd": sys.argv[1]})
        for name in ("workflow", "session_start", "post_commit_reminder"):
            answer = run_hook(name, event, HookSettings())
            assert answer.stdout == "{}", answer
        if len(sys.argv) > 2:  # now a workflow of a job without hooks is active
            for platform_event in ("Stop", "PreToolUse", "UserPromptSubmit", "PostToolUse"):
                event = json.dumps({"hook_event_name": platform_event, "cwd": sys.argv[1]})
                answer = run_hook("workflow", event, HookSettings())
                assert answer.stdout == "{}", answer
        heavy = sorted(m for m in sys.modules
                       if m.split(".")[0] in ("pydantic", "yaml", "mcp", "fastmcp", "click"))
        print(json.dumps(heavy))
        """
    )
    project = make_project(tmp_path)
    done = subprocess.run(
        [sys.executable, "-c", code, str(project)],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert json.loads(done.stdout) == []


def _at_polish(make_store: Callable[..., Store], project: Path, script: str) -> None:
    (project / ".deepwork" / "jobs" / "demo" / "hooks" / "hang.sh").write_text(script)
    engine = engine_for(make_store, project)
    engine.start("Write it", "demo", "report")
    (project / "report.md").write_text("# Report\n")
    engine.finish({"report.md": "report.md"})  # now at `polish`, whose stop hook is hang.sh


@pytest.mark.slow
def test_a_child_that_escaped_the_process_group_does_not_hold_the_hook(
    project: Path, make_store: Callable[..., Store]
) -> None:
    # The script exits at once, but leaves a child in its own session holding stdout open.
    _at_polish(make_store, project, 'setsid sleep 1000 &\necho "$!" > escaped.pid\nexit 0\n')
    answer = hook("workflow", project, STOP, {"DEEPWORK_HOOK_SCRIPT_TIMEOUT": "3"})
    assert "failed" not in json.dumps(answer)  # the script itself answered in time
    pid = int((project / "escaped.pid").read_text())
    # The escaped child was found through the pipe it held and killed.
    assert not Path(f"/proc/{pid}").exists() or "Z" in _proc_state(pid)


def _proc_state(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0]
    except OSError:
        return "Z"


@pytest.mark.slow
def test_a_script_printing_without_end_is_stopped_at_the_output_cap(
    project: Path, make_store: Callable[..., Store]
) -> None:
    _at_polish(make_store, project, "yes deepwork\n")
    answer = hook("workflow", project, STOP, {"DEEPWORK_HOOK_SCRIPT_TIMEOUT": "60"})
    assert "hook.script_output_too_large" in answer["reason"]


@pytest.mark.slow
def test_a_prompt_file_that_is_a_fifo_is_reported_not_waited_on(
    project: Path, make_store: Callable[..., Store]
) -> None:
    engine_for(make_store, project).start("Write it", "demo", "report")
    note = project / ".deepwork" / "jobs" / "demo" / "hooks" / "tool_note.md"
    note.unlink()
    os.mkfifo(note)
    answer = hook(
        "workflow",
        project,
        {"hook_event_name": "PreToolUse", "tool_name": "Write", "tool_input": {"file_path": "x"}},
    )
    context = answer["hookSpecificOutput"]["additionalContext"]
    assert "hook.prompt_file" in context
    assert "not a regular file" in context


@pytest.mark.slow
def test_a_stack_file_that_is_a_fifo_does_not_hold_the_hook(
    project: Path, make_store: Callable[..., Store]
) -> None:
    engine_for(make_store, project).start("Write it", "demo", "report")
    stack = project / ".deepwork" / "tmp" / "stack.json"
    stack.unlink()
    os.mkfifo(stack)
    answer = hook("workflow", project, STOP)  # the probe says "maybe"; the store decides
    assert answer["decision"] == "block"
