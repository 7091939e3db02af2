"""Headless runs: how soon `deepwork wait` wakes after a decision, and what `notify.webhook`
costs a run whose receiver is down, slow or failing (docs/headless.md; issue 41).

    uv run nox -s bench -- --only headless     # with the other figures' report
    uv run python benchmarks/headless.py       # this file alone, printed
    uv run python benchmarks/headless.py --quick

Figures:

- `headless.wait_wake`: a run parked at its approval step in a local PostgreSQL store; a waiter
  runs `wait_for_person` (what `deepwork wait` runs) on a store connection of its own, and once
  it listens a trusted approver's signed decision is recorded on another connection. The figure
  is the time from that decision's commit to the waiter's return. Budget 2 s.
- `headless.webhook.down` / `.slow` / `.error`: what `deepwork run` spends sending its webhook
  before it exits (reading the config, starting the post, waiting for it), with a receiver whose
  port is closed, one that answers only after 10 s, and one that answers 500. Budget 1 s each.
"""

from __future__ import annotations

import argparse
import contextlib
import http.server
import io
import socket
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).parent))

#: The receivers the webhook figures are measured against.
RECEIVERS = ("down", "slow", "error")
#: How long the slow receiver takes to answer.
SLOW_S = 10.0


# --- deepwork wait ------------------------------------------------------------------------------


class _Approver:
    """A project trusting one approver on its base branch, with a signed key and a state folder."""

    def __init__(self, folder: Path, url: str) -> None:
        from deepwork_core.state.approvals.signatures import ApproverSigner
        from deepwork_mcp.approvals.keys import approval_key, approver_path

        from tests.fixtures.signed_jobs import make_signed_project
        from tests.fixtures.trust import trust_on_base

        self.url = url
        self.root = make_signed_project(folder / "project")
        self.signer = ApproverSigner("alice", approver_path(folder / "state", "alice"))
        self.signer.create()
        trust_on_base(self.root, self.signer)
        self.key = approval_key(folder / "state", self.root)
        self.runs = 0

    def parked_run(self, store: Any) -> str:
        """A new run of `signed`, parked at its approval step."""
        from deepwork_core.base.identifiers import SessionId
        from deepwork_core.engine.workflow import WorkflowEngine
        from deepwork_core.jobs.discovery import JobCatalog
        from deepwork_core.state.approvals.signatures import TrustedApprovers
        from deepwork_core.state.sessions import SessionStore

        engine = WorkflowEngine(
            self.root, JobCatalog.for_project(self.root), SessionStore(store, self.root),
            approval_key=self.key, approvers=TrustedApprovers(self.root, shared=True),
            headless=True,
        )  # fmt: skip
        self.runs += 1
        agent = f"bench-{self.runs}"  # a stack of its own: each run is top-level
        started = engine.start("bench", "signed", "main", agent_id=agent)
        session_id = SessionId(started.brief.session_id)
        (self.root / "prep.md").write_text("prep\n")
        engine.finish({"prep": "prep.md"}, session_id=session_id, agent_id=agent)
        (self.root / "sig.md").write_text("signed\n")
        engine.finish({"sig": "sig.md"}, session_id=session_id, agent_id=agent)
        if engine.store.load(session_id).parked is None:
            raise RuntimeError("the run did not park at its approval step")
        return str(session_id)

    def decide(self, store: Any, session_id: str) -> None:
        from deepwork_core.base.identifiers import SessionId
        from deepwork_core.state.approvals.decide import record_decision
        from deepwork_core.state.approvals.models import ApprovalChannel
        from deepwork_core.state.approvals.signatures import TrustedApprovers
        from deepwork_core.state.approvals.store import ApprovalStore

        approvals = ApprovalStore(
            store, self.root, self.key, trusted=TrustedApprovers(self.root, shared=True),
            signer=self.signer,
        )  # fmt: skip
        record_decision(
            approvals, SessionId(session_id), approved=True, comment=None,
            channel=ApprovalChannel.CLI, actor="alice@bench", terminal=None,
            now=datetime.now(UTC),
        )  # fmt: skip


def wait_wake(url: str, repeats: int) -> list[float]:
    """Seconds from each decision's commit to the waiter's return."""
    from deepwork_core.base.identifiers import SessionId
    from deepwork_core.engine.headless.parking import wait_for_person
    from deepwork_core.state.sessions import SessionStore
    from deepwork_core.state.store.opening import open_store

    samples: list[float] = []
    with tempfile.TemporaryDirectory(prefix="deepwork-headless-bench-") as folder:
        approver = _Approver(Path(folder), url)
        root = approver.root
        with open_store(url, root) as deciding, open_store(url, root) as waiting:
            for _ in range(repeats):
                session_id = approver.parked_run(deciding)
                ready = threading.Event()
                _signal_when_listening(waiting, ready)
                woke: list[float] = []

                def wait(session_id: str = session_id, woke: list[float] = woke) -> None:
                    sessions = SessionStore(waiting, root)
                    if wait_for_person(sessions, SessionId(session_id), 30.0):
                        woke.append(time.perf_counter())

                waiter = threading.Thread(target=wait, name="deepwork-wait")
                waiter.start()
                if not ready.wait(30.0):
                    raise RuntimeError("the waiter never listened")
                approver.decide(deciding, session_id)
                decided = time.perf_counter()
                waiter.join(35.0)
                if not woke:
                    raise RuntimeError("deepwork wait did not wake within 30 s of the decision")
                samples.append(woke[0] - decided)
    return samples


def _signal_when_listening(store: Any, ready: threading.Event) -> None:
    """Set `ready` once a waiter on `store` listens (the moment a decision can wake it)."""
    listener = type(store).listener

    @contextlib.contextmanager
    def listening(channel: str) -> Iterator[Any]:
        with listener(store, channel) as found:
            ready.set()
            yield found

    store.listener = listening


# --- notify.webhook ------------------------------------------------------------------------------


class _Receiver(http.server.BaseHTTPRequestHandler):
    slow = False

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        self.rfile.read(length)
        if self.slow:
            time.sleep(SLOW_S)
        self.send_response(500)
        self.end_headers()

    def log_message(self, format: str, *args: Any) -> None:
        return None


@contextlib.contextmanager
def receiver(kind: str) -> Iterator[str]:
    """The URL of a receiver that is `down`, `slow` or answers 500 (`error`)."""
    if kind == "down":
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
        yield f"http://127.0.0.1:{port}/hook"  # nothing listens there any more
        return
    handler = type("Receiver", (_Receiver,), {"slow": kind == "slow"})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/hook"
    finally:
        server.shutdown()
        server.server_close()


def webhook_delay(kind: str, repeats: int) -> list[float]:
    """Seconds `deepwork run` spends on its webhook before it exits, against receiver `kind`."""
    from deepwork_core.base.identifiers import SessionId
    from deepwork_mcp.cli.headless.exits import RunExit
    from deepwork_mcp.cli.headless.follow import Outcome
    from deepwork_mcp.cli.headless.run import _notify

    samples: list[float] = []
    outcome = Outcome(RunExit.COMPLETE, SessionId("sess_bench"), "completed")
    with tempfile.TemporaryDirectory(prefix="deepwork-webhook-bench-") as folder:
        root = Path(folder)
        (root / ".deepwork").mkdir()
        with receiver(kind) as url:
            config = f"notify:\n  webhook:\n    url: {url}\n"
            (root / ".deepwork" / "config.yml").write_text(config)
            for _ in range(repeats):
                began = time.perf_counter()
                with contextlib.redirect_stderr(io.StringIO()):  # its warnings come later
                    _notify(outcome, root)
                samples.append(time.perf_counter() - began)
    return samples


# --- the figures of `benchmarks/run.py` ----------------------------------------------------------


async def headless_speed(bench: Any) -> None:
    """Fill the `headless.*` figures (see the module docstring)."""
    import asyncio

    from store import _postgres

    quick = bench.sizes.long_steps < 50
    repeats = 3 if quick else 10
    wake = bench.figure(
        "headless.wait_wake", "deepwork wait: wake after a decision (PostgreSQL)", runs=repeats
    )
    server, reason = await asyncio.to_thread(_postgres)
    if server is None:
        wake.status, wake.reason = "unavailable", reason
    else:
        try:
            url = server.create_database()
            found = await asyncio.to_thread(wait_wake, url, repeats)
            wake.samples.extend(sample * 1000 for sample in found)
        finally:
            server.destroy()
    for kind in RECEIVERS:
        figure = bench.figure(
            f"headless.webhook.{kind}",
            f"notify.webhook, receiver {kind}: delay to the run",
            runs=repeats,
        )
        found = await asyncio.to_thread(webhook_delay, kind, 2 if quick else 5)
        figure.samples.extend(sample * 1000 for sample in found)


# --- run alone -----------------------------------------------------------------------------------


def _ms(samples: list[float]) -> str:
    return f"median {statistics.median(samples) * 1000:.1f} ms, max {max(samples) * 1000:.1f} ms"


def main() -> None:
    from store import _postgres

    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true", help="3 decisions, 2 posts a receiver")
    args = parser.parse_args()
    repeats = 3 if args.quick else 10
    server, reason = _postgres()
    if server is None:
        print(f"wait_wake: skipped ({reason})")
    else:
        try:
            print(f"wait_wake: {_ms(wait_wake(server.create_database(), repeats))}")
        finally:
            server.destroy()
    run: Callable[[str], list[float]] = lambda kind: webhook_delay(kind, 2 if args.quick else 5)  # noqa: E731
    for kind in RECEIVERS:
        print(f"webhook {kind}: {_ms(run(kind))}")


if __name__ == "__main__":
    main()
