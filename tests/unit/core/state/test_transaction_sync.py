"""A state transaction is made durable by the store's commit; the only file it writes is the
stack marker for the hooks, never synced: it mirrors what the store committed
(docs/runtime-layout.md)."""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Callable
from pathlib import Path

import pytest
from deepwork_core.base import fsutil
from deepwork_core.engine.workflow import WorkflowEngine
from deepwork_core.jobs.discovery import JobCatalog
from deepwork_core.state.sessions import SessionStore
from deepwork_core.state.store.port import Store

from tests.fixtures.workflow_project import make_project


class Syncs:
    """Counts fsync calls on files and on folders."""

    def __init__(self) -> None:
        self.files = 0
        self.folders = 0

    def __call__(self, fd: int) -> None:
        if stat.S_ISDIR(os.fstat(fd).st_mode):
            self.folders += 1
        else:
            self.files += 1


@pytest.fixture
def syncs(monkeypatch: pytest.MonkeyPatch) -> Syncs:
    counter = Syncs()
    monkeypatch.setattr(fsutil.os, "fsync", counter)
    return counter


def test_a_nested_start_syncs_no_file_not_even_the_stack_marker(
    tmp_path: Path, syncs: Syncs, make_store: Callable[..., Store]
) -> None:
    root = make_project(tmp_path / "project")
    engine = WorkflowEngine(
        root, JobCatalog.for_project(root), SessionStore(make_store(root), root)
    )
    engine.start("outer", "three_step", "main")
    syncs.files = syncs.folders = 0
    result = engine.start("inner", "multi", "alpha")  # a new session row and the marker
    assert [item.workflow for item in result.stack] == ["three_step/main", "multi/alpha"]
    # The marker mirrors the stacks the store committed: written, never synced (its
    # durability: docs/runtime-layout.md).
    assert (syncs.files, syncs.folders) == (0, 0)
    marker = json.loads((root / ".deepwork" / "tmp" / "stack.json").read_text())
    assert len(marker["session_ids"]) == 2


def test_a_transaction_without_writes_syncs_nothing(
    tmp_path: Path, syncs: Syncs, make_store: Callable[..., Store]
) -> None:
    root = make_project(tmp_path / "project")
    store = SessionStore(make_store(root), root)
    with store.transaction():  # the first one writes .deepwork/tmp/.gitignore
        pass
    syncs.files = syncs.folders = 0
    with store.transaction() as tx:
        assert tx.stack() == []
    assert (syncs.files, syncs.folders) == (0, 0)


def test_a_write_outside_a_transaction_still_syncs_its_folder(tmp_path: Path, syncs: Syncs) -> None:
    fsutil.atomic_write_text(tmp_path / "a.json", "{}\n")
    assert (syncs.files, syncs.folders) == (1, 1)
    assert (tmp_path / "a.json").read_text() == "{}\n"
