"""`get_workflows` over 1,000 jobs against the code before the store's wave (issue 45, item 4).

    uv run nox -s bench -- --only listing_before
    uv run python benchmarks/listing_before.py [--rounds 6] [--jobs 1000]

The reference is commit `BEFORE` (70f58a6, the last commit of `main` before the wave that
started with the dashboard's templates and went on with issue 38's house rules): it is checked
out with `git worktree add --detach` into the scratch folder and served with this Python, its
own packages first on `PYTHONPATH` (the dependencies are this environment's). Each version
lists its own copy of the same 1,000-job project, so neither reads a file the other touched.

Each round starts one server of each version, in turns (which goes first alternates), and
times: spawn to the answer of the first `get_workflows` (what a new agent session waits for),
the first call alone, and ten repeats (warm). Figures: each version's medians and main's
median over the reference's (budget ≤ 1.0 × for the first call and the repeat).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import anyio

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).parent))

from harness import ServerUnavailable, connect  # noqa: E402
from workloads import make_jobs_project  # noqa: E402

#: The last commit of main before the wave that issue 45 measured against.
BEFORE = "70f58a63b0023544e151477bb1919c9a83e36b34"
JOBS = 1_000
REPEATS = 10
_PACKAGES = ("deepwork-core", "deepwork-mcp", "deepwork-review")
_CALLS = ("spawn_to_first", "first", "repeat")


@contextmanager
def checkout(commit: str, where: Path) -> Iterator[Path]:
    """`commit` in a detached worktree at `where`, removed again afterwards; unavailable when
    the clone does not hold it (a shallow clone)."""
    added = subprocess.run(
        ["git", "-C", str(ROOT), "worktree", "add", "--detach", "--quiet", str(where), commit],
        check=False,
        capture_output=True,
        text=True,
    )
    if added.returncode != 0:
        why = added.stderr.strip().splitlines()[-1:] or ["no reason given"]
        raise ServerUnavailable(f"commit {commit[:7]} cannot be checked out here: {why[0]}")
    try:
        yield where
    finally:
        subprocess.run(
            ["git", "-C", str(ROOT), "worktree", "remove", "--force", str(where)],
            check=False,
            capture_output=True,
        )


def _env(source: Path | None) -> dict[str, str]:
    """The server's environment: this one, with `source`'s packages first when given."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "DEEPWORK_OTEL"))}
    if source is not None:
        paths = [str(source / "packages" / name / "src") for name in _PACKAGES]
        env["PYTHONPATH"] = os.pathsep.join(paths)
    else:
        env.pop("PYTHONPATH", None)
    return env


async def _one_server(
    project: Path, env: dict[str, str], log: Any, jobs: int
) -> dict[str, list[float]]:
    """One server's spawn-to-first-answer, first call and repeats (ms) over `jobs` jobs."""
    args = ["-m", "deepwork_mcp", "serve", "--path", str(project)]
    args += ["--no-branch", "--no-quality-gate"]
    began = time.perf_counter()
    async with connect(sys.executable, args, cwd=project, stderr=log, env=env) as server:
        await server.list_tools()
        first, payload = await server.call("get_workflows")
        answered = time.perf_counter()
        listed = payload.get("jobs") if isinstance(payload, dict) else None
        if not isinstance(listed, list) or len(listed) < jobs:
            raise RuntimeError(f"get_workflows listed {len(listed or [])} jobs, not {jobs}")
        repeats = [(await server.call("get_workflows"))[0] for _ in range(REPEATS)]
    return {"spawn_to_first": [(answered - began) * 1000], "first": [first], "repeat": repeats}


async def measure(scratch: Path, rounds: int, jobs: int) -> dict[str, dict[str, list[float]]]:
    """Samples of each call, by version (`main`, `before`), the versions taking turns."""
    samples: dict[str, dict[str, list[float]]] = {
        version: {call: [] for call in _CALLS} for version in ("main", "before")
    }
    with checkout(BEFORE, scratch / "before_src") as source:
        projects = {}
        for version in samples:
            projects[version] = scratch / f"listing_{version}"
            make_jobs_project(projects[version], jobs)
        envs = {"main": _env(None), "before": _env(source)}
        with (scratch / "listing_before.stderr.log").open("a+", encoding="utf-8") as log:
            for round_ in range(rounds):
                order = ("main", "before") if round_ % 2 == 0 else ("before", "main")
                for version in order:
                    got = await _one_server(projects[version], envs[version], log, jobs)
                    for call, values in got.items():
                        samples[version][call].extend(values)
    return samples


# --- the figures of `benchmarks/run.py` -------------------------------------------------------


async def listing_before_figures(bench: Any) -> None:
    """Fill the `listing_before.*` figures (see the module)."""
    quick = bench.sizes.long_steps < 50
    rounds, jobs = (2, 100) if quick else (6, JOBS)
    measured = await measure(bench.scratch, rounds, jobs)
    for version, calls in measured.items():
        for call, values in calls.items():
            figure = bench.figure(
                f"listing_before.{version}.{call}",
                f"get_workflows, {jobs:,} jobs, {version}: {call.replace('_', ' ')}",
                jobs=jobs,
                rounds=rounds,
                commit=BEFORE[:7] if version == "before" else "HEAD",
            )
            figure.samples.extend(values)
    for call in _CALLS:
        now, then = (statistics.median(measured[v][call]) for v in ("main", "before"))
        ratio = bench.figure(
            f"listing_before.{call}_ratio",
            f"get_workflows, {jobs:,} jobs: {call.replace('_', ' ')}, main / before the wave",
            "x",
            main_ms=now,
            before_ms=then,
        )
        ratio.samples.append(now / then)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--jobs", type=int, default=JOBS)
    args = parser.parse_args()
    scratch = Path(tempfile.mkdtemp(prefix="deepwork-listing-bench-"))
    try:
        measured = anyio.run(measure, scratch, args.rounds, args.jobs)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    for call in _CALLS:
        now, then = (statistics.median(measured[v][call]) for v in ("main", "before"))
        low = min(measured["main"][call]), min(measured["before"][call])
        print(
            f"{call}: main {now:.1f} ms (min {low[0]:.1f}), before {then:.1f} ms "
            f"(min {low[1]:.1f}): {now / then:.2f} x"
        )


if __name__ == "__main__":
    main()
