"""Opening a store: from a URL (or none) and a project root to an open, migrated `Store`.

The URL comes from the caller: the CLI reads `DEEPWORK_STORE_URL` and `store.url` of
`.deepwork/config.yml` and passes what it found; core reads neither environment nor cwd. No URL
means the project's SQLite file. The PostgreSQL adapter (and psycopg) is imported only here, and
only for a `postgresql://` URL, so a cold start on SQLite never loads the driver.

`shared_store` keeps one open store per project, URL and process, for the modules whose public
functions take a project root (`append_event(project_root, …)`); `use_store_url` sets the URL
those use for a project (the CLI calls it once, at start).
"""

from __future__ import annotations

import hashlib
import os
import socket
import threading
from pathlib import Path

from deepwork_core.base.runtime_dir import ensure_tmp_dir
from deepwork_core.state.store.port import Clock, ProjectRef, Store, wall_clock
from deepwork_core.state.store.url import default_sqlite_path, parse_store_url

_cache_lock = threading.Lock()
_stores: dict[tuple[int, str, str], Store] = {}
_urls: dict[str, str | None] = {}


def project_ref(project_root: Path, machine: str | None = None) -> ProjectRef:
    """The project's identity in a store: a stable id from its machine and absolute root."""
    root = str(project_root.resolve())
    host = machine or socket.gethostname()
    digest = hashlib.sha256(f"{host}\0{root}".encode()).hexdigest()[:16]
    return ProjectRef(project_id=digest, root=root, machine=host)


def open_store(
    url: str | None, project_root: Path, *, clock: Clock = wall_clock, machine: str | None = None
) -> Store:
    """Open (and migrate) the store `url` names for `project_root`.

    Raises `store.url_invalid`, `store.corrupt`, `store.foreign`, `store.schema_newer`,
    `store.auth_failed` or `store.unavailable`; on any of them nothing was written.
    """
    location = parse_store_url(url, project_root)
    project = project_ref(project_root, machine)
    store: Store
    if location.kind == "postgresql":
        from deepwork_core.state.store.postgres import PostgresStore

        store = PostgresStore(location, project, clock)
    else:
        from deepwork_core.state.store.sqlite import SqliteStore

        if location.path == default_sqlite_path(project_root):
            ensure_tmp_dir(project_root)
        elif location.path is not None:
            location.path.parent.mkdir(parents=True, exist_ok=True)
        store = SqliteStore(location, project, clock)
    try:
        store.migrate()
    except BaseException:
        store.close()
        raise
    return store


def use_store_url(project_root: Path, url: str | None) -> None:
    """Make `shared_store(project_root)` use `url` (None: the project's SQLite file)."""
    with _cache_lock:
        _urls[str(project_root.resolve())] = url or None


def store_url(project_root: Path) -> str | None:
    """The URL `use_store_url` set for the project (None: SQLite)."""
    return _urls.get(str(project_root.resolve()))


def shared_store(project_root: Path) -> Store:
    """This process's open store for the project (opened on first use)."""
    root = str(project_root.resolve())
    with _cache_lock:
        url = _urls.get(root)
        key = (os.getpid(), root, url or "")
        store = _stores.get(key)
        if store is None:
            store = open_store(url, project_root)
            _stores[key] = store
        return store


def close_shared_stores() -> None:
    """Close every store `shared_store` opened in this process (tests, shutdown)."""
    with _cache_lock:
        for key, store in list(_stores.items()):
            if key[0] == os.getpid():
                store.close()
        _stores.clear()
