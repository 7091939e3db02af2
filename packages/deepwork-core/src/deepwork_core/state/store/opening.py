"""Opening a store: from a URL (or none) and a project root to an open, migrated `Store`.

A store is opened at a composition root and handed down: by the server, once per project folder
it serves; by each command; by the dashboard. Nothing below the roots opens a store or looks one
up (docs/architecture.md, "The store, opened at the roots"). The root chooses the URL too
(`choose_store_url`): the URL it read from `DEEPWORK_STORE_URL`, else `store.url` of the
project's `.deepwork/config.yml`, else None, the project's SQLite file; core reads neither the
environment nor the current directory. A root that only reads asks `open_existing_store`, which
opens nothing (and creates no file) for a project that has no store yet. The PostgreSQL adapter
(and psycopg) is imported only here, and only for a `postgresql://` URL, so a cold start on
SQLite never loads the driver.
"""

from __future__ import annotations

import hashlib
import socket
import threading
from pathlib import Path

from deepwork_core.base.config import load_config
from deepwork_core.base.runtime_dir import ensure_tmp_dir
from deepwork_core.state.store.errors import StoreCode, StoreError
from deepwork_core.state.store.legacy import import_legacy, legacy_approvals, legacy_files
from deepwork_core.state.store.port import Clock, ProjectRef, Store, wall_clock
from deepwork_core.state.store.url import default_sqlite_path, parse_store_url


def project_ref(project_root: Path, machine: str | None = None) -> ProjectRef:
    """The project's identity in a store: a stable id from its machine and absolute root."""
    root = str(project_root.resolve())
    host = machine or socket.gethostname()
    digest = hashlib.sha256(f"{host}\0{root}".encode()).hexdigest()[:16]
    return ProjectRef(project_id=digest, root=root, machine=host)


def choose_store_url(project_root: Path, given: str | None) -> str | None:
    """The URL of the project's store: `given` (what the root read from `DEEPWORK_STORE_URL`)
    when set, else `store.url` of the project's `.deepwork/config.yml`; None: its SQLite file.

    Raises `config.invalid` for a config file that does not parse."""
    return (given or "").strip() or load_config(project_root).store.url


def open_store(
    url: str | None, project_root: Path, *, clock: Clock = wall_clock, machine: str | None = None
) -> Store:
    """Open (and migrate) the store `url` names for `project_root`, importing the files an
    older DeepWork kept (`deepwork_core.state.store.legacy`) on its first open.

    Raises `store.url_invalid`, `store.corrupt`, `store.foreign`, `store.schema_newer`,
    `store.auth_failed` or `store.unavailable`; on any of them nothing was written. An old
    file that cannot be imported is set aside, with a warning in the store's `notices`.
    """
    location = parse_store_url(url, project_root)
    project = project_ref(project_root, machine)
    store: Store
    if location.kind == "postgresql":
        from deepwork_core.state.store.postgres import PostgresStore

        store = PostgresStore(location, project, clock)
    else:
        from deepwork_core.state.store.sqlite import SqliteStore

        assert location.path is not None
        _require_folders(location.path.parent, project_root)
        if location.path == default_sqlite_path(project_root):
            ensure_tmp_dir(project_root)
        else:
            location.path.parent.mkdir(parents=True, exist_ok=True)
        store = SqliteStore(location, project, clock)
    try:
        store.migrate()
        store.notices.extend(import_legacy(store, project_root))
    except BaseException:
        store.close()
        raise
    return store


def _require_folders(folder: Path, project_root: Path) -> None:
    """Raise `store.not_a_folder` naming the first of `folder` and its parents that exists
    and is no folder (a plain file, a FIFO…), so that nothing is created in its place."""
    for path in reversed([folder, *folder.parents]):
        if (path.exists() or path.is_symlink()) and not path.is_dir():
            shown = path.relative_to(project_root) if path.is_relative_to(project_root) else path
            raise StoreError(
                f"the store's folder {shown} is not a folder (a file or a FIFO is in its "
                "place); move it away or delete it, and the next call makes the folder. "
                "Nothing was written",
                code=StoreCode.STORE_NOT_A_FOLDER,
            )


def has_store(url: str | None, project_root: Path) -> bool:
    """True when the project has a store to read: a URL names one, or its SQLite file or the
    files of an older DeepWork (imported on the first open) exist."""
    if url is not None or default_sqlite_path(project_root).exists():
        return True
    sessions, logs = legacy_files(project_root)
    return bool(sessions or logs or legacy_approvals(project_root))


def open_existing_store(
    url: str | None, project_root: Path, *, clock: Clock = wall_clock, machine: str | None = None
) -> Store | None:
    """`open_store` for a root that only reads: None when the project has no store yet
    (`has_store`), so reading an empty project creates nothing."""
    if not has_store(url, project_root):
        return None
    return open_store(url, project_root, clock=clock, machine=machine)


class StoreWhenItExists:
    """The store of a project, for a root that reads it for a long time (`deepwork status
    --watch`, the dashboard): opened the first time the project has one (`has_store`), then
    kept until `close`. Until then `get` answers None and nothing is created. Thread-safe."""

    def __init__(self, url: str | None, project_root: Path) -> None:
        self.url = url
        self.project_root = project_root
        self._lock = threading.Lock()
        self._store: Store | None = None
        self._closed = False

    def get(self) -> Store | None:
        """The open store, or None while the project has none."""
        with self._lock:
            if self._store is None and not self._closed:
                self._store = open_existing_store(self.url, self.project_root)
            return self._store

    def close(self) -> None:
        with self._lock:
            store, self._store, self._closed = self._store, None, True
        if store is not None:
            store.close()
