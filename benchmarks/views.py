"""Every view at 100,000 runs (issue 45): what a person or agent reads must not grow with history.

    uv run python benchmarks/views.py                  # 100,000 runs, SQLite and PostgreSQL
    uv run python benchmarks/views.py --runs 10000 --no-postgres

The store is seeded through its own write path: two real runs are made by the engine (a
completed 5-step run and an aborted one), then each is written again under new
session ids with `save_session` and its event rows, as an import writes them, until the
project holds `--runs` runs. Each view is then timed in process, server side (what the
command or page handler runs, without the HTTP or terminal around it):

- `status`: `project_overview` (the stacks, the five newest finished runs, the branches);
- `status --all`: one page of `list_session_rows` and `count_session_rows`;
- the dashboard's run list (`views.runs`), a run page (`views.session_page_view`), the Approvals
  page (`approval_views.open_approvals`) and the Reviews page (`reviews.review_rows`);
- `deepwork stats` (`collect_stats`: its newest 200 runs, the started events found through
  their index);
- the reference, measured in the same run: the read model's `list_sessions`, which parses every
  session document of the project (what `status` and the run page's instance list read before).

The peak of Python memory allocated while the dashboard's views run once is reported too. On
PostgreSQL the seeding is followed by `VACUUM ANALYZE` (`store.settle`), as autovacuum runs it
after such a load: `stats` took 620 ms measured at once, 220 ms after `ANALYZE` alone and 35 ms
after both (its count of the project's runs is an index-only scan once pages are all-visible).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).parent))

from store import settle, time_calls  # noqa: E402
from workloads import LONG_JOB, make_long_workflow  # noqa: E402

RUNS = 100_000
#: The budget of each view, server side (issue 45).
BUDGET_MS = 150.0
_BATCH = 2_000


def _templates(root: Path, store: Any) -> list[str]:
    """Two real runs made by the engine: one completed, one aborted after its first step."""
    from deepwork_core.engine.workflow import WorkflowEngine
    from deepwork_core.jobs.discovery import JobCatalog
    from deepwork_core.state.sessions import SessionStore

    outputs = make_long_workflow(root, 5)
    engine = WorkflowEngine(root, JobCatalog.for_project(root), SessionStore(store, root))
    made = []
    made.append(engine.start("done", LONG_JOB, "long", inputs={}).brief.session_id)
    for index, path in enumerate(outputs, start=1):
        engine.finish({f"s{index:02d}_out.md": path})
    made.append(engine.start("given up", LONG_JOB, "long", inputs={}).brief.session_id)
    engine.finish({"s01_out.md": outputs[0]})
    engine.abort("not needed")
    return made


def seed(store: Any, root: Path, count: int) -> str:
    """Fill the project with `count` finished runs; the id of one of them (for its page)."""
    import json

    from deepwork_core.state.store.schema import list_columns
    from deepwork_core.state.store.tables.session_rows import SessionRow, save_session

    project = store.project.project_id
    templates = _templates(root, store)
    with store.read() as tx:
        rows = {
            sid: tx.execute(
                "SELECT job, workflow, status, agent, branch, started_at, completed_at, body "
                "FROM sessions WHERE project_id = ? AND session_id = ?",
                (project, sid),
            )[0]
            for sid in templates
        }
        events = {
            sid: tx.execute(
                "SELECT ts, kind, body FROM events WHERE project_id = ? AND session_id = ? "
                "ORDER BY seq",
                (project, sid),
            )
            for sid in templates
        }
    for start in range(0, count - len(templates), _BATCH):
        with store.write() as tx:
            for n in range(start, min(start + _BATCH, count - len(templates))):
                source = templates[n % len(templates)]
                job, workflow, status, agent, branch, began, completed, body = rows[source]
                new = f"sess_{n:012x}"
                shift = float(n)
                text = str(body).replace(source, new)
                listed = list_columns(json.loads(text))
                row = SessionRow(
                    new, job, workflow, status, agent, branch, began - count + shift,
                    None if completed is None else completed - count + shift, text, listed,
                )  # fmt: skip
                save_session(tx, project, store.project.machine, row, began - count + shift)
                for ts, kind, line in events[source]:
                    tx.execute(
                        "INSERT INTO events (project_id, session_id, ts, kind, body) "
                        "VALUES (?, ?, ?, ?, ?)",
                        (project, new, ts - count + shift, kind, str(line).replace(source, new)),
                    )
    return templates[0]


def measure(url: str | None, count: int, repeats: int) -> dict[str, list[float]]:
    """Milliseconds of each view over a project of `count` runs (see the module)."""
    from deepwork_core.state.overview import project_overview
    from deepwork_core.state.read_model.runs import list_sessions as every_run
    from deepwork_core.state.sessions import SessionStore
    from deepwork_core.state.stats import collect_stats
    from deepwork_core.state.store.opening import open_store
    from deepwork_core.state.store.tables.session_lists import count_session_rows, list_session_rows
    from deepwork_mcp.dashboard import approval_views, reviews, views

    with tempfile.TemporaryDirectory(prefix="deepwork-views-bench-") as folder:
        root = Path(folder) / "p"
        root.mkdir()
        with open_store(url, root) as store:
            began = time.perf_counter()
            shown = seed(store, root, count)
            print(f"  seeded {count:,} runs in {time.perf_counter() - began:.1f} s", flush=True)
            settle(url)  # what autovacuum does after such a load (see the module)
            sessions = SessionStore(store, root)

            def status_all() -> None:
                with store.read() as tx:
                    list_session_rows(tx, limit=1000)
                    count_session_rows(tx)

            checks: dict[str, Callable[[], object]] = {
                "status": lambda: project_overview(sessions),
                "status --all (one page)": status_all,
                "dashboard run list": lambda: views.runs(sessions),
                "dashboard run page": lambda: views.session_page_view(sessions, shown),  # type: ignore[arg-type]
                "dashboard approvals": lambda: approval_views.open_approvals(sessions),
                "dashboard reviews": lambda: reviews.review_rows(store),
                "stats": lambda: collect_stats(store),
            }
            figures = {name: time_calls(call, repeats) for name, call in checks.items()}
            tracemalloc.start()
            for name in ("dashboard run list", "dashboard run page", "dashboard approvals"):
                checks[name]()
            peak = tracemalloc.get_traced_memory()[1]
            tracemalloc.stop()
            figures["dashboard views, peak MiB"] = [peak / 2**20]
            figures["reference: every document parsed"] = time_calls(lambda: every_run(sessions), 1)
    return figures


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=RUNS)
    parser.add_argument("--repeats", type=int, default=10)
    parser.add_argument("--no-postgres", action="store_true", help="SQLite only")
    args = parser.parse_args()
    from store import store_targets

    with store_targets(args.no_postgres) as targets:
        for name, url in targets:
            print(f"{name}: {args.runs:,} runs", flush=True)
            figures = measure(url(), args.runs, args.repeats)
            reference = statistics.median(figures["reference: every document parsed"])
            for view, samples in figures.items():
                if view.endswith("MiB"):
                    print(f"  {view}: {samples[0]:.1f} MiB (budget 250)")
                    continue
                median = statistics.median(samples)
                worst = max(samples)
                verdict = "ok" if median <= BUDGET_MS or view.startswith("reference") else "OVER"
                print(
                    f"  {view}: median {median:.2f} ms, max {worst:.2f} ms, "
                    f"{median / reference:.4f}x the reference  [{verdict}]",
                    flush=True,
                )


# --- the figures of `benchmarks/run.py` -------------------------------------------------------

#: The figure key of each view of `measure`.
VIEW_KEYS = {
    "status": "status",
    "status --all (one page)": "status_all",
    "dashboard run list": "run_list",
    "dashboard run page": "run_page",
    "dashboard approvals": "approvals",
    "dashboard reviews": "reviews",
    "stats": "stats",
    "dashboard views, peak MiB": "peak_mib",
    "reference: every document parsed": "reference",
}
QUICK_RUNS = 2_000


async def views_figures(bench: Any) -> None:
    """Fill the `views.*` figures: every view at 100,000 runs (2,000 at `--quick`), on SQLite
    and PostgreSQL, with the old path (every document parsed) as the reference."""
    from store import on_each_store

    count = QUICK_RUNS if bench.sizes.long_steps < 50 else RUNS

    def figures_of(kind: str, name: str) -> dict[str, Any]:
        return {
            view: bench.figure(
                f"views.{kind}.{key}",
                f"{name}, {count:,} runs: {view}",
                "MiB" if key == "peak_mib" else "ms",
                runs=count,
            )
            for view, key in VIEW_KEYS.items()
        }

    reference = "reference: every document parsed"
    await on_each_store(bench, figures_of, lambda url: measure(url, count, 5), reference)


if __name__ == "__main__":
    main()
