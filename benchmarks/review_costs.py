"""What reviews cost when little changed, and how close the price before the run comes.

A step with 20 page outputs, each reviewed on its own (`run_each: pages`), is judged by a
reviewer double under the gate's policy (`ReviewCalls`, as in the server): the first round
passes 19 pages and fails one (`needs_work`), that page is then edited, and the same run's
second attempt is judged. Under the default `reuse: passes` the 19 unchanged pages take their
kept verdict; the figure is the second round's reviewer calls and cost as a share of the first's
(docs/quality-gate.md, "Verdicts reused"; budget <= 10 %).

The estimate is checked on recorded runs: the double reports tokens and cost in proportion to
what it is sent, with a spread of +-20 % from page to page (pages differ in length). Before a
round, each task's expected USD is taken (`ReviewCalls.price`), then the round is run; the
figure is the largest gap between the expected and the spent total of a round, in percent
(budget +-25 %), over a first round (no history: "estimated from size") and later rounds with
reuse off ("from N earlier reviews").
"""

from __future__ import annotations

import random
import threading
from pathlib import Path

from deepwork_core.base.config import ReuseMode
from deepwork_core.gate.calls import ReviewCalls
from deepwork_core.gate.checkpoint import Checkpoint
from deepwork_core.gate.costs.prices import DEFAULT_PRICES, cost_at
from deepwork_core.gate.quality import plan_review_tasks
from deepwork_core.gate.reviewer import ReviewBrief, ReviewerReply
from deepwork_core.jobs.parser import load_job
from deepwork_core.state.store.opening import open_store
from deepwork_core.state.store.port import Store
from deepwork_core.state.usage.pair import RequestUsage
from deepwork_core.state.usage.totals import run_usage

PAGES = 20
_JOB = """\
name: pages
version: "1.0.0"
summary: Pages reviewed one by one
common_job_info_provided_to_all_steps_at_runtime: A bench job.
workflows:
  - name: main
    summary: Main
    steps: [write]
steps:
  - id: write
    name: Write
    description: Write the pages
    instructions_file: steps/write.md
    outputs:
      pages:
        type: files
        description: Pages
        required: true
    reviews:
      - run_each: pages
        quality_criteria:
          Sourced: Does every claim name its source?
          Current: Are the figures from this year?
"""


class _Double:
    """A reviewer that spends in proportion to what it reads, and fails the `failing` pages."""

    name = "claude"

    def __init__(self, seed: int) -> None:
        self.failing: set[str] = set()
        self.calls = 0
        self.random = random.Random(seed)
        self.lock = threading.Lock()

    def review(self, brief: ReviewBrief, cancelled: threading.Event) -> ReviewerReply:
        with self.lock:
            self.calls += 1
            spread = self.random.uniform(0.8, 1.2)
        read = len(brief.message.encode()) + sum(
            (brief.project_root / path).stat().st_size for path in brief.task.files
        )
        usage = RequestUsage(
            input_tokens=round(read / 4 * spread), output_tokens=round(250 * spread)
        )
        usd = cost_at(DEFAULT_PRICES["claude-sonnet"], usage)
        passed = brief.task.target_file not in self.failing
        results = [
            {"criterion": name, "passed": passed, "feedback": "" if passed else "no"}
            for name in brief.task.criteria
        ]
        reply = {"passed": passed, "feedback": "ok", "criteria_results": results}
        return ReviewerReply(
            reply=reply,
            usage=usage.model_copy(update={"cost_usd": usd, "model": "claude-sonnet-4-5"}),
        )


def _project(root: Path) -> list[str]:
    (root / ".deepwork" / "jobs" / "pages" / "steps").mkdir(parents=True)
    (root / ".deepwork" / "jobs" / "pages" / "job.yml").write_text(_JOB)
    (root / ".deepwork" / "jobs" / "pages" / "steps" / "write.md").write_text("Write.\n")
    (root / "out").mkdir()
    pages = []
    for number in range(PAGES):
        path = f"out/page{number:02d}.md"
        body = f"# Page {number}\n\n" + "A sentence with a figure and its source. " * (
            40 + 7 * number
        )
        (root / path).write_text(body + "\n")
        pages.append(path)
    return pages


def _checkpoint(
    root: Path, store: Store, pages: list[str], session: str, attempt: int = 1
) -> Checkpoint:
    return Checkpoint(
        project_root=root,
        store=store,
        session_id=session,
        job=load_job(root / ".deepwork" / "jobs" / "pages"),
        step_ids=("write",),
        outputs={"pages": pages},
        input_files=[],
        notes="Wrote the pages.",
        attempt=attempt,
    )


def _round(calls: ReviewCalls, checkpoint: Checkpoint) -> tuple[float, float]:
    """(expected USD, spent USD) of one round of every task of `checkpoint`."""
    tasks = plan_review_tasks(checkpoint)
    expected = calls.price(checkpoint, tasks).usd
    before = run_usage(checkpoint.store, checkpoint.resolved_run_id).cost_usd
    for task in tasks:
        calls.judge(checkpoint, task, threading.Event())
    spent = run_usage(checkpoint.store, checkpoint.resolved_run_id).cost_usd - before
    return expected, spent


def rereview_share(root: Path, reuse: ReuseMode = "passes") -> dict[str, float]:
    """The second round's calls and cost as percentages of the first's (see the module)."""
    root.mkdir(parents=True, exist_ok=True)
    pages = _project(root)
    double = _Double(seed=42)
    with open_store(None, root) as store:
        calls = ReviewCalls(double, reuse=reuse)
        double.failing = {pages[7]}
        first_checkpoint = _checkpoint(root, store, pages, "bench_run")
        _, first_cost = _round(calls, first_checkpoint)
        first_calls = double.calls
        page = root / pages[7]
        page.write_text(page.read_text() + "One more sourced sentence.\n")
        double.failing = set()
        second_checkpoint = _checkpoint(root, store, pages, "bench_run", attempt=2)
        _, second_cost = _round(calls, second_checkpoint)
        second_calls = double.calls - first_calls
    return {
        "calls_pct": round(100 * second_calls / first_calls, 2),
        "cost_pct": round(100 * second_cost / first_cost, 2),
        "first_calls": first_calls,
        "second_calls": second_calls,
    }


def estimate_error(root: Path, rounds: int = 4) -> dict[str, float]:
    """The largest gap, in percent, between a round's expected and spent USD (see the module)."""
    root.mkdir(parents=True, exist_ok=True)
    pages = _project(root)
    gaps: dict[str, float] = {}
    with open_store(None, root) as store:
        calls = ReviewCalls(_Double(seed=7), reuse="off")
        for number in range(rounds):
            checkpoint = _checkpoint(root, store, pages, f"bench_round{number}")
            expected, spent = _round(calls, checkpoint)
            gaps[f"round{number}"] = round(100 * (expected - spent) / spent, 2)
    worst = max(gaps.values(), key=abs)
    return {"worst_pct": worst, **gaps}
