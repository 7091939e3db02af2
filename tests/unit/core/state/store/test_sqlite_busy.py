"""The SQLite store when another process holds or changed the file: a begin SQLite refuses at
once is tried again on a fresh connection, and `store.busy` says how long it really waited."""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path

import pytest
from deepwork_core.state.store import sqlite as sqlite_store
from deepwork_core.state.store.errors import StoreCode, StoreError
from deepwork_core.state.store.opening import open_store
from deepwork_core.state.store.sqlite import SqliteStore
from deepwork_core.state.store.url import default_sqlite_path


def _sqlite(tmp_path: Path) -> SqliteStore:
    store = open_store(None, tmp_path)
    assert isinstance(store, SqliteStore)
    return store


def _other_process_writes(tmp_path: Path) -> None:
    other = sqlite3.connect(default_sqlite_path(tmp_path), isolation_level=None, timeout=5)
    try:
        other.execute("INSERT INTO store_meta (key, value) VALUES ('other', 'commit')")
    finally:
        other.close()


def test_a_write_after_its_snapshot_fell_behind_waits_instead_of_failing(
    tmp_path: Path,
) -> None:
    store = _sqlite(tmp_path)
    try:
        # A read left open on the connection pins an old snapshot; another process commits
        # after it. SQLite then answers BEGIN IMMEDIATE "database is locked" at once.
        pinned = store._conn.execute("SELECT key FROM store_meta")
        assert pinned.fetchone() is not None
        _other_process_writes(tmp_path)
        with store.write() as tx:
            tx.execute("INSERT INTO store_meta (key, value) VALUES ('mine', 'written')")
        with store.read() as tx:
            keys = {str(row[0]) for row in tx.execute("SELECT key FROM store_meta")}
        assert {"other", "mine"} <= keys
    finally:
        store.close()


def test_store_busy_says_how_long_it_waited(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = _sqlite(tmp_path)
    monkeypatch.setattr(sqlite_store, "BUSY_TIMEOUT_S", 0.3)
    holder = sqlite3.connect(default_sqlite_path(tmp_path), isolation_level=None)
    try:
        store._conn.execute("PRAGMA busy_timeout = 300")
        holder.execute("BEGIN IMMEDIATE")
        with pytest.raises(StoreError) as caught, store.write():
            pass
        assert caught.value.code == StoreCode.STORE_BUSY
        assert "stayed locked by another process for 0." in caught.value.message
    finally:
        holder.execute("ROLLBACK")
        holder.close()
        store.close()


def test_a_new_store_waits_for_a_writer_of_the_old_journal_mode(tmp_path: Path) -> None:
    # SQLite refuses to switch a file to WAL at once, without waiting, while another process
    # writes it in the rollback journal mode.
    path = default_sqlite_path(tmp_path)
    path.parent.mkdir(parents=True)
    holder = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    holder.execute("BEGIN IMMEDIATE")
    holder.execute("CREATE TABLE theirs (x)")  # rolled back: the file stays an empty one
    done = threading.Timer(0.2, lambda: holder.execute("ROLLBACK"))
    done.start()
    try:
        store = open_store(None, tmp_path)
    finally:
        done.join()
        holder.close()
    try:
        assert isinstance(store, SqliteStore)
        with store.read() as tx:
            assert tx.execute("PRAGMA journal_mode") == [("wal",)]
    finally:
        store.close()
