"""The server gives each project's engine a change watch, unless `git.change_watch` is off."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from deepwork_core import DeepWorkConfig
from deepwork_core.base.config import GitConfig
from deepwork_core.evidence.watch import ChangeWatch
from deepwork_mcp.server import _ServicesFactory

from tests.fixtures.git_repo import commit_all

linux_only = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="inotify")


def _engine_watch(tmp_path: Path, config: DeepWorkConfig) -> ChangeWatch | None:
    (tmp_path / "README.md").write_text("project\n")
    commit_all(tmp_path)
    services = _ServicesFactory(config, (), tmp_path / "keys", shared=False).make(tmp_path)
    try:
        return services.engine.guards.watch
    finally:
        services.close()  # the project's store, which the engine opened


@linux_only
def test_each_project_engine_gets_a_change_watch(tmp_path: Path) -> None:
    watch = _engine_watch(tmp_path, DeepWorkConfig())
    assert watch is not None
    assert watch.start() is True  # set up already in its thread, or now
    watch.close()


def test_the_watch_can_be_turned_off(tmp_path: Path) -> None:
    config = DeepWorkConfig(git=GitConfig(change_watch=False))
    assert _engine_watch(tmp_path, config) is None
