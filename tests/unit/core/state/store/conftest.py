"""Stores for the store's tests: each test that takes `any_store` runs on SQLite and on a real
PostgreSQL (tests/fixtures/postgres.py), with a clock the test moves by hand."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from deepwork_core.state.store.opening import open_store
from deepwork_core.state.store.port import Store


class ManualClock:
    """A clock that only moves when told (leases expire without waiting)."""

    def __init__(self, start: float = 1_800_000_000.0) -> None:
        self.t = start

    def __call__(self) -> float:
        return self.t

    def advance(self, seconds: float) -> None:
        self.t += seconds


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock()


@pytest.fixture(params=["sqlite", "postgresql"])
def store_url(request: pytest.FixtureRequest) -> str | None:
    """None (the project's SQLite file) or a fresh PostgreSQL database's URL."""
    if request.param == "sqlite":
        return None
    url: str = request.getfixturevalue("pg_url")
    return url


@pytest.fixture
def any_store(store_url: str | None, tmp_path: Path, clock: ManualClock) -> Iterator[Store]:
    store = open_store(store_url, tmp_path, clock=clock)
    try:
        yield store
    finally:
        store.close()


@pytest.fixture
def test_store_url(store_url: str | None) -> str | None:
    """Here `store_url` chooses the store `make_store` opens: such a test runs on both."""
    return store_url
