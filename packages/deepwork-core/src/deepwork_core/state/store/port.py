"""The `Store` port: transactions over one schema, whichever database holds it.

An adapter (`sqlite`, `postgres`) supplies a connection and says how its transactions begin;
everything else (the migrations, the queries of sessions, events, approvals and review jobs) is
written once against `Tx.execute`, with `?` placeholders.

Transactions: `write()` holds the write lock of the whole store on SQLite (`BEGIN IMMEDIATE`)
and, on PostgreSQL, a transaction-scoped advisory lock on `lock` when one is given (the state of
one project is read-modified-written under its own lock, as the state file lock did).
`read()` sees one consistent snapshot. Either joins a transaction already open on the same store
in the same thread, so callers can nest them; a write inside a read is a bug and raises.
"""

from __future__ import annotations

import abc
import contextlib
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from types import TracebackType
from typing import Any, Protocol, Self

from deepwork_core.state.store.errors import StoreCode, StoreError
from deepwork_core.state.store.schema import (
    APPLICATION,
    FILLS_RUN_COLUMNS,
    FILLS_USAGE,
    MIGRATIONS,
    SCHEMA_VERSION,
    fill_run_columns,
)
from deepwork_core.state.store.url import StoreLocation

Row = tuple[Any, ...]
Clock = Callable[[], float]


class Tx(Protocol):
    """One open transaction."""

    def execute(self, sql: str, params: Sequence[object] = ()) -> list[Row]:
        """Run one statement (`?` placeholders); the rows it returns (`[]` for none)."""
        ...


@dataclass(frozen=True, slots=True)
class ProjectRef:
    """The project a store is opened for: its id, root folder and machine (hostname)."""

    project_id: str
    root: str
    machine: str


class Listener(Protocol):
    """Waits for announcements on one channel (`Store.listener`)."""

    def wait(self, timeout: float) -> list[str]:
        """The payloads announced within `timeout` seconds (returns at the first; [] when none
        came)."""
        ...


class Store(abc.ABC):
    """An open store for one project. Thread-safe; one connection, used by one thread at once.

    Whoever opened it closes it (`close`, or a `with` block); the modules it is handed to never
    do."""

    #: "sqlite" or "postgresql".
    kind: str = ""
    #: Appended to a `SELECT` that claims a row: `FOR UPDATE SKIP LOCKED` where rows lock.
    skip_locked: str = ""

    def __init__(self, location: StoreLocation, project: ProjectRef, clock: Clock) -> None:
        self.location = location
        self.project = project
        self.clock = clock
        self._lock = threading.RLock()
        self._tx: Tx | None = None
        self._tx_writes = False
        #: Coded warnings of the opening (an old file set aside on import), for the root to show.
        self.notices: list[str] = []

    @property
    def display(self) -> str:
        """The file or the URL (password masked), as messages name the store."""
        return self.location.display

    # --- transactions ------------------------------------------------------------------------

    @contextlib.contextmanager
    def write(self, lock: str | None = None) -> Iterator[Tx]:
        """A write transaction (see the module docstring); committed when the block ends."""
        with self._joined(write=True, lock=lock) as tx:
            yield tx

    @contextlib.contextmanager
    def read(self) -> Iterator[Tx]:
        """A read-only transaction over one snapshot."""
        with self._joined(write=False, lock=None) as tx:
            yield tx

    @contextlib.contextmanager
    def _joined(self, *, write: bool, lock: str | None) -> Iterator[Tx]:
        """The open transaction of this thread's block when there is one (a write may not join a
        read), else a new one, held as the open one until it ends."""
        with self._lock:
            if self._tx is not None:
                if write and not self._tx_writes:
                    raise RuntimeError("a store write was opened inside a read transaction")
                yield self._tx
                return
            with self._transaction(write=write, lock=lock) as tx:
                self._tx, self._tx_writes = tx, write
                try:
                    yield tx
                finally:
                    self._tx = None

    @abc.abstractmethod
    def _transaction(
        self, *, write: bool, lock: str | None
    ) -> contextlib.AbstractContextManager[Tx]:
        """Begin, yield, commit (roll back on an exception); map driver errors to `store.*`."""

    @abc.abstractmethod
    def _table_names(self, tx: Tx) -> set[str]:
        """The tables of the store's schema (namespace)."""

    @abc.abstractmethod
    def close(self) -> None:
        """Release the connection (the store may not be used afterwards)."""

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self.close()

    def now(self) -> float:
        return self.clock()

    # --- change announcements (`deepwork wait`, docs/headless.md) ----------------------------

    def announce(self, tx: Tx, channel: str, payload: str) -> None:
        """Tell the store's listeners on `channel` that `payload` changed, when `tx` commits.
        A store without notifications (SQLite) does nothing: its waiters poll."""
        del tx, channel, payload

    def listener(self, channel: str) -> contextlib.AbstractContextManager[Listener | None]:
        """A `Listener` on `channel` for the block, or None where the store has no
        notifications (its waiters poll)."""
        return contextlib.nullcontext(None)

    # --- schema ------------------------------------------------------------------------------

    def migrate(self) -> None:
        """Bring the schema to `SCHEMA_VERSION` and record the project.

        Raises `store.schema_newer` (nothing written) when a newer DeepWork migrated the store,
        and `store.foreign` when the database belongs to something else.
        """
        with self.read() as tx:
            version = self._version(tx)
        self._refuse_newer(version)
        with self.write(lock="deepwork.migrate") as tx:
            version = self._version(tx)
            self._refuse_newer(version)
            for number in range(version + 1, SCHEMA_VERSION + 1):
                for statement in MIGRATIONS[number - 1]:
                    tx.execute(statement.replace("{identity}", self._identity()))
                if number == 1:
                    tx.execute(
                        "INSERT INTO store_meta (key, value) VALUES ('application', ?)",
                        (APPLICATION,),
                    )
                    tx.execute("INSERT INTO store_meta (key, value) VALUES ('schema_version', '1')")
                else:
                    tx.execute(
                        "UPDATE store_meta SET value = ? WHERE key = 'schema_version'",
                        (str(number),),
                    )
            if version > 0:
                _fill(tx, version)
            tx.execute(
                "INSERT INTO projects (project_id, root, machine, created_at) VALUES (?, ?, ?, ?)"
                " ON CONFLICT (project_id) DO NOTHING",
                (self.project.project_id, self.project.root, self.project.machine, self.now()),
            )

    def _identity(self) -> str:
        return "INTEGER PRIMARY KEY"

    def _version(self, tx: Tx) -> int:
        """The store's schema version; 0 for an empty database."""
        tables = self._table_names(tx)
        if "store_meta" not in tables:
            if tables and self.kind == "sqlite":
                raise self._foreign(f"it holds other tables ({', '.join(sorted(tables)[:5])})")
            return 0
        meta = {str(k): str(v) for k, v in tx.execute("SELECT key, value FROM store_meta")}
        if meta.get("application") != APPLICATION:
            raise self._foreign("its store_meta table is not DeepWork's")
        try:
            return int(meta.get("schema_version", ""))
        except ValueError:
            raise StoreError(
                f"store {self.display} has no readable schema_version; restore it from a "
                "backup or move it away",
                code=StoreCode.STORE_CORRUPT,
            ) from None

    def _refuse_newer(self, version: int) -> None:
        if version > SCHEMA_VERSION:
            raise StoreError(
                f"store {self.display} has schema version {version}; this DeepWork knows up to "
                f"{SCHEMA_VERSION}. Upgrade DeepWork (a newer version migrated this store); "
                "nothing was written",
                code=StoreCode.STORE_SCHEMA_NEWER,
            )

    def _foreign(self, why: str) -> StoreError:
        return StoreError(
            f"{self.display} is not a DeepWork store: {why}. Point store.url or "
            "DEEPWORK_STORE_URL elsewhere, or move the file away; nothing was written",
            code=StoreCode.STORE_FOREIGN,
        )


def _fill(tx: Tx, version: int) -> None:
    """What rows written before the migrations from `version` on need filled in."""
    if any(number > version for number in FILLS_RUN_COLUMNS):
        fill_run_columns(tx)
    if version < FILLS_USAGE:
        # Imported here: only a migration reads the events' models.
        from deepwork_core.state.store.tables.usage_rows import fill_usage

        fill_usage(tx)


def wall_clock() -> float:
    return time.time()


class NoStore(Store):
    """The store of work that keeps no state: `deepwork verify --rereview` and `deepwork
    calibrate` plan and brief reviews in checkpoints that need one, yet open none. Planning and
    briefing never touch it; anything that did would fail here instead of opening a store."""

    def __init__(self, root: str) -> None:
        from deepwork_core.state.store.url import StoreLocation

        super().__init__(StoreLocation("sqlite", None, None), ProjectRef("", root, ""), lambda: 0.0)

    def _transaction(
        self, *, write: bool, lock: str | None
    ) -> contextlib.AbstractContextManager[Tx]:
        raise RuntimeError("this work keeps no state: it opened no store")

    def _table_names(self, tx: Tx) -> set[str]:
        return set()

    def close(self) -> None:
        return None
