"""`deepwork run`'s side of a run: start the agent, follow the run in the store while it works
(one line per event: steps, verdicts, costs, decisions), end the agent at the deadline, and say
how the run ended (docs/headless.md, "Exit codes")."""

from __future__ import annotations

import contextlib
import os
import subprocess
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Final

from deepwork_core.base.identifiers import SessionId
from deepwork_core.base.process import kill_process_group
from deepwork_core.engine.headless.parking import RUN_ENV
from deepwork_core.state.event_kinds import OtherEvent
from deepwork_core.state.events import read_events
from deepwork_core.state.sessions import ParkReason, Session, SessionStatus, SessionStore

from deepwork_mcp.cli.headless.exits import RunExit

#: How often the store is read while the agent works.
FOLLOW_S: Final = 0.5
#: How much of the agent's output a failure shows.
TAIL_CHARS: Final = 2000


@dataclass
class Outcome:
    """How a run started by `deepwork run` ended."""

    exit: RunExit
    session_id: SessionId | None
    summary: str
    session: Session | None = None
    tail: str = ""
    #: Who may decide a parked run's open request (`bob or carol`, `any trusted approver`).
    deciders: str | None = None
    #: The run's page on the team's dashboard (`notify.dashboard_url`), else None.
    dashboard_url: str | None = None


@dataclass
class Follower:
    """Follows one agent process over the project's `sessions`."""

    sessions: SessionStore
    echo: Callable[[str], None]
    #: The run, once known (a resumed one from the start; a new one once it is started).
    session_id: SessionId | None = None
    #: Where a live status line goes between reads of the store (None: plain lines only).
    status: Callable[[str], None] | None = None
    _known: set[SessionId] = field(default_factory=set)
    _shown: int = 0
    _step: str = ""

    def __post_init__(self) -> None:
        self._known = set(self.sessions.session_ids())

    def run(self, argv: list[str], root: Path, timeout: float) -> Outcome:
        """Run the agent in `root` until it exits or `timeout` seconds passed."""
        env = {**os.environ, RUN_ENV: self.session_id or "1"}
        with tempfile.TemporaryFile() as output:
            process = subprocess.Popen(
                argv, cwd=root, env=env, stdin=subprocess.DEVNULL, stdout=output,
                stderr=subprocess.STDOUT, start_new_session=True,
            )  # fmt: skip
            began = time.monotonic()
            deadline = began + timeout
            code: int | None = None
            while code is None and time.monotonic() < deadline:
                with contextlib.suppress(subprocess.TimeoutExpired):
                    code = process.wait(timeout=FOLLOW_S)
                self.show_new()
                if self.status is not None:
                    self.status(self.status_text(time.monotonic() - began))
            kill_process_group(process.pid)  # the agent, or what it left running
            process.wait()
            self.show_new()
            return self.outcome(code, timeout, _tail(output))

    def show_new(self) -> None:
        """Print the run's events not printed yet (finding a new run first)."""
        if self.session_id is None:
            self.session_id = self._new_run()
            if self.session_id is None:
                return
        events = read_events(self.sessions.store, self.session_id)
        for event in events[self._shown :]:
            if not isinstance(event, OtherEvent):
                fields = event.model_dump(mode="json", exclude={"v", "session_id"})
                self._step = ", ".join(fields.get("step_ids") or []) or self._step
                self.echo(_line(fields))
        self._shown = len(events)

    def status_text(self, elapsed: float) -> str:
        """The live status line: the run, its current step, its time and events so far."""
        if self.session_id is None:
            return f"starting the agent | {elapsed:.0f} s"
        step = f"step {self._step}" if self._step else "starting"
        return f"{self.session_id} | {step} | {elapsed:.0f} s | {self._shown} events"

    def _new_run(self) -> SessionId | None:
        for session_id in self.sessions.session_ids():
            if session_id not in self._known:
                session = self.sessions.load(session_id)
                if session.parent_session_id is None:
                    return session_id
        return None

    def outcome(self, code: int | None, timeout: float, tail: str) -> Outcome:
        """The exit of the run: from the store, and from the agent when the store says
        nothing (it crashed, hung or stopped early)."""
        session = None if self.session_id is None else self.sessions.load(self.session_id)
        if session is not None and session.status is SessionStatus.COMPLETED:
            return Outcome(RunExit.COMPLETE, session.session_id, "completed", session)
        if session is not None and session.parked is not None:
            if session.parked.reason is ParkReason.AWAITING_APPROVAL:
                return Outcome(RunExit.PARKED, session.session_id, "parked", session)
            reason = session.parked.reason.value.replace("_", " ")
            return Outcome(RunExit.EXHAUSTED, session.session_id, reason, session)
        if code is None:
            why = f"the agent did not finish within {timeout:g} s and was ended"
        elif code != 0:
            why = f"the agent failed (exit status {code})"
        elif session is None:
            why = "the agent ended without starting the workflow"
        else:
            why = f"the agent ended with the run {session.status.value} at step " + ", ".join(
                session.current_step_ids
            )
        return Outcome(RunExit.AGENT_FAILED, self.session_id, why, session, tail)


def _line(fields: dict[str, object]) -> str:
    head = f"{fields.pop('ts', '')}  {fields.pop('event', '')}"
    rest = "  ".join(f"{k}={v}" for k, v in fields.items() if v not in (None, [], ""))
    return f"{head}  {rest}".rstrip()


def _tail(output: IO[bytes]) -> str:
    output.seek(0, os.SEEK_END)
    size = output.tell()
    output.seek(max(0, size - TAIL_CHARS * 4))
    return output.read().decode("utf-8", "replace")[-TAIL_CHARS:]
