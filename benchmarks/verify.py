"""How fast `deepwork verify` is (docs/verify.md, "Speed"; issue 40).

    uv run nox -s bench -- --only verify      # with the other figures' report
    uv run python benchmarks/verify.py        # this file alone, printed
    uv run python benchmarks/verify.py --quick

The figure: `deepwork verify --all` as a process of its own (start-up included) in a git
repository of 10,000 tracked files holding 200 receipts, each of a three-step run with three
outputs and a signed approval, all valid (every check runs to its end). Its budget is 2 s.
"""

from __future__ import annotations

import argparse
import hashlib
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

#: Tracked files and receipts of the full workload.
FILES = 10_000
RECEIPTS = 200
QUICK_FILES = 1_000
QUICK_RECEIPTS = 20
_JOB = ".deepwork/jobs/bench/job.yml"


def _git(root: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", *args], cwd=root, check=True, capture_output=True, text=True, timeout=300
    )
    return done.stdout.strip()


def make_repository(root: Path, files: int, receipts: int) -> None:
    """The repository: `main` with `files` files and the gate key, `feature` with the runs."""
    from deepwork_core.base.layout import APPROVERS_DIR, GATE_KEYS_DIR
    from deepwork_core.evidence.trusted_keys import public_line
    from deepwork_core.receipts.keys import GateKey
    from deepwork_core.state.approvals.signatures import ApproverSigner

    key = GateKey(root.parent / "state" / "gate.key", "bench")
    approver = ApproverSigner("ann", root.parent / "state" / "ann.key")
    approver.create()
    root.mkdir()
    _git(root, "init", "-q", "-b", "main")
    for setting in ("user.email=b@example.com", "user.name=Bench", "commit.gpgsign=false"):
        name, value = setting.split("=")
        _git(root, "config", name, value)
    for n in range(files):
        folder = root / "src" / f"d{n % 100:02d}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"f{n:05d}.txt").write_text(f"file {n}\n")
    (root / _JOB).parent.mkdir(parents=True)
    (root / _JOB).write_text("name: bench\n")
    (root / GATE_KEYS_DIR).mkdir(parents=True)
    (root / key.pub_path).write_text(key.public_line())
    (root / APPROVERS_DIR).mkdir(parents=True)
    (root / APPROVERS_DIR / "ann.pub").write_text(public_line(approver.public_key()))
    _git(root, "add", "-A")
    _git(root, "commit", "-q", "-m", "base")
    start = _git(root, "rev-parse", "HEAD")
    _git(root, "checkout", "-q", "-b", "feature")
    for n in range(receipts):
        _write_receipt(root, key, approver, f"run{n:013d}", start)
    _git(root, "add", "-A")
    _git(root, "commit", "-q", "-m", "runs")


def _write_receipt(root: Path, key: Any, approver: Any, session: str, start: str) -> None:
    from deepwork_core.receipts.keys import RECEIPT_LABEL
    from deepwork_core.receipts.model import (
        DefinitionFile,
        GateSignature,
        Receipt,
        ReceiptBody,
        definition_digest,
        receipt_path,
    )

    steps = []
    for step in ("a", "b", "c"):
        path = f"out/{session}/{step}.md"
        data = f"{session} {step}\n".encode()
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_bytes(data)
        sha = hashlib.sha256(data).hexdigest()
        steps.append(
            {
                "step": step,
                "outputs": [{"output": step, "path": path, "sha256": sha}],
                "passed": {"kind": "reviewed", "reviews": [], "reason": None},
                "scope": {"guard": "note", "checked": True, "undeclared": []},
                "approval_required": step == "c",
            }
        )
    job_sha = hashlib.sha256((root / _JOB).read_bytes()).hexdigest()
    files = [DefinitionFile(root="project", path=_JOB, sha256=job_sha)]
    body = ReceiptBody.model_validate(
        {
            "deepwork_version": "bench",
            "session_id": session,
            "job": "bench",
            "workflow": "main",
            "status": "completed",
            "started_at": "2026-12-01T00:00:00+00:00",
            "completed_at": "2026-12-01T00:01:00+00:00",
            "start_commit": start,
            "job_definition": {"files": files, "sha256": definition_digest(files)},
            "steps": steps,
            "approvals": [_approval(approver, session)],
        }
    )
    signature = key.sign(body.model_dump(mode="json"), RECEIPT_LABEL)
    receipt = Receipt(body=body, signature=GateSignature(key=key.name, ed25519=signature))
    target = root / receipt_path("bench", session)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(receipt.text())


def _approval(approver: Any, session: str) -> dict[str, Any]:
    """The signed approval of step `c` of `session`, as `deepwork approve` records it."""
    decided = "2026-12-01T00:00:30+00:00"
    fields = {
        "request_mac": "m",
        "signer": approver.name,
        "session_id": session,
        "request_id": "r1",
        "step_ids": ["c"],
        "shown": [],
        "approved": True,
        "comment": "",
        "channel": "cli",
        "actor": approver.name,
        "terminal": True,
        "decided_at": decided,
    }
    return {
        "step_ids": ["c"],
        "request_id": "r1",
        "signer": approver.name,
        "signature": approver.sign(fields),
        "decided_at": decided,
        "fields": fields,
    }


def timing(files: int, receipts: int, repeats: int) -> tuple[list[float], list[float]]:
    """Seconds of `deepwork verify --all`, `repeats` times, after one untimed run: wall clock,
    and the CPU time of the process and its git children (steadier on a busy machine)."""
    with tempfile.TemporaryDirectory(prefix="deepwork-verify-bench-") as folder:
        root = Path(folder) / "repo"
        make_repository(root, files, receipts)
        command = [sys.executable, "-m", "deepwork_mcp", "verify", "--all", "--base", "main"]
        samples, cpu = [], []
        for run in range(repeats + 1):
            before = _children_cpu()
            began = time.perf_counter()
            done = subprocess.run(command, cwd=root, capture_output=True, text=True, timeout=300)
            took = time.perf_counter() - began
            spent = _children_cpu() - before
            expected = f"{receipts} receipts checked, all hold"
            assert done.returncode == 0, done.stdout + done.stderr
            assert expected in done.stdout, done.stdout
            if run:
                samples.append(took)
                cpu.append(spent)
    return samples, cpu


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


# --- the figures of `benchmarks/run.py` -------------------------------------------------------


async def verify_speed(bench: Any) -> None:
    """Fill the `verify.*` figure (see the module docstring)."""
    import asyncio

    quick = bench.sizes.long_steps < 50
    files, receipts = (QUICK_FILES, QUICK_RECEIPTS) if quick else (FILES, RECEIPTS)
    figure = bench.figure(
        "verify.all", f"deepwork verify --all, {receipts} receipts, {files} files",
        receipts=receipts, files=files,
    )  # fmt: skip
    samples, _ = await asyncio.to_thread(timing, files, receipts, 3 if quick else 5)
    figure.samples.extend(sample * 1000 for sample in samples)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true", help="1,000 files, 20 receipts")
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    files, receipts = (QUICK_FILES, QUICK_RECEIPTS) if args.quick else (FILES, RECEIPTS)
    samples, cpu = timing(files, receipts, args.repeats)
    print(
        f"deepwork verify --all, {receipts} receipts in {files} files: median "
        f"{statistics.median(samples) * 1000:.0f} ms (min {min(samples) * 1000:.0f}); CPU "
        f"median {statistics.median(cpu) * 1000:.0f} ms"
    )


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).parent))
    main()
