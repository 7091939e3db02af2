"""The PostgreSQL adapter (psycopg 3). This module is imported only for a `postgresql://` URL.

One connection per store, opened on first use and opened again on the next call after it broke:
a server that restarts is picked up without restarting DeepWork. A call that cannot reach the
server raises `store.unavailable` (what to check, and that the next call retries); a rejected
user or password raises `store.auth_failed`. Every message names the URL with its password
masked, and the driver's own text is scrubbed of it too.

Writes run in READ COMMITTED with, when the caller names a lock, a transaction-scoped advisory
lock on it (`pg_advisory_xact_lock`): one project's state is read-modified-written by one
transaction at a time, on any machine. Claims use `FOR UPDATE SKIP LOCKED`. Announcements are
`pg_notify` in the writing transaction (delivered when it commits) and `LISTEN` on a connection
of the listener's own (`deepwork wait`, docs/headless.md).
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import re
from collections.abc import Iterator, Sequence
from typing import Final

import psycopg
import psycopg.sql

from deepwork_core.state.store.errors import StoreCode, StoreError
from deepwork_core.state.store.port import Clock, Listener, ProjectRef, Row, Store, Tx
from deepwork_core.state.store.url import StoreLocation, passwords_of

CONNECT_TIMEOUT_S: Final = 5
_AUTH_HINTS: Final = ("password authentication failed", "no password supplied", "role ")


@functools.lru_cache(maxsize=512)
def _pg_sql(sql: str) -> tuple[str, bool]:
    """`?` placeholders as psycopg's `%s` (the shared SQL has no other `?` or `%`), and whether
    the statement only writes (nothing to wait for: it may travel with the next one)."""
    head = sql.lstrip()[:6].upper()
    writes = head in ("INSERT", "UPDATE", "DELETE") and "RETURNING" not in sql.upper()
    return sql.replace("?", "%s"), writes


def lock_key(name: str) -> int:
    """A stable signed 64-bit advisory lock key for `name`."""
    return int.from_bytes(hashlib.sha256(name.encode()).digest()[:8], "big", signed=True)


Statement = tuple[str, tuple[object, ...]]


class _PgTx:
    """One transaction, sent in as few round trips as its reads allow.

    `BEGIN`, the advisory lock and every statement that only writes wait in a queue; the queue
    goes out in one pipeline with the next statement whose answer is needed (a read), and with
    `COMMIT`; so do the transaction's announcements (`pg_notify`). A checkpoint (begin, lock,
    read the stacks and the session, write the session and its events, announce, commit) thus
    takes two round trips instead of nine. Statements still run in the order written (but
    one-row inserts into one table go as one, `_folded`); a failing write surfaces at the next
    read or at the commit, where the transaction is rolled back as before.
    """

    def __init__(self, conn: psycopg.Connection[Row], opening: list[Statement]) -> None:
        self._conn = conn
        self._queued = opening
        self._begun = False
        self._announced: set[tuple[str, str]] = set()
        self._notices: list[Statement] = []  # go after the queued writes, so inserts fold

    def execute(self, sql: str, params: Sequence[object] = ()) -> list[Row]:
        text, writes = _pg_sql(sql)
        if writes:
            self._queued.append((text, tuple(params)))
            return []
        cursor = self._send(text, tuple(params))
        return cursor.fetchall() if cursor.description is not None else []

    def announce(self, channel: str, payload: str) -> None:
        """Queue `pg_notify` like a write: nothing waits for its answer, and PostgreSQL
        delivers a notification only when the transaction commits, and the same one (channel
        and payload) once per transaction, so it is queued once."""
        if (channel, payload) not in self._announced:
            self._announced.add((channel, payload))
            self._notices.append(("SELECT pg_notify(%s, %s)", (channel, payload)))

    def commit(self) -> None:
        """Send what is queued with `COMMIT` (nothing at all when nothing was ever sent)."""
        if self._begun or len(self._queued) > 1 or self._notices:
            self._send("COMMIT", ())

    def _send(self, sql: str, params: tuple[object, ...]) -> psycopg.Cursor[Row]:
        queued, self._queued = [*self._queued, *self._notices], []
        self._notices = []
        self._begun = True
        if not queued:
            return self._conn.execute(sql, params, prepare=_prepared(sql))
        with self._conn.pipeline():
            for text, values in _folded(queued):
                self._conn.execute(text, values, prepare=_prepared(text))
            return self._conn.execute(sql, params, prepare=_prepared(sql))


#: A plain one-row insert: `INSERT INTO t (a, b) VALUES (%s, %s)`, nothing after the values.
_ONE_ROW: Final = re.compile(r"INSERT INTO (\w+) \([\w, ]+\) VALUES (\((?:%s, )*%s\))")
#: At most this many rows go in one folded insert (its text is prepared once per row count).
_MAX_FOLDED: Final = 16


@functools.lru_cache(maxsize=256)
def _one_row(sql: str) -> tuple[str, str] | None:
    """(table, `(%s, …)`) of a plain one-row insert; None for any other statement."""
    match = _ONE_ROW.fullmatch(sql)
    return (match.group(1), match.group(2)) if match else None


@functools.lru_cache(maxsize=1024)
def _names(sql: str, table: str) -> bool:
    return re.search(rf"\b{table}\b", sql) is not None


def _folded(queued: list[Statement]) -> Iterator[Statement]:
    """`queued` in order, except that the one-row inserts of one text (the events of a
    checkpoint, the rows of a stack) go as one multi-row insert where the first of them stood:
    one statement for the driver instead of several. An insert joins the one before it only
    past statements that do not name its table, and the store has no triggers or foreign keys,
    so no statement can tell; the rows keep their order, and so their identity numbers."""
    taken: set[int] = set()
    for index, (text, values) in enumerate(queued):
        if index in taken:
            continue
        found = _one_row(text)
        if found is None:
            yield text, values
            continue
        table, row = found
        rows = [values]
        for later in range(index + 1, len(queued)):
            other = queued[later][0]
            if len(rows) == _MAX_FOLDED or (other != text and _names(other, table)):
                break
            if other == text:
                rows.append(queued[later][1])
                taken.add(later)
        folded = text + (", " + row) * (len(rows) - 1)
        yield folded, tuple(value for params in rows for value in params)


def _prepared(sql: str) -> bool:
    """Statements are prepared once per connection; transaction control needs no plan."""
    return not sql.startswith(("BEGIN", "COMMIT"))


class PostgresStore(Store):
    """A store in one PostgreSQL database (`StoreLocation.url`)."""

    kind = "postgresql"
    skip_locked = " FOR UPDATE SKIP LOCKED"

    def __init__(self, location: StoreLocation, project: ProjectRef, clock: Clock) -> None:
        super().__init__(location, project, clock)
        assert location.url is not None
        self._url = location.url
        self._conn: psycopg.Connection[Row] | None = None
        self._connection()  # a wrong URL fails at open, not at the first write

    def _identity(self) -> str:
        return "BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY"

    def _connection(self) -> psycopg.Connection[Row]:
        if self._conn is not None and not self._conn.closed and not self._conn.broken:
            return self._conn
        self._drop()
        try:
            self._conn = psycopg.connect(
                self._url, autocommit=True, connect_timeout=CONNECT_TIMEOUT_S
            )
        except psycopg.Error as exc:
            raise self._error(exc, connecting=True) from None
        return self._conn

    def _drop(self) -> None:
        if self._conn is not None:
            with contextlib.suppress(psycopg.Error):
                self._conn.close()
        self._conn = None

    @contextlib.contextmanager
    def _transaction(self, *, write: bool, lock: str | None) -> Iterator[Tx]:
        conn = self._connection()
        begin = "BEGIN" if write else "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY"
        opening: list[Statement] = [(begin, ())]
        if lock is not None:
            opening.append(("SELECT pg_advisory_xact_lock(%s)", (lock_key(lock),)))
        tx = _PgTx(conn, opening)
        try:
            yield tx
            tx.commit()
        except psycopg.Error as exc:
            self._after_failure(conn)
            raise self._error(exc) from None
        except BaseException:
            self._after_failure(conn)
            raise

    def _after_failure(self, conn: psycopg.Connection[Row]) -> None:
        """Roll back; a connection that broke is dropped (the next call connects again)."""
        if conn.broken or conn.closed:
            self._drop()
            return
        try:
            conn.execute("ROLLBACK")
        except psycopg.Error:
            self._drop()

    def _table_names(self, tx: Tx) -> set[str]:
        rows = tx.execute(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema()"
        )
        return {str(row[0]) for row in rows}

    def announce(self, tx: Tx, channel: str, payload: str) -> None:
        if isinstance(tx, _PgTx):
            tx.announce(channel, payload)  # travels with the next statement that is sent
        else:
            tx.execute("SELECT pg_notify(?, ?)", (channel, payload))

    @contextlib.contextmanager
    def listener(self, channel: str) -> Iterator[Listener | None]:
        try:
            conn = psycopg.connect(self._url, autocommit=True, connect_timeout=CONNECT_TIMEOUT_S)
        except psycopg.Error as exc:
            raise self._error(exc, connecting=True) from None
        try:
            conn.execute(psycopg.sql.SQL("LISTEN {}").format(psycopg.sql.Identifier(channel)))
            yield _PgListener(conn)
        except psycopg.Error as exc:
            raise self._error(exc) from None
        finally:
            with contextlib.suppress(psycopg.Error):
                conn.close()

    def close(self) -> None:
        with self._lock:
            self._drop()

    def _error(self, exc: psycopg.Error, *, connecting: bool = False) -> StoreError:
        text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        for secret in passwords_of(self._url):
            text = text.replace(secret, "***")
        if connecting and any(hint in text for hint in _AUTH_HINTS):
            return StoreError(
                f"store {self.display} refused the user or password ({text}); fix the URL in "
                "DEEPWORK_STORE_URL or store.url",
                code=StoreCode.STORE_AUTH_FAILED,
            )
        if connecting or isinstance(exc, psycopg.OperationalError):
            return StoreError(
                f"store {self.display} is unavailable ({text}); check that PostgreSQL runs and "
                "that the host and port in the URL are right. Nothing was written; the next "
                "call connects again",
                code=StoreCode.STORE_UNAVAILABLE,
            )
        return StoreError(f"store {self.display}: {text}", code=StoreCode.STORE_ERROR)


class _PgListener:
    """`LISTEN` on a connection of its own."""

    def __init__(self, conn: psycopg.Connection[Row]) -> None:
        self._conn = conn

    def wait(self, timeout: float) -> list[str]:
        return [n.payload for n in self._conn.notifies(timeout=timeout, stop_after=1)]
