"""Smoke test of the benchmark runner: `benchmarks/run.py --quick` runs and reports every figure.

No thresholds here (timing is never asserted in tests): the run must exit 0 and its JSON must hold
every figure the runner knows, each measured or marked unavailable with a reason.
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"


def _report_module() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_report", BENCHMARKS / "report.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses resolve annotations through sys.modules
    try:
        spec.loader.exec_module(module)
    finally:
        del sys.modules[spec.name]
    return module


@pytest.mark.slow
def test_quick_run_writes_every_figure(tmp_path: Path) -> None:
    out = tmp_path / "bench.json"
    result = subprocess.run(
        [sys.executable, str(BENCHMARKS / "run.py"), "--quick", "--out", str(out)],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    figures = json.loads(out.read_text())["figures"]
    keys: tuple[str, ...] = _report_module().FIGURE_KEYS
    assert sorted(figures) == sorted(keys)
    for key, figure in figures.items():
        assert figure["status"] in ("ok", "unavailable"), (key, figure["reason"])
        if figure["status"] == "ok":
            assert figure["n"] >= 1, key
            assert figure["median"] is not None, key
        else:
            assert figure["reason"], key
    # The floor needs nothing from DeepWork, so it is always measured.
    assert figures["cold_start.floor.first_call"]["status"] == "ok"
