"""Run the DeepWork benchmarks against the real `deepwork serve` and print the budget report.

    python benchmarks/run.py [--quick] [--out PATH] [--only NAME] [--deepwork PATH]

Every workload is generated in a temporary folder that is removed afterwards. The report prints
the median (min, max, n) of every figure with its budget verdict, and writes the same as JSON
(default `benchmarks/results/latest.json`). A figure whose feature is not available yet is
reported as unavailable and does not change the exit status; a failed sanity check (for example
an edit that `get_workflows` does not show) makes the run exit 1.
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
import traceback
from datetime import UTC, datetime
from pathlib import Path

import anyio

sys.path.insert(0, str(Path(__file__).parent))

from harness import ServerUnavailable
from report import FIGURE_KEYS, Figure, Status, format_line, write_json
from scenarios import ALIASES, FULL, QUICK, SCENARIOS, Bench

DEFAULT_OUT = Path(__file__).parent / "results" / "latest.json"


def _parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="small sizes, few repetitions")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="where to write the JSON")
    names = sorted([*SCENARIOS, *ALIASES])
    parser.add_argument(
        "--only",
        action="append",
        choices=names,
        metavar="NAME",
        help=f"run only this scenario (repeatable): {', '.join(names)}",
    )
    parser.add_argument(
        "--deepwork",
        default=None,
        help="the deepwork executable (default: the one next to this Python)",
    )
    return parser.parse_args(argv)


def _deepwork_command(explicit: str | None) -> str:
    if explicit:
        return explicit
    beside = Path(sys.executable).with_name("deepwork")
    if beside.exists():
        return str(beside)
    found = shutil.which("deepwork")
    if found is None:
        raise SystemExit("no deepwork executable next to this Python or on PATH; pass --deepwork")
    return found


def _finish_missing(bench: Bench, prefixes: tuple[str, ...], status: Status, reason: str) -> None:
    """Mark figures of a scenario that stopped early (or never ran) with why."""
    for key in FIGURE_KEYS:
        if not key.startswith(prefixes):
            continue
        figure = bench.figures.get(key)
        if figure is None:
            figure = bench.figures[key] = Figure(key, key, "ms")
        if not figure.samples:
            figure.status = status
            figure.reason = reason


def _git_commit() -> str | None:
    try:
        result = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"],
            cwd=Path(__file__).parent,
            capture_output=True,
            text=True,
            timeout=10,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return result.stdout.strip() or None


async def _run(bench: Bench, selected: list[str]) -> bool:
    """Run the selected scenarios; False when any of them failed."""
    ok = True
    for name in selected:
        scenario, prefixes = SCENARIOS[name]
        began = time.perf_counter()
        print(f"… {name}", file=sys.stderr, flush=True)
        try:
            await scenario(bench)
        except ServerUnavailable as exc:
            _finish_missing(bench, prefixes, "unavailable", str(exc))
        except Exception as exc:
            traceback.print_exc()
            ok = False
            _finish_missing(bench, prefixes, "failed", f"{type(exc).__name__}: {exc}")
        print(f"  {name} took {time.perf_counter() - began:.1f} s", file=sys.stderr, flush=True)
    return ok


def main(argv: list[str] | None = None) -> int:
    args = _parse(argv)
    sizes = QUICK if args.quick else FULL
    selected = list(SCENARIOS)
    if args.only:
        wanted = {ALIASES.get(name, name) for name in args.only}
        selected = [name for name in SCENARIOS if name in wanted]
    deepwork = _deepwork_command(args.deepwork)
    started = time.perf_counter()
    load_at_start = os.getloadavg()[0]
    with tempfile.TemporaryDirectory(prefix="deepwork-bench-") as scratch:
        bench = Bench(deepwork=deepwork, sizes=sizes, scratch=Path(scratch))
        ok = anyio.run(_run, bench, selected)
    for name, (_, prefixes) in SCENARIOS.items():
        if name not in selected:
            _finish_missing(bench, prefixes, "skipped", "not selected (--only)")
    figures = [bench.figures[key] for key in FIGURE_KEYS if key in bench.figures]

    mode = "quick" if args.quick else "full"
    print(f"\nDeepWork benchmarks ({mode}; medians of repeated runs)")
    for figure in figures:
        if figure.status != "skipped":
            print(format_line(figure, args.quick))
    load_at_end = os.getloadavg()[0]
    meta = {
        "mode": mode,
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "commit": _git_commit(),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "cpus": os.cpu_count(),
        "load_average_at_start": load_at_start,
        "load_average_at_end": load_at_end,
        "deepwork": deepwork,
        "scenarios": selected,
        "seconds": round(time.perf_counter() - started, 1),
    }
    write_json(args.out, figures, meta, args.quick)
    busiest = max(load_at_start, load_at_end)
    if busiest > (os.cpu_count() or 1):
        print(f"\nwarning: load average {busiest:.1f} on {os.cpu_count()} CPUs; timings are noisy")
    print(f"\nwrote {args.out} in {meta['seconds']} s")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
