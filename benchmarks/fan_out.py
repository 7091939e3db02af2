"""The fan-in merge queue of `isolation: worktree` (docs/fan-out.md), in process.

A repository of 10,000 tracked files; 8 instance worktrees made from it, each changing one
tracked file and adding one; then each instance is committed and merged into the run's branch
in item order, as fan-in does. One sample per merge (commit in the worktree, then merge).
"""

from __future__ import annotations

import subprocess
import time
from pathlib import Path
from typing import Any

TRACKED_FILES = 10_000
INSTANCES = 8


def _git(root: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=root, check=True, capture_output=True)


def _repository(root: Path, files: int) -> None:
    root.mkdir(parents=True, exist_ok=True)
    _git(root, "init", "-q", "-b", "main")
    _git(root, "config", "user.email", "bench@example.com")
    _git(root, "config", "user.name", "Bench")
    (root / ".gitignore").write_text(".deepwork/tmp/\n")
    for index in range(files):
        folder = root / "src" / f"d{index // 100:03d}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"f{index:05d}.txt").write_text(f"file {index}\n")
    _git(root, "add", "-A")
    _git(root, "commit", "-q", "-m", "base")


async def fan_out_merge(bench: Any) -> None:
    from deepwork_core.engine.fanout.worktrees import WORKTREES_DIR, Worktrees
    from deepwork_core.state.session_model import FanInstance

    root = bench.scratch / "fan_out_repo"
    files = bench.sizes.fan_out_files  # TRACKED_FILES at full size
    _repository(root, files)
    worktrees = Worktrees(root)
    base = worktrees.base_commit()
    instances = []
    for index in range(INSTANCES):
        instance = FanInstance(
            index=index,
            item=f"i{index}",
            session_id=f"inst{index:04d}",
            worktree=f"{WORKTREES_DIR}/run/inst{index:04d}",
            branch=f"deepwork/run/inst{index:04d}",
        )
        worktrees.create(instance, base)
        folder = root / (instance.worktree or "")
        (folder / "src" / "d000" / f"f{index:05d}.txt").write_text(f"changed by {index}\n")
        (folder / f"new-{index}.txt").write_text(f"new {index}\n")
        instances.append(instance)
    figure = bench.figure(
        "fan_out.merge",
        f"fan-in: commit and merge one of {INSTANCES} instances",
        tracked_files=files,
        instances=INSTANCES,
    )
    for instance in instances:
        began = time.perf_counter()
        worktrees.commit(instance, f"instance {instance.index}")
        conflicted = worktrees.merge(instance, f"merge instance {instance.index}")
        figure.samples.append((time.perf_counter() - began) * 1000)
        if conflicted:
            raise RuntimeError(f"unexpected conflict in {conflicted}")
    for instance in instances:
        worktrees.remove(instance)
    if not all((root / f"new-{i}.txt").is_file() for i in range(INSTANCES)):
        raise RuntimeError("a merged instance's file is missing")
