"""How fast the dashboard's pages and `deepwork report --html` are built (issue 38).

    uv run nox -s bench -- --only pages        # with the other figures' report
    uv run python benchmarks/pages.py          # this file alone, printed
    uv run python benchmarks/pages.py --quick

Figures, each the HTML only (the rows and the run are read before the clock starts; reading them
is `store.*.dashboard_page`), after one untimed render:

- the runs page of a project holding 100 runs (one full page of the list);
- the run page of a 50-step run done start to end, with its timeline;
- `report`: the same run as `deepwork report --html` builds it, read and rendered (no file
  written).
- `other_run_page`: the run page of ANOTHER project of the store (`/run/SESSION?project=ID`,
  issue 39) whose run has 10,000 events, read from the store and rendered, as the dashboard's
  handler builds it (the reading is inside the clock here).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

sys.path.insert(0, str(Path(__file__).parent))

from workloads import LONG_JOB, make_long_workflow

if TYPE_CHECKING:
    from deepwork_core.state.sessions import SessionStore

#: Runs on the runs page (one full page of the list).
RUNS = 100
STEPS = 50
QUICK_STEPS = 10
#: Events of the other project's run on `other_run_page`.
EVENTS = 10_000


def _project(store: SessionStore, steps: int) -> str:
    """`RUNS` runs of a `steps`-step workflow (each of its own agent, so none nests under
    another), the first one done start to end; its session id."""
    from deepwork_core.engine.workflow import WorkflowEngine
    from deepwork_core.jobs.discovery import JobCatalog

    root = store.project_root
    outputs = make_long_workflow(root, steps)
    engine = WorkflowEngine(root, JobCatalog.for_project(root), store)
    done = engine.start("the run the page shows", LONG_JOB, "long", inputs={}).brief.session_id
    for index, path in enumerate(outputs, start=1):
        engine.finish({f"s{index:02d}_out.md": path}, session_id=done)
    for n in range(1, RUNS):
        engine.start(f"run {n}", LONG_JOB, "long", agent_id=f"agent{n}", inputs={})
    return done


def _timed(action: Callable[[], object], repeats: int) -> list[float]:
    """Seconds of `action`, `repeats` times, after one untimed run (the templates' first use
    compiles them: once per process)."""
    action()
    samples = []
    for _ in range(repeats):
        began = time.perf_counter()
        action()
        samples.append(time.perf_counter() - began)
    return samples


def rendering(steps: int, repeats: int) -> tuple[list[float], list[float], list[float]]:
    """Seconds of the runs page, the run page and the report, `repeats` times each."""
    from deepwork_core.state.sessions import SessionStore
    from deepwork_core.state.store.opening import open_store
    from deepwork_mcp.dashboard import pages, views
    from deepwork_mcp.dashboard.run_page import run_page

    with tempfile.TemporaryDirectory(prefix="deepwork-pages-bench-") as folder:
        root = Path(folder)
        with open_store(None, root) as opened:
            store = SessionStore(opened, root)
            session_id = _project(store, steps)
            rows = views.runs(store)
            assert len(rows) == RUNS, len(rows)
            page = views.session_page_view(store, session_id)
            assert len(page.detail.timeline) > steps, len(page.detail.timeline)
            run_list = _timed(lambda: pages.runs_page(rows, 1, views.RUNS_PER_PAGE), repeats)
            run = _timed(lambda: run_page(page, token="t"), repeats)
            report = _timed(
                lambda: run_page(views.session_page_view(store, session_id), token=None), repeats
            )
    return run_list, run, report


def _with_events(store: Any, session_id: str, events: int) -> None:
    """Copy the run's own events until it has `events` of them (kinds as a run writes them)."""
    project = store.project.project_id
    while True:
        with store.write() as tx:
            [(count,)] = tx.execute(
                "SELECT COUNT(*) FROM events WHERE project_id = ? AND session_id = ?",
                (project, session_id),
            )
            if count >= events:
                return
            tx.execute(
                "INSERT INTO events (project_id, session_id, ts, kind, body) "
                "SELECT project_id, session_id, ts, kind, body FROM events "
                "WHERE project_id = ? AND session_id = ? ORDER BY seq LIMIT ?",
                (project, session_id, events - count),
            )


def other_run(repeats: int, events: int = EVENTS) -> list[float]:
    """Seconds of another project's run page with `events` events, server side, `repeats`
    times: the project looked up, the run read from the store, the page rendered."""
    from deepwork_core.engine.workflow import WorkflowEngine
    from deepwork_core.jobs.discovery import JobCatalog
    from deepwork_core.state.approvals.store import ApprovalStore
    from deepwork_core.state.sessions import SessionStore
    from deepwork_core.state.store.opening import open_store
    from deepwork_mcp.dashboard import reviews, views
    from deepwork_mcp.dashboard.other_project import other_project
    from deepwork_mcp.dashboard.run_page import run_page

    with tempfile.TemporaryDirectory(prefix="deepwork-other-run-bench-") as folder:
        served, viewer = Path(folder) / "a", Path(folder) / "b"
        served.mkdir()
        viewer.mkdir()
        with open_store(None, served) as opened:
            outputs = make_long_workflow(served, QUICK_STEPS)
            store = SessionStore(opened, served)
            engine = WorkflowEngine(served, JobCatalog.for_project(served), store)
            sid = engine.start("a run of A", LONG_JOB, "long", inputs={}).brief.session_id
            for index, path in enumerate(outputs, start=1):
                engine.finish({f"s{index:02d}_out.md": path}, session_id=sid)
            _with_events(opened, sid, events)
            project_id = opened.project.project_id
            url = f"sqlite:///{opened.location.path}"
        with open_store(url, viewer) as mine:

            def page() -> str:
                other = other_project(mine, project_id)
                assert other is not None
                sessions = SessionStore(other, Path(other.project.root))
                approvals = ApprovalStore(other, viewer)
                where = f"{other.project.root} on {other.project.machine}"
                view = views.session_page_view(sessions, sid, approvals, where)  # type: ignore[arg-type]
                table = reviews.ReviewTable(rows=reviews.review_rows(other, sid), session_id=sid)
                return run_page(view, token="t", reviews=table)

            assert "a run of A" in page()
            return _timed(page, repeats)


# --- the figures of `benchmarks/run.py` -------------------------------------------------------


async def pages_speed(bench: Any) -> None:
    """Fill the `pages.*` figures (see the module docstring)."""
    import asyncio

    quick = bench.sizes.long_steps < STEPS
    steps = QUICK_STEPS if quick else STEPS
    figures = [
        bench.figure("pages.runs_list", f"runs page, {RUNS} runs", runs=RUNS),
        bench.figure("pages.run_page", f"run page, {steps} steps", steps=steps),
        bench.figure("pages.report", f"report --html, {steps} steps", steps=steps),
    ]
    samples = await asyncio.to_thread(rendering, steps, 10 if quick else 50)
    for figure, measured in zip(figures, samples, strict=True):
        figure.samples.extend(sample * 1000 for sample in measured)
    other = bench.figure(
        "pages.other_run_page", f"another project's run page, {EVENTS:,} events", events=EVENTS
    )
    measured = await asyncio.to_thread(other_run, 5 if quick else 20)
    other.samples.extend(sample * 1000 for sample in measured)


# --- run alone ---------------------------------------------------------------------------------


def _ms(samples: list[float]) -> str:
    """Median and minimum: on a busy machine the minimum is the steadier figure."""
    return f"median {statistics.median(samples) * 1000:.3f} ms (min {min(samples) * 1000:.3f})"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true", help=f"{QUICK_STEPS} steps, 10 repeats")
    parser.add_argument("--repeats", type=int, default=None)
    args = parser.parse_args()
    steps = QUICK_STEPS if args.quick else STEPS
    repeats = args.repeats or (10 if args.quick else 50)
    run_list, run, report = rendering(steps, repeats)
    print(f"runs page ({RUNS} runs): {_ms(run_list)}")
    print(f"run page ({steps} steps): {_ms(run)}")
    print(f"report ({steps} steps): {_ms(report)}")
    print(f"another project's run page ({EVENTS} events): {_ms(other_run(repeats))}")


if __name__ == "__main__":
    main()
