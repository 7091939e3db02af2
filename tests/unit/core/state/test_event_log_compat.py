"""Old logs print and count as they did before the log was typed.

tests/fixtures/event_log_renders/ holds what `deepwork log` (text and --json) and
`deepwork stats --json` printed for the fixture logs before events became models; the typed
reader must print the same.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner
from deepwork_core.state.events import events_dir
from deepwork_mcp.cli import cli

FIXTURES = Path(__file__).parents[3] / "fixtures"
RENDERS = FIXTURES / "event_log_renders"
LOGS = [
    *sorted((FIXTURES / "event_logs").glob("*.jsonl")),
    FIXTURES / "event_logs_all_kinds" / "sess_all_kinds.jsonl",
]


def run(*args: str) -> str:
    result = CliRunner().invoke(cli, list(args))
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    assert result.exit_code == 0, result.output
    return result.stdout


def project_with(tmp_path: Path, log: Path) -> Path:
    folder = events_dir(tmp_path)
    folder.mkdir(parents=True)
    shutil.copy(log, folder / log.name)
    return tmp_path


@pytest.mark.parametrize("log", LOGS, ids=lambda p: p.stem)
def test_deepwork_log_prints_an_old_log_as_before(tmp_path: Path, log: Path) -> None:
    root = project_with(tmp_path, log)
    expected = (RENDERS / f"{log.stem}.txt").read_text(encoding="utf-8")
    assert run("log", log.stem, "--path", str(root)) == expected


@pytest.mark.parametrize("log", LOGS, ids=lambda p: p.stem)
def test_deepwork_log_json_prints_an_old_log_as_before(tmp_path: Path, log: Path) -> None:
    root = project_with(tmp_path, log)
    expected = (RENDERS / f"{log.stem}.json").read_text(encoding="utf-8")
    assert run("log", log.stem, "--path", str(root), "--json") == expected


def test_stats_count_a_log_with_unknown_kinds_as_before(tmp_path: Path) -> None:
    root = project_with(tmp_path, LOGS[-1])
    expected = (RENDERS / "stats_sess_all_kinds.json").read_text(encoding="utf-8")
    assert run("stats", "--json", "--path", str(root)) == expected
