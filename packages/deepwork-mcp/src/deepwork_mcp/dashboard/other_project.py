"""Another project of the dashboard's store, read as if the store were opened for it, so a run
of any checkout on a shared store opens from any dashboard on that store (docs/team.md).

`ProjectOfStore` is the dashboard's own store seen under another `ProjectRef`: every query the
read model makes names that project's id; transactions are the opened store's (one connection,
its locks), and closing it leaves the store open for the dashboard that opened it.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from deepwork_core.state.store.port import ProjectRef, Store, Tx
from deepwork_core.state.store.tables.approval_rows import project_of


class ProjectOfStore(Store):
    """`store` as the store of project `project` (another checkout using the same database)."""

    def __init__(self, store: Store, project: ProjectRef) -> None:
        super().__init__(store.location, project, store.clock)
        self.kind = store.kind
        self.skip_locked = store.skip_locked
        self._opened = store

    @contextlib.contextmanager
    def write(self, lock: str | None = None) -> Iterator[Tx]:
        with self._opened.write(lock) as tx:
            yield tx

    @contextlib.contextmanager
    def read(self) -> Iterator[Tx]:
        with self._opened.read() as tx:
            yield tx

    def _transaction(
        self, *, write: bool, lock: str | None
    ) -> contextlib.AbstractContextManager[Tx]:
        raise RuntimeError("transactions of another project run on the store that was opened")

    def _table_names(self, tx: Tx) -> set[str]:
        raise RuntimeError("another project's view never migrates the store")

    def close(self) -> None:
        """Nothing: the store stays open for whoever opened it."""


def other_project(store: Store, project_id: str) -> ProjectOfStore | None:
    """Project `project_id` of `store` (None when the store has no such project)."""
    with store.read() as tx:
        found = project_of(tx, project_id)
    if found is None:
        return None
    return ProjectOfStore(store, ProjectRef(project_id, found[0], found[1]))
