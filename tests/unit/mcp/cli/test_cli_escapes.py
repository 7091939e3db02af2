"""Every `deepwork` command shows text from an agent or a file escaped (docs/security.md).

Each test puts a terminal escape sequence where an agent or a file can put one and runs the real
command: no ESC (or other control character) may reach the terminal, and the text is still
recognisable in its escaped form.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import pytest
from click.testing import CliRunner
from deepwork_core.engine.workflow import WorkflowEngine
from deepwork_core.evidence.hashes import ShownOutput
from deepwork_core.jobs.discovery import JobCatalog
from deepwork_core.state.approvals.models import ApprovalRequest
from deepwork_core.state.approvals.store import ApprovalStore
from deepwork_core.state.events import events_dir
from deepwork_core.state.sessions import SessionStore
from deepwork_core.state.store.port import Store
from deepwork_mcp.cli import cli

from tests.fixtures.evidence_project import key_of
from tests.fixtures.workflow_project import make_project

#: Retitles the terminal, then clears the screen: what an agent might write to fool a human.
RETITLE = "\x1b]0;all good\x07\x1b[2J"
SHOWN = "\\u001b]0;all good\\u0007\\u001b[2J"
#: The 8-bit CSI, a control character JSON leaves alone.
CSI8 = "\x9b31m"


def run(*args: str) -> tuple[int, str]:
    """Exit status and everything printed (stdout and stderr)."""
    result = CliRunner().invoke(cli, list(args))
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result.exit_code, result.output


def assert_clean(text: str) -> None:
    unsafe = sorted({char for char in text if not (char.isprintable() or char in "\n\t")})
    assert unsafe == [], f"control characters reached the terminal: {unsafe!r}\n{text!r}"


@pytest.fixture
def root(tmp_path: Path) -> Path:
    return make_project(tmp_path / "project")


@pytest.fixture
def store(root: Path, make_store: Callable[..., Store]) -> Store:
    """The store of the project `root`."""
    return make_store(root)


def _engine(store: Store, root: Path) -> WorkflowEngine:
    return WorkflowEngine(root, JobCatalog.for_project(root), SessionStore(store, root))


def test_status_escapes_what_the_agent_wrote(root: Path, store: Store) -> None:
    engine = _engine(store, root)
    engine.start("g", "multi", "alpha")
    engine.abort(f"done {RETITLE} {CSI8}")
    status, out = run("status", "--path", str(root))
    assert status == 0, out
    assert_clean(out)
    assert f"(done {SHOWN} \\u009b31m)" in out
    status, out = run("status", "--path", str(root), "--json")
    assert status == 0, out
    assert_clean(out)
    [finished] = json.loads(out)["finished"]
    assert finished["abort_reason"] == f"done {RETITLE} {CSI8}"  # the JSON still decodes


def test_log_escapes_goals_and_fields(root: Path, store: Store) -> None:
    started = _engine(store, root).start(f"goal {RETITLE}", "three_step", "main")
    session_id = started.brief.session_id
    status, out = run("log", session_id, "--path", str(root))
    assert status == 0, out
    assert_clean(out)
    assert SHOWN in out
    status, out = run("log", session_id, "--path", str(root), "--json")
    assert status == 0, out
    assert_clean(out)
    assert json.loads(out)[0]["goal"] == f"goal {RETITLE}"


def test_stats_escapes_names_from_the_logs(tmp_path: Path) -> None:
    folder = events_dir(tmp_path)
    folder.mkdir(parents=True)
    header = {"v": 1, "ts": "2026-11-21T09:00:00+00:00", "session_id": "sess_a"}
    events = [
        {**header, "event": "started", "job": f"job{RETITLE}", "workflow": "main"},
        {**header, "event": "step_begun", "step_ids": [f"step{CSI8}"]},
    ]
    (folder / "sess_a.jsonl").write_text("".join(json.dumps(e) + "\n" for e in events))
    (folder / f"sess_{CSI8}.jsonl").write_text("not json\n")
    status, out = run("stats", "--path", str(tmp_path))
    assert status == 0, out
    assert_clean(out)
    assert f"job{SHOWN}" in out
    status, out = run("stats", "--path", str(tmp_path), "--json")
    assert status == 0, out
    assert_clean(out)
    assert json.loads(out)["jobs"][0]["job"] == f"job{RETITLE}"


def test_approve_escapes_the_request_it_shows(
    tmp_path: Path, make_store: Callable[..., Store]
) -> None:
    (tmp_path / "plan.md").write_text("the plan\n")
    ApprovalStore(
        make_store(tmp_path), tmp_path, key_of(tmp_path)
    ).open_request(  # sealed, as the server does
        ApprovalRequest(
            request_id="req-1",
            session_id="sess_approve1",
            job_name="ship",
            workflow_name="main",
            step_ids=["plan"],
            prompt=f"Is this plan good?\nApproved already{RETITLE}",
            shown=[ShownOutput(output="plan", path=f"plan.md{RETITLE}", sha256=None)],
            requested_at=datetime(2026, 11, 23, tzinfo=UTC),
        )
    )
    status, out = run("approve", "sess_approve1", "--path", str(tmp_path), "--yes")
    assert status == 0, out
    assert_clean(out)
    lines = out.splitlines()
    assert "  Is this plan good?" in lines
    assert f"  Approved already{SHOWN}" in lines  # every line of the prompt indented
    assert f"  plan: plan.md{SHOWN}  sha256 (missing)" in lines


def test_jobs_list_escapes_folder_names_and_summaries(root: Path) -> None:
    broken = root / ".deepwork" / "jobs" / f"bad{RETITLE}\nfake line"
    broken.mkdir()
    (broken / "job.yml").write_text("name: [\n")
    job = (root / ".deepwork" / "jobs" / "three_step" / "job.yml").read_text()
    summary = 'summary: "Gather\\e]0;owned\\a"'  # YAML's escapes for ESC and BEL
    (root / ".deepwork" / "jobs" / "three_step" / "job.yml").write_text(
        job.replace("summary: Gather, draft, publish", summary, 1)
    )
    status, out = run("jobs", "list", "--path", str(root))
    assert status == 1, out  # a job that cannot be loaded fails the listing (issue 43, item 21)
    assert_clean(out)
    assert f"bad{SHOWN}\\nfake line" in out
    assert "fake line" not in out.replace(f"bad{SHOWN}\\nfake line", "")
    assert "  Gather\\u001b]0;owned\\u0007" in out.splitlines()


def test_jobs_validate_escapes_the_paths_it_names(tmp_path: Path) -> None:
    folder = tmp_path / f"job{RETITLE}"
    folder.mkdir()
    status, out = run("jobs", "validate", str(folder))
    assert status == 1, out
    assert_clean(out)
    assert f"job{SHOWN}" in out


def test_review_escapes_rule_files_it_names(tmp_path: Path) -> None:
    folder = tmp_path / f"docs{RETITLE}"
    folder.mkdir()
    (folder / ".deepreview").write_text("- not a map\n")
    (tmp_path / "a.md").write_text("# A\n")
    status, out = run("review", "--path", str(tmp_path), "--files", "a.md")
    assert status == 0, out
    assert_clean(out)
    assert f"docs{SHOWN}/.deepreview" in out


def test_errors_quote_escaped_text(root: Path) -> None:
    status, out = run("log", f"sess{RETITLE}", "--path", str(root))
    assert status == 1
    assert_clean(out)
