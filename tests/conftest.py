"""Fixtures shared by every test suite: real git repositories, a real PostgreSQL server, and
the store of a test's project (`make_store`)."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from deepwork_core.state.store.url import STORE_URL_ENV

from tests.fixtures.postgres import LocalPostgres
from tests.fixtures.postgres import available as postgres_available
from tests.fixtures.reviewer import RUNNERS, ScriptedReviewer

if TYPE_CHECKING:
    from deepwork_core.state.store.port import Store

#: The tests start hundreds of Python processes (servers, commands, hooks, reviewer doubles) and
#: pytest rewrites the assertions of every test module; with `PYTHONDONTWRITEBYTECODE` set (as some
#: shells and images do) each of them would compile again on every run what it compiled on the
#: last. The suite writes bytecode, in this process, its xdist workers and what they start, as
#: `nox -s tests` does.
sys.dont_write_bytecode = False
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)

#: The per-test timeout of a `slow` test (end to end through real subprocesses, fuzzing); every
#: other test gets the `timeout` of pyproject.toml, and `@pytest.mark.timeout(N)` wins over both.
SLOW_TIMEOUT_S = 600


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if item.get_closest_marker("slow") and not item.get_closest_marker("timeout"):
            item.add_marker(pytest.mark.timeout(SLOW_TIMEOUT_S))


PY_RULE = """\
python:
  description: Python files
  match:
    include: ["**/*.py"]
  review:
    strategy: individual
    instructions: Check the Python file.
"""


class Repo:
    """A git work tree for a test: write files, run git, commit."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def git(self, *args: str, cwd: Path | None = None) -> str:
        result = subprocess.run(
            [
                "git",
                "-c",
                "user.name=Test",
                "-c",
                "user.email=test@example.com",
                "-c",
                "commit.gpgsign=false",
                "-c",
                "init.defaultBranch=main",
                *args,
            ],
            cwd=cwd or self.root,
            capture_output=True,
            text=True,
            check=True,
            timeout=30,
        )
        return result.stdout

    def write(self, relative: str, text: str = "content\n") -> Path:
        path = self.root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        return path

    def commit(self, message: str = "change") -> None:
        self.git("add", "-A")
        self.git("commit", "-q", "--allow-empty", "-m", message)


@pytest.fixture
def make_repo(tmp_path: Path) -> Callable[..., Repo]:
    """`make_repo(name="repo")` creates an empty repository on branch `main`."""

    def make(name: str = "repo") -> Repo:
        root = tmp_path / name
        root.mkdir(parents=True)
        repo = Repo(root.resolve())
        repo.git("init", "-q")
        return repo

    return make


@pytest.fixture
def repo(make_repo: Callable[..., Repo]) -> Repo:
    """A repository with one commit on `main` holding a Python rule, on branch `feature`."""
    repo = make_repo()
    repo.write(".deepreview", PY_RULE)
    repo.write("base.py", "base\n")
    repo.commit("base")
    repo.git("checkout", "-q", "-b", "feature")
    return repo


@pytest.fixture
def scripted_reviewer(tmp_path: Path) -> ScriptedReviewer:
    """A fake `claude` reviewer answering `pass` (tests/fixtures/reviewer.py); not yet on PATH."""
    return ScriptedReviewer(tmp_path / "reviewer")


@pytest.fixture(params=RUNNERS)
def runner(request: pytest.FixtureRequest) -> str:
    """Each reviewer CLI in turn (`quality_gate.external_runner`); the double speaks each."""
    name: str = request.param
    return name


@pytest.fixture
def reviewer_on_path(
    scripted_reviewer: ScriptedReviewer, monkeypatch: pytest.MonkeyPatch
) -> ScriptedReviewer:
    """The scripted reviewer, first on PATH of this process (for servers run in-process)."""
    scripted_reviewer.install(monkeypatch)
    return scripted_reviewer


@pytest.fixture(autouse=True)
def _approval_keys_in_tmp(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Approval keys of every test (and of the servers and `deepwork approve` processes it
    starts) go to a temporary state folder, never the real `~/.local/state/deepwork`."""
    monkeypatch.setenv("DEEPWORK_STATE_DIR", str(tmp_path_factory.mktemp("deepwork-state")))


#: Whether the suite runs on CI, read before `_attended_unless_asked` hides `CI` from the tests.
ON_CI = os.environ.get("CI") == "true"


@pytest.fixture(autouse=True)
def _attended_unless_asked(monkeypatch: pytest.MonkeyPatch) -> None:
    """The servers a test starts are attended unless the test says otherwise: `CI=true` (as on
    CI) and `DEEPWORK_RUN` would make them headless (docs/headless.md)."""
    monkeypatch.delenv("CI", raising=False)
    monkeypatch.delenv("DEEPWORK_RUN", raising=False)


@pytest.fixture(scope="session")
def postgres() -> Iterator[LocalPostgres]:
    """A real PostgreSQL server for the whole test run, one per pytest-xdist worker
    (tests/fixtures/postgres.py).

    Skips, saying why, only where one cannot be started; CI (`CI=true`) fails instead, so the
    PostgreSQL half of the suite can never vanish unnoticed.
    """
    reason = postgres_available()
    if reason is not None:
        if ON_CI:
            pytest.fail(reason)
        pytest.skip(reason)
    server = LocalPostgres()
    server.start()
    try:
        yield server
    finally:
        server.destroy()


@pytest.fixture
def pg_url(postgres: LocalPostgres) -> str:
    """The URL of a new, empty store on the test process's PostgreSQL server (a role and its
    own schema: `LocalPostgres.new_store_url`)."""
    return postgres.new_store_url()


#: `DEEPWORK_TEST_STORE=postgresql` runs the tests on PostgreSQL instead of SQLite (`nox -s
#: tests_postgres`): each test's projects use an empty store of its own on the test process's
#: server, and the servers and commands a test starts get it through `DEEPWORK_STORE_URL`.
TEST_STORE_ENV = "DEEPWORK_TEST_STORE"


def on_postgres() -> bool:
    return os.environ.get(TEST_STORE_ENV) == "postgresql"


@pytest.fixture(autouse=True)
def _store_url_in_the_environment(
    request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What `DEEPWORK_STORE_URL` says to the commands and servers a test starts: nothing (each
    project's SQLite file), or the test's PostgreSQL database under `DEEPWORK_TEST_STORE`. Only
    the environment: code the test calls itself is handed a store from `make_store`."""
    monkeypatch.delenv(STORE_URL_ENV, raising=False)
    if on_postgres():
        monkeypatch.setenv(STORE_URL_ENV, request.getfixturevalue("pg_url"))


@pytest.fixture
def test_store_url(request: pytest.FixtureRequest) -> str | None:
    """The URL of the test's store: None (each project's SQLite file), or the test's
    PostgreSQL database under `DEEPWORK_TEST_STORE=postgresql`."""
    if on_postgres():
        url: str = request.getfixturevalue("pg_url")
        return url
    return None


@pytest.fixture
def make_store(test_store_url: str | None) -> Iterator[Callable[..., Store]]:
    """`make_store(root)` opens the store of project `root` as a command or a server the test
    starts would choose it: `test_store_url` (what their `DEEPWORK_STORE_URL` says), else
    `store.url` of the project's config, else its SQLite file. Keyword arguments go to
    `open_store` (`clock`, `machine`). Every store is closed after the test."""
    from deepwork_core.state.store.opening import choose_store_url, open_store

    opened: list[Store] = []

    def make(root: Path, **options: Any) -> Store:
        store = open_store(choose_store_url(root, test_store_url), root, **options)
        opened.append(store)
        return store

    yield make
    for store in reversed(opened):
        store.close()


@pytest.fixture
def store(tmp_path: Path, make_store: Callable[..., Store]) -> Store:
    """The store of `tmp_path` as a project (`make_store(tmp_path)`)."""
    return make_store(tmp_path)
