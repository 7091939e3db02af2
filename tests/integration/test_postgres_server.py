"""The test run's PostgreSQL server is real: it authenticates, isolates, and stops and starts."""

from __future__ import annotations

from urllib.parse import urlsplit

import psycopg
import pytest

from tests.fixtures.postgres import LocalPostgres


def test_each_test_database_is_empty_and_separate(postgres: LocalPostgres) -> None:
    first, second = postgres.create_database(), postgres.create_database()
    with psycopg.connect(first, autocommit=True) as conn:
        conn.execute("CREATE TABLE runs (id text)")
        conn.execute("INSERT INTO runs VALUES ('a')")
    with psycopg.connect(second, autocommit=True) as conn:
        tables = conn.execute("SELECT count(*) FROM pg_tables WHERE tablename = 'runs'").fetchone()
    assert tables == (0,)


def test_a_wrong_password_is_refused(postgres: LocalPostgres) -> None:
    with pytest.raises(psycopg.OperationalError, match="password authentication failed"):
        psycopg.connect(postgres.url(password="wrong"), connect_timeout=5)


@pytest.mark.slow
def test_the_server_stops_and_comes_back_with_its_data(postgres: LocalPostgres) -> None:
    url = postgres.create_database()
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("CREATE TABLE kept (n int)")
        conn.execute("INSERT INTO kept VALUES (7)")
    postgres.stop()
    try:
        with pytest.raises(psycopg.OperationalError):
            psycopg.connect(url, connect_timeout=5)
    finally:
        postgres.start()
    with psycopg.connect(url) as conn:
        assert conn.execute("SELECT n FROM kept").fetchall() == [(7,)]


def test_each_test_store_is_empty_separate_and_out_of_reach_of_the_others(
    postgres: LocalPostgres,
) -> None:
    first, second = postgres.new_store_url(), postgres.new_store_url()
    with psycopg.connect(first, autocommit=True) as conn:
        schema = conn.execute("SELECT current_schema()").fetchone()
        conn.execute("CREATE TABLE runs (id text)")
        conn.execute("INSERT INTO runs VALUES ('a')")
    assert schema is not None
    assert schema[0] == urlsplit(first).username  # unqualified names land in the role's own
    with psycopg.connect(second, autocommit=True) as conn:
        tables = conn.execute(
            "SELECT count(*) FROM information_schema.tables WHERE table_schema = current_schema()"
        ).fetchone()
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            conn.execute(f'SELECT * FROM "{schema[0]}".runs')
    assert tables == (0,)
