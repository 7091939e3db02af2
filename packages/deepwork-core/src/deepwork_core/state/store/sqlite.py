"""The SQLite adapter: the standard library's `sqlite3`, WAL, a busy timeout, `BEGIN IMMEDIATE`.

Every write takes the database's write lock up front (`BEGIN IMMEDIATE`), so a transaction never
has to upgrade a read lock and never fails half-way with "database is locked"; other processes
wait for it up to `BUSY_TIMEOUT_S` (`busy_timeout`). WAL lets readers run beside the writer.
`synchronous=NORMAL` (the WAL setting SQLite recommends): a commit appends to the WAL file
without waiting for the disk, so a committed transaction survives a killed process (the
operating system still holds its pages) but the last commits may be lost if the machine itself
loses power; the WAL is synced at each checkpoint, so the database is never left damaged.
A file that is not a SQLite database, or is damaged, raises `store.corrupt` naming it.

SQLite answers "database is locked" at once, without waiting, when the connection's own read
snapshot has fallen behind another process's commit (an upgrade no wait can mend). A begin
that is refused sooner than `BUSY_TIMEOUT_S` therefore gets a fresh connection and tries again,
until the time is spent; `store.busy` says how long it waited.
"""

from __future__ import annotations

import contextlib
import sqlite3
import time
from collections.abc import Iterator, Sequence
from typing import Final

from deepwork_core.state.store.errors import StoreCode, StoreError
from deepwork_core.state.store.port import Clock, ProjectRef, Row, Store, Tx
from deepwork_core.state.store.url import StoreLocation

#: How long a write waits for another process's write to finish before `store.busy`.
BUSY_TIMEOUT_S: Final = 60.0
#: The pause before a begin refused at once is tried again on a fresh connection.
_RETRY_PAUSE_S: Final = 0.01


class _SqliteTx:
    def __init__(self, conn: sqlite3.Connection) -> None:
        self._conn = conn

    def execute(self, sql: str, params: Sequence[object] = ()) -> list[Row]:
        return self._conn.execute(sql, tuple(params)).fetchall()


class SqliteStore(Store):
    """A store in one SQLite file (`StoreLocation.path`)."""

    kind = "sqlite"

    def __init__(self, location: StoreLocation, project: ProjectRef, clock: Clock) -> None:
        super().__init__(location, project, clock)
        assert location.path is not None
        self.path = location.path
        self._wal = False
        self._conn = self._connect(BUSY_TIMEOUT_S)

    def _connect(self, timeout: float) -> sqlite3.Connection:
        """A connection that waits up to `timeout` seconds for another process's write."""
        try:
            conn = sqlite3.connect(
                self.path, timeout=timeout, isolation_level=None, check_same_thread=False
            )
        except sqlite3.Error as exc:
            raise self._error(exc) from None
        try:
            conn.execute(f"PRAGMA busy_timeout = {max(1, int(timeout * 1000))}")
            if self._wal:  # a connection made again after `migrate` keeps its setting
                conn.execute("PRAGMA synchronous = NORMAL")
            # Reading the schema is the first touch of the file: a foreign or damaged file
            # fails here, before anything is written.
            conn.execute("SELECT count(*) FROM sqlite_master").fetchall()
        except sqlite3.Error as exc:
            conn.close()
            raise self._error(exc) from None
        return conn

    def migrate(self) -> None:
        with self.read() as tx:
            self._refuse_newer(self._version(tx))
        try:
            mode = self._patiently("PRAGMA journal_mode = WAL")
            self._conn.execute("PRAGMA synchronous = NORMAL")
        except sqlite3.Error as exc:
            raise self._error(exc) from None
        if not mode or str(mode[0][0]).lower() != "wal":
            raise StoreError(
                f"store {self.display} cannot use WAL mode (is it on a network file system?)",
                code=StoreCode.STORE_UNAVAILABLE,
            )
        self._wal = True
        super().migrate()

    @contextlib.contextmanager
    def _transaction(self, *, write: bool, lock: str | None) -> Iterator[Tx]:
        del lock  # BEGIN IMMEDIATE locks the whole file
        self._begin("BEGIN IMMEDIATE" if write else "BEGIN")
        try:
            yield _SqliteTx(self._conn)
        except sqlite3.Error as exc:
            self._rollback()
            raise self._error(exc) from None
        except BaseException:
            self._rollback()
            raise
        try:
            self._conn.execute("COMMIT")
        except sqlite3.Error as exc:
            self._rollback()
            raise self._error(exc) from None

    def _begin(self, statement: str) -> None:
        """Begin a transaction with `statement` (see `_patiently`)."""
        self._patiently(statement)

    def _patiently(self, statement: str) -> list[Row]:
        """Run `statement` outside any transaction, waiting up to `BUSY_TIMEOUT_S` in all (see
        the module docstring); its rows. Switching a new file to WAL is refused at once, too,
        while another process writes it in the old journal mode."""
        started = time.monotonic()
        while True:
            try:
                return self._conn.execute(statement).fetchall()
            except sqlite3.Error as exc:
                waited = time.monotonic() - started
                left = BUSY_TIMEOUT_S - waited - _RETRY_PAUSE_S
                if not _busy(exc) or left <= 0:
                    raise self._error(exc, waited=waited) from None
            # No transaction is open: a fresh connection drops the stale snapshot.
            self._conn.close()
            time.sleep(_RETRY_PAUSE_S)
            self._conn = self._connect(left)

    def _rollback(self) -> None:
        with contextlib.suppress(sqlite3.Error):
            self._conn.execute("ROLLBACK")

    def _table_names(self, tx: Tx) -> set[str]:
        rows = tx.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'"
        )
        return {str(row[0]) for row in rows}

    def close(self) -> None:
        with self._lock:
            self._conn.close()

    def _error(self, exc: sqlite3.Error, *, waited: float | None = None) -> StoreError:
        text = str(exc)
        if _busy(exc):
            how_long = f"for {waited:.1f} s" if waited is not None else "too long"
            return StoreError(
                f"store {self.display} stayed locked by another process {how_long} "
                f"({text}); try again",
                code=StoreCode.STORE_BUSY,
            )
        if isinstance(exc, sqlite3.DatabaseError) and not isinstance(
            exc, sqlite3.OperationalError | sqlite3.IntegrityError
        ):
            return StoreError(
                f"store {self.display} is not a readable SQLite database ({text}); restore it "
                "from a backup or move it away (DeepWork then starts an empty one)",
                code=StoreCode.STORE_CORRUPT,
            )
        return StoreError(f"store {self.display}: {text}", code=StoreCode.STORE_ERROR)


def _busy(exc: sqlite3.Error) -> bool:
    """True for SQLite's "database is locked" (`SQLITE_BUSY`) and "table is locked"."""
    text = str(exc)
    return "locked" in text or "busy" in text
