"""Opening a store: from a URL (or none) and a project root to an open, migrated `Store`.

The URL comes from the caller: the CLI reads `DEEPWORK_STORE_URL` and `store.url` of
`.deepwork/config.yml` and passes what it found; core reads neither environment nor cwd. No URL
means the project's SQLite file. The PostgreSQL adapter (and psycopg) is imported only here, and
only for a `postgresql://` URL, so a cold start on SQLite never loads the driver.

`shared_store` keeps one open store per project, URL and process, for the modules whose public
functions take a project root (`append_event(project_root, …)`); which URL is `store_url`'s
choice (a project's own `use_store_url`, the process default the CLI sets from
`DEEPWORK_STORE_URL`, the project's `store.url`, else SQLite). Every state call asks for it, so a
call for an absolute root it already answered costs a dictionary look-up and, when the URL came
from the project's config, one `stat` of `config.yml` (an edit of the file is still seen).
"""

from __future__ import annotations

import hashlib
import os
import socket
import threading
from pathlib import Path

from deepwork_core.base.config import load_config
from deepwork_core.base.layout import CONFIG_FILE
from deepwork_core.base.runtime_dir import ensure_tmp_dir
from deepwork_core.state.store.legacy import import_legacy, legacy_approvals, legacy_files
from deepwork_core.state.store.port import Clock, ProjectRef, Store, wall_clock
from deepwork_core.state.store.url import default_sqlite_path, default_store_url, parse_store_url

_cache_lock = threading.Lock()
_stores: dict[tuple[int, str, str], Store] = {}
_urls: dict[str, str | None] = {}
#: (pid, root as given) -> what `shared_store` answered: the settings it was chosen under
#: (`_generation`, the process default, the config file's stat or None) and the store.
_answered: dict[tuple[int, str], tuple[int, str | None, tuple[int, ...] | None, Store]] = {}
_generation = [0]


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
        import_legacy(store, project_root)
    except BaseException:
        store.close()
        raise
    return store


def use_store_url(project_root: Path, url: str | None) -> None:
    """Make `shared_store(project_root)` use `url` (None: the project's SQLite file)."""
    with _cache_lock:
        _urls[str(project_root.resolve())] = url or None
        _generation[0] += 1


def store_url(project_root: Path) -> str | None:
    """The URL of the project's store (None: its SQLite file): the one `use_store_url` set, else
    the process default (`DEEPWORK_STORE_URL`, set by the CLI), else `store.url` of the project's
    `.deepwork/config.yml`."""
    root = str(project_root.resolve())
    if root in _urls:
        return _urls[root]
    return default_store_url() or load_config(project_root).store.url


def shared_store(project_root: Path) -> Store:
    """This process's open store for the project (opened on first use)."""
    given = (os.getpid(), str(project_root))
    known = _answered.get(given)
    if known is not None and (
        known[0] == _generation[0]
        and known[1] == default_store_url()
        and (known[2] is None or known[2] == _config_signature(project_root))
    ):
        return known[3]
    with _cache_lock:
        generation = _generation[0]
    default = default_store_url()
    root = str(project_root.resolve())
    from_config = root not in _urls and default is None
    signature = _config_signature(project_root) if from_config else None
    url = store_url(project_root)
    with _cache_lock:
        key = (os.getpid(), root, url or "")
        found = _stores.get(key)
        store = open_store(url, project_root) if found is None else found
        _stores[key] = store
        if project_root.is_absolute():
            _answered[given] = (generation, default, signature, store)
        return store


def _config_signature(project_root: Path) -> tuple[int, ...]:
    """What tells an edited `config.yml` apart: its stat (`()` when there is none)."""
    try:
        found = (project_root / CONFIG_FILE).stat()
    except OSError:
        return ()
    return (found.st_mtime_ns, found.st_size, found.st_ino)


def existing_store(project_root: Path) -> Store | None:
    """The project's store for a read: None when it has none yet (no SQLite file, no URL, no
    old files to import), so reading an empty project creates nothing."""
    if store_url(project_root) is None and not default_sqlite_path(project_root).exists():
        sessions, logs = legacy_files(project_root)
        if not sessions and not logs and not legacy_approvals(project_root):
            return None
    return shared_store(project_root)


def close_shared_stores() -> None:
    """Close every store `shared_store` opened in this process (tests, shutdown)."""
    with _cache_lock:
        for key, store in list(_stores.items()):
            if key[0] == os.getpid():
                store.close()
        _stores.clear()
        _answered.clear()
        _generation[0] += 1
