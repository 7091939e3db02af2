"""Opening a store: migrations, refusals that write nothing, masked passwords, outages."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from deepwork_core.base.error_codes import ErrorCode
from deepwork_core.state.store.errors import StoreCode, StoreError
from deepwork_core.state.store.opening import open_store, project_ref
from deepwork_core.state.store.port import Store
from deepwork_core.state.store.schema import SCHEMA_VERSION
from deepwork_core.state.store.url import default_sqlite_path, mask_url, parse_store_url

from tests.fixtures.postgres import LocalPostgres


def _meta(store: Store) -> dict[str, str]:
    with store.read() as tx:
        return {str(k): str(v) for k, v in tx.execute("SELECT key, value FROM store_meta")}


def test_a_new_store_is_migrated_and_records_the_project(any_store: Store, tmp_path: Path) -> None:
    assert _meta(any_store) == {"application": "deepwork", "schema_version": str(SCHEMA_VERSION)}
    with any_store.read() as tx:
        rows = tx.execute("SELECT project_id, root, machine FROM projects")
    ref = project_ref(tmp_path)
    assert rows == [(ref.project_id, ref.root, ref.machine)]


def test_opening_again_changes_nothing(store_url: str | None, tmp_path: Path) -> None:
    first = open_store(store_url, tmp_path)
    first.close()
    again = open_store(store_url, tmp_path)
    try:
        assert _meta(again)["schema_version"] == str(SCHEMA_VERSION)
        with again.read() as tx:
            assert len(tx.execute("SELECT project_id FROM projects")) == 1
    finally:
        again.close()


def test_the_default_store_is_the_projects_sqlite_file(tmp_path: Path) -> None:
    store = open_store(None, tmp_path)
    store.close()
    assert default_sqlite_path(tmp_path).is_file()
    assert (tmp_path / ".deepwork" / "tmp" / ".gitignore").is_file()
    assert store.kind == "sqlite"


def test_a_newer_schema_is_refused_and_nothing_is_written(
    store_url: str | None, tmp_path: Path
) -> None:
    store = open_store(store_url, tmp_path)
    with store.write() as tx:
        tx.execute("UPDATE store_meta SET value = '999' WHERE key = 'schema_version'")
    store.close()
    before = default_sqlite_path(tmp_path).read_bytes() if store_url is None else b""
    other_project = tmp_path / "other"
    other_project.mkdir()
    with pytest.raises(StoreError) as caught:
        open_store(store_url or f"sqlite:///{default_sqlite_path(tmp_path)}", other_project)
    assert caught.value.code == StoreCode.STORE_SCHEMA_NEWER
    if store_url is None:
        assert default_sqlite_path(tmp_path).read_bytes() == before
    else:
        import psycopg

        with psycopg.connect(store_url) as conn:
            projects = conn.execute("SELECT root FROM projects").fetchall()
        assert projects == [(str(tmp_path.resolve()),)]  # the other project was not recorded


@pytest.mark.parametrize(
    ("content", "code"),
    [
        (b"this is not a database at all " * 200, StoreCode.STORE_CORRUPT),
        (None, StoreCode.STORE_FOREIGN),
    ],
)
def test_a_corrupt_or_foreign_sqlite_file_is_refused_untouched(
    tmp_path: Path, content: bytes | None, code: ErrorCode
) -> None:
    path = tmp_path / "data.sqlite3"
    if content is None:
        import sqlite3

        conn = sqlite3.connect(path)
        conn.execute("CREATE TABLE customers (id INTEGER PRIMARY KEY, name TEXT)")
        conn.commit()
        conn.close()
    else:
        path.write_bytes(content)
    before = path.read_bytes()
    with pytest.raises(StoreError) as caught:
        open_store(f"sqlite:///{path}", tmp_path)
    assert caught.value.code == code
    assert str(path) in caught.value.message
    assert path.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["data.sqlite3"]


def test_a_wrong_password_is_a_coded_error_that_masks_it(
    postgres: LocalPostgres, tmp_path: Path
) -> None:
    url = postgres.url(password="not-the-password-42")
    with pytest.raises(StoreError) as caught:
        open_store(url, tmp_path)
    assert caught.value.code == StoreCode.STORE_AUTH_FAILED
    assert "not-the-password-42" not in str(caught.value)
    assert "deepwork:***@127.0.0.1" in str(caught.value)


def test_a_wrong_port_is_unavailable(postgres: LocalPostgres, tmp_path: Path) -> None:
    url = postgres.url().replace(f":{postgres.port}/", ":1/")
    with pytest.raises(StoreError) as caught:
        open_store(url, tmp_path)
    assert caught.value.code == StoreCode.STORE_UNAVAILABLE
    assert postgres.password not in str(caught.value)


def test_a_stopped_server_is_unavailable_and_the_store_recovers(
    postgres: LocalPostgres, pg_url: str, tmp_path: Path
) -> None:
    store = open_store(pg_url, tmp_path)
    try:
        postgres.stop()
        try:
            with pytest.raises(StoreError) as caught, store.read() as tx:
                tx.execute("SELECT 1")
            assert caught.value.code == StoreCode.STORE_UNAVAILABLE
            assert postgres.password not in str(caught.value)
            with pytest.raises(StoreError) as again, store.write() as tx:
                tx.execute("SELECT 1")
            assert again.value.code == StoreCode.STORE_UNAVAILABLE
        finally:
            postgres.start()
        with store.read() as tx:
            assert tx.execute("SELECT 1") == [(1,)]
    finally:
        store.close()


def test_an_unknown_scheme_is_refused(tmp_path: Path) -> None:
    with pytest.raises(StoreError) as caught:
        parse_store_url("mysql://root:hunter2@db/x", tmp_path)
    assert caught.value.code == StoreCode.STORE_URL_INVALID
    assert "hunter2" not in str(caught.value)


def test_urls_name_their_file_or_masked_server(tmp_path: Path) -> None:
    assert parse_store_url("sqlite:state/x.db", tmp_path).path == tmp_path / "state" / "x.db"
    assert parse_store_url("sqlite:///abs/x.db", tmp_path).path == Path("/abs/x.db")
    assert parse_store_url("sqlite:////abs/x.db", tmp_path).path == Path("/abs/x.db")
    assert parse_store_url("", tmp_path).path == default_sqlite_path(tmp_path)
    assert mask_url("postgresql://u:p%40ss@h:5/db") == "postgresql://u:***@h:5/db"
    assert mask_url("postgresql://h/db") == "postgresql://h/db"


def test_sqlite_never_imports_the_postgresql_driver(tmp_path: Path) -> None:
    import subprocess

    code = (
        "import sys; from pathlib import Path; "
        "from deepwork_core.state.store.opening import open_store; "
        f"open_store(None, Path({str(tmp_path)!r})).close(); "
        "print('psycopg' in sys.modules)"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    assert done.stdout.strip() == "False"
