"""`deepwork status --all` and `deepwork store`: runs of every project sharing one store."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner
from deepwork_core.engine.workflow import WorkflowEngine
from deepwork_core.jobs.discovery import JobCatalog
from deepwork_core.state.sessions import SessionStore
from deepwork_core.state.store.port import Store
from deepwork_core.state.store.schema import SCHEMA_VERSION
from deepwork_mcp.cli import cli

from tests.fixtures.workflow_project import make_project


def run(*args: str) -> str:
    result = CliRunner().invoke(cli, list(args))
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    assert result.exit_code == 0, result.output
    return result.stdout


@pytest.fixture(params=["sqlite", "postgresql"])
def shared_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'team.sqlite3'}"
    else:
        yield request.getfixturevalue("pg_url")


def _project(folder: Path, url: str) -> Path:
    root = make_project(folder)
    (root / ".deepwork" / "config.yml").write_text(f"store:\n  url: {url!r}\n")
    return root


def test_status_all_lists_the_runs_of_every_project_in_the_store(
    tmp_path: Path, shared_url: str, make_store: Callable[..., Store]
) -> None:
    first = _project(tmp_path / "first", shared_url)
    second = _project(tmp_path / "second", shared_url)
    sessions = SessionStore(make_store(first), first)
    one = WorkflowEngine(first, JobCatalog.for_project(first), sessions)
    started = one.start("g", "multi", "alpha").brief.session_id
    sessions = SessionStore(make_store(second), second)
    two = WorkflowEngine(second, JobCatalog.for_project(second), sessions)
    other = two.start("g", "three_step", "main", inputs={"topic": "t"}).brief.session_id
    two.abort("done with it")

    listed = json.loads(run("status", "--all", "--json", "--path", str(second)))
    by_id = {run["session_id"]: run for run in listed}
    assert set(by_id) == {started, other}
    assert by_id[started]["project_root"] == str(first.resolve())
    assert by_id[started]["status"] == "active"
    assert by_id[other]["project_root"] == str(second.resolve())
    assert by_id[other]["status"] == "aborted"
    assert all(run["machine"] for run in listed)
    text = run("status", "--all", "--path", str(first))
    assert f"session {started}" in text
    assert f"project {second.resolve()}" in text
    # Each project's own status still shows only its own runs.
    assert started not in run("status", "--json", "--path", str(second))


def test_export_prints_one_event_a_line(tmp_path: Path, make_store: Callable[..., Store]) -> None:
    root = make_project(tmp_path / "p")
    engine = WorkflowEngine(
        root, JobCatalog.for_project(root), SessionStore(make_store(root), root)
    )
    session_id = engine.start("g", "multi", "alpha").brief.session_id
    lines = run("store", "export", session_id, "--path", str(root)).splitlines()
    assert [json.loads(line)["event"] for line in lines] == ["started", "step_begun"]
    assert f"(schema version {SCHEMA_VERSION})" in run("store", "info", "--path", str(root))


def test_export_of_an_unknown_session_answers_session_not_found(
    tmp_path: Path, make_store: Callable[..., Store]
) -> None:
    """Issue 43, item 13: like `deepwork log`, not an empty success."""
    root = make_project(tmp_path / "p")
    engine = WorkflowEngine(
        root, JobCatalog.for_project(root), SessionStore(make_store(root), root)
    )
    engine.start("g", "multi", "alpha")
    done = CliRunner().invoke(cli, ["store", "export", "AAAAAAAAAAAAAAAA", "--path", str(root)])
    assert done.exit_code == 1
    assert "session.not_found" in done.stderr


def _store_info_alone_hides_the_password(root: Path, env: dict[str, str]) -> None:
    """`deepwork store info` in a process of its own with only `env`: it fails to reach the
    store and names the URL with `***` for its password, on either output."""
    code = "import sys; from deepwork_mcp.cli import main; sys.exit(main())"
    done = subprocess.run(
        [sys.executable, "-c", code, "store", "info", "--path", str(root)],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=False,
    )
    assert done.returncode != 0
    assert "store.unavailable" in done.stderr
    assert "s3cret-pw" not in done.stderr + done.stdout
    assert "me:***@127.0.0.1" in done.stderr


def test_the_environment_url_wins_and_its_password_never_shows(tmp_path: Path) -> None:
    root = make_project(tmp_path / "p")
    env = {"DEEPWORK_STORE_URL": "postgresql://me:s3cret-pw@127.0.0.1:1/none", "PATH": ""}
    _store_info_alone_hides_the_password(root, env)
    assert not (root / ".deepwork" / "tmp" / "deepwork.sqlite3").exists()


@pytest.mark.parametrize(
    "url",
    [
        "postgresql://me@127.0.0.1:1/none?password=s3cret-pw",
        "postgresql:///none?host=127.0.0.1&port=1&user=me&password=s3cret-pw&sslmode=disable",
        "postgresql://me:s3cret#pw@127.0.0.1:1/none",
        "postgresql://me:s3cret?pw@127.0.0.1:1/none",
    ],
)
def test_a_password_in_any_form_libpq_reads_never_shows(tmp_path: Path, url: str) -> None:
    """Issue 43, item 9: in the query, entirely in the query, or holding `#` or `?`."""
    root = make_project(tmp_path / "p")
    (root / ".deepwork" / "config.yml").write_text(f"store:\n  url: '{url}'\n")
    for command in (["store", "info"], ["status", "--all"], ["status"]):
        done = CliRunner().invoke(cli, [*command, "--path", str(root)])
        assert done.exit_code != 0, command
        assert "store.unavailable" in done.stderr, (command, done.stderr)
        assert "s3cret" not in done.output + done.stderr, command
        assert "***" in done.stderr, command


def test_store_url_in_the_config_chooses_the_store_and_its_password_never_shows(
    tmp_path: Path,
) -> None:
    root = make_project(tmp_path / "p")
    config = root / ".deepwork" / "config.yml"
    config.write_text("store:\n  url: postgresql://me:s3cret-pw@127.0.0.1:1/none\n")
    # `store info` as a process of its own, with nothing of this environment (what the driver
    # itself may print counts too); the other commands in this process.
    _store_info_alone_hides_the_password(root, {"PATH": ""})
    for command in (["status", "--all"], ["status"]):
        no_url = CliRunner(env={"DEEPWORK_STORE_URL": None})  # the config's URL decides
        result = no_url.invoke(cli, [*command, "--path", str(root)])
        assert result.exit_code != 0, command
        assert "store.unavailable" in result.stderr, command
        assert "s3cret-pw" not in result.stderr + result.stdout
        assert "me:***@127.0.0.1" in result.stderr
    assert not (root / ".deepwork" / "tmp" / "deepwork.sqlite3").exists()


@pytest.mark.parametrize(
    ("env_url", "config_url", "shared"),
    [
        (None, None, False),
        (None, "postgresql://me:pw@db.example/deepwork", True),
        ("sqlite:", "postgresql://me:pw@db.example/deepwork", False),  # the environment wins
        ("postgres://me:pw@db.example/deepwork", None, True),
    ],
)
def test_a_shared_store_requires_signatures_wherever_its_url_was_set(
    tmp_path: Path, env_url: str | None, config_url: str | None, shared: bool
) -> None:
    from deepwork_mcp.approvals.keys import trusted_approvers

    root = make_project(tmp_path / "p")
    if config_url is not None:
        (root / ".deepwork" / "config.yml").write_text(f"store:\n  url: {config_url}\n")
    env = {} if env_url is None else {"DEEPWORK_STORE_URL": env_url}
    trusted = trusted_approvers(root, env)
    assert trusted.shared is shared
    assert trusted.required() is shared


def test_status_all_lists_a_page_and_says_how_many_more(
    tmp_path: Path, make_store: Callable[..., Store]
) -> None:
    root = make_project(tmp_path / "p")
    engine = WorkflowEngine(
        root, JobCatalog.for_project(root), SessionStore(make_store(root), root)
    )
    started = []
    for n in range(5):
        started.append(engine.start(f"g{n}", "three_step", "main", inputs={"topic": "t"}))
        engine.abort("next")
    ids = [s.brief.session_id for s in started]
    first = run("status", "--all", "--per-page", "2", "--path", str(root))
    assert [f"session {i}" in first for i in ids] == [False, False, False, True, True]
    assert first.endswith("3 more runs: deepwork status --all --page 2 --per-page 2\n")
    last = run("status", "--all", "--per-page", "2", "--page", "3", "--path", str(root))
    assert f"session {ids[0]}" in last
    assert "more runs" not in last
    result = CliRunner().invoke(
        cli, ["status", "--all", "--json", "--per-page", "4", "--path", str(root)]
    )
    assert result.exit_code == 0
    assert len(json.loads(result.stdout)) == 4
    assert "1 more runs: deepwork status --all --page 2 --per-page 4" in result.stderr


def test_status_all_shows_a_bad_row_of_another_project_as_bad(
    tmp_path: Path, make_store: Callable[..., Store]
) -> None:
    root = make_project(tmp_path / "p")
    store = make_store(root)
    engine = WorkflowEngine(root, JobCatalog.for_project(root), SessionStore(store, root))
    mine = engine.start("g", "multi", "alpha").brief.session_id
    with store.write() as tx:  # another project's row, with a time that is not a date
        tx.execute(
            "INSERT INTO sessions (project_id, session_id, job, workflow, status, machine, "
            "started_at, updated_at, body) SELECT 'ffffffffffffffff', 'sess_badrow01', job, "
            "workflow, status, machine, started_at, ?, body FROM sessions WHERE session_id = ?",
            (1e300, mine),
        )
    text = run("status", "--all", "--path", str(root))
    assert "bad        session sess_badrow01" in text
    assert "bad row: updated_at is not a date" in text
    assert f"session {mine}" in text
    listed = json.loads(run("status", "--all", "--json", "--path", str(root)))
    bad = next(row for row in listed if row["session_id"] == "sess_badrow01")
    assert bad["updated_at"] is None
    assert bad["problem"] == "bad row: updated_at is not a date"
