"""One run of 1,000,000 events: its views stay bounded (issue 45, item 2).

    uv run nox -s bench -- --only long_log
    uv run python benchmarks/long_log.py [--events 1000000] [--no-postgres]

A real run is made by the engine (a 5-step workflow, two steps done), then its log is grown to
`--events` rows with batched inserts of real event shapes, each line written by the event
models themselves (`event_line`): a step begun, its outputs submitted, a failed reviewer
verdict with its criteria and its `review_usage`, `needs_work`, the step again, a passed
verdict and its usage, the step finished; round after round. Each view is then timed in
process, server side, on SQLite and PostgreSQL:

- the dashboard's run page (`views.session_page_view`) and `deepwork report --html` (the same
  page rendered to one HTML file);
- `deepwork log` (its first page: `page_events` and the lines it prints);
- the Reviews page of the run (`reviews.review_rows` for its session);
- the reference, measured once in the same run: `read_events`, every event of the log parsed
  (what `deepwork log` read before it was paged).

On PostgreSQL the seeding is followed by `VACUUM ANALYZE` (`store.settle`), what autovacuum
does on its own within a minute of such a load: measured at once, the planner still holds the
statistics of an empty table, takes the run for 59 rows and sorts a million of them for its
newest 500 (2 s a page); a store that grew the way stores grow has statistics that fit it.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).parent))

from store import settle, time_calls  # noqa: E402
from workloads import LONG_JOB, make_long_workflow  # noqa: E402

EVENTS = 1_000_000
QUICK_EVENTS = 20_000
BUDGET_MS = 150.0
_ROWS_PER_INSERT = 400
_ROWS_PER_TX = 20_000
VIEWS = ("run_page", "report_html", "log_page", "reviews")


def _round(session_id: str, step: str) -> list[tuple[str, str]]:
    """The (kind, line) of one review round of `step`, as the gate and engine log it."""
    from deepwork_core.evidence.verdicts import CriterionVerdict
    from deepwork_core.state.event_kinds import (
        KnownEvent,
        NeedsWorkEvent,
        OutputsSubmittedEvent,
        ReviewUsageEvent,
        ReviewVerdictEvent,
        StepBegunEvent,
        StepFinishedEvent,
    )
    from deepwork_core.state.events import event_line

    at = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)
    head: dict[str, Any] = {"ts": at, "session_id": session_id}
    criteria = [
        CriterionVerdict(criterion=f"Criterion {n}", passed=n != 2, feedback="Say why.")
        for n in range(3)
    ]
    usage: dict[str, Any] = {
        "job": LONG_JOB, "step_id": step, "review": "quality", "model": "sonnet",
        "seconds": 12.5, "outcome": "needs_work", "input_tokens": 4_000, "output_tokens": 300,
        "cost_usd": 0.02, "criteria": 3,
    }  # fmt: skip
    events: list[KnownEvent] = [
        StepBegunEvent(**head, step_ids=[step]),
        OutputsSubmittedEvent(**head, step_ids=[step], outputs={f"{step}_out.md": "out.md"}),
        ReviewVerdictEvent(
            **head,
            step_id=step,
            review="quality",
            passed=False,
            feedback="One criterion failed.",
            criteria=criteria,
            attempt=1,
        ),
        ReviewUsageEvent(**head, **usage, attempt=1),
        NeedsWorkEvent(**head, step_ids=[step], attempt=1, failed_reviews=1),
        ReviewVerdictEvent(
            **head,
            step_id=step,
            review="quality",
            passed=True,
            attempt=2,
            criteria=[c.model_copy(update={"passed": True}) for c in criteria],
        ),
        ReviewUsageEvent(**head, **{**usage, "outcome": "passed"}, attempt=2),
        StepFinishedEvent(**head, step_ids=[step], verdict="reviewer"),
    ]
    return [(str(event.event), event_line(event)) for event in events]


def seed(store: Any, root: Path, count: int) -> str:
    """A real run whose log then holds `count` events; its session id."""
    from deepwork_core.engine.workflow import WorkflowEngine
    from deepwork_core.jobs.discovery import JobCatalog
    from deepwork_core.state.sessions import SessionStore

    outputs = make_long_workflow(root, 5)
    engine = WorkflowEngine(root, JobCatalog.for_project(root), SessionStore(store, root))
    session_id = str(engine.start("a long run", LONG_JOB, "long", inputs={}).brief.session_id)
    for index, path in enumerate(outputs[:2], start=1):
        engine.finish({f"s{index:02d}_out.md": path})
    project = store.project.project_id
    with store.read() as tx:
        [(have,)] = tx.execute(
            "SELECT COUNT(*) FROM events WHERE project_id = ? AND session_id = ?",
            (project, session_id),
        )
    cycle = _round(session_id, "s03")
    rows = [(project, session_id, float(n), *cycle[n % len(cycle)]) for n in range(count - have)]
    marks = ", ".join("(?, ?, ?, ?, ?)" for _ in range(_ROWS_PER_INSERT))
    for start in range(0, len(rows), _ROWS_PER_TX):
        chunk = rows[start : start + _ROWS_PER_TX]
        with store.write() as tx:
            for at in range(0, len(chunk), _ROWS_PER_INSERT):
                part = chunk[at : at + _ROWS_PER_INSERT]
                values = marks if len(part) == _ROWS_PER_INSERT else ", ".join(
                    "(?, ?, ?, ?, ?)" for _ in part
                )  # fmt: skip
                tx.execute(
                    f"INSERT INTO events (project_id, session_id, ts, kind, body) VALUES {values}",
                    [value for row in part for value in row],
                )
    return session_id


def measure(
    url: str | None, count: int, repeats: int, *, reference: bool = True
) -> dict[str, list[float]]:
    """Milliseconds of each view of one run of `count` events (see the module); the reference
    (every event parsed) only when `reference`."""
    from deepwork_core.base.identifiers import SessionId
    from deepwork_core.state.event_pages import bounded_count_text, page_events
    from deepwork_core.state.events import read_events
    from deepwork_core.state.sessions import SessionStore
    from deepwork_core.state.store.opening import open_store
    from deepwork_mcp.cli.log import DEFAULT_LIMIT, render_event
    from deepwork_mcp.dashboard import reviews, views
    from deepwork_mcp.dashboard.run_page import run_page

    with tempfile.TemporaryDirectory(prefix="deepwork-long-log-bench-") as folder:
        root = Path(folder) / "p"
        root.mkdir()
        with open_store(url, root) as store:
            began = time.perf_counter()
            shown = SessionId(seed(store, root, count))
            settle(url)  # what autovacuum does after such a load (see the module)
            print(f"  seeded {count:,} events in {time.perf_counter() - began:.1f} s", flush=True)
            sessions = SessionStore(store, root)

            def log_page() -> None:
                page = page_events(store, shown, limit=DEFAULT_LIMIT)
                said = bounded_count_text(page.older)
                assert said == bounded_count_text(count - DEFAULT_LIMIT), said
                for _, event in page.events:
                    render_event(event)

            def page() -> None:
                view = views.session_page_view(sessions, shown)
                said = bounded_count_text(view.detail.events_total)
                assert said == bounded_count_text(count), said

            checks: dict[str, Callable[[], object]] = {
                "run_page": page,
                "report_html": lambda: run_page(
                    views.session_page_view(sessions, shown), token=None
                ),
                "log_page": log_page,
                "reviews": lambda: reviews.review_rows(store, shown),
            }
            figures = {name: time_calls(call, repeats) for name, call in checks.items()}
            if reference:
                figures["reference"] = time_calls(lambda: read_events(store, shown), 1)
    return figures


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--events", type=int, default=EVENTS)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--no-postgres", action="store_true", help="SQLite only")
    parser.add_argument("--no-reference", action="store_true", help="skip the old path")
    args = parser.parse_args()
    from store import store_targets

    with store_targets(args.no_postgres) as targets:
        for name, url in targets:
            print(f"{name}: one run of {args.events:,} events", flush=True)
            figures = measure(url(), args.events, args.repeats, reference=not args.no_reference)
            reference = figures.get("reference", [float("nan")])[0]
            for view, samples in figures.items():
                median = statistics.median(samples)
                verdict = "ok" if median <= BUDGET_MS or view == "reference" else "OVER"
                print(
                    f"  {view}: median {median:.1f} ms, max {max(samples):.1f} ms, "
                    f"{median / reference:.4f}x the reference  [{verdict}]",
                    flush=True,
                )


# --- the figures of `benchmarks/run.py` -------------------------------------------------------


async def long_log_figures(bench: Any) -> None:
    """Fill the `long_log.*` figures: one run of 1,000,000 events (20,000 at `--quick`)."""
    from store import on_each_store

    count = QUICK_EVENTS if bench.sizes.long_steps < 50 else EVENTS

    def figures_of(kind: str, name: str) -> dict[str, Any]:
        return {
            view: bench.figure(
                f"long_log.{kind}.{view}",
                f"{name}, one run of {count:,} events: {view.replace('_', ' ')}",
                events=count,
            )
            for view in (*VIEWS, "reference")
        }

    await on_each_store(bench, figures_of, lambda url: measure(url, count, 5), "reference")


if __name__ == "__main__":
    main()
