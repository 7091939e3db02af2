"""Parking a headless run: a run no person attends stops where it needs one (docs/headless.md).

A server started by `deepwork run` or `deepwork serve --headless` hands the engine a `Parking`.
Where an attended run would wait for a person, a headless one parks instead: a step that needs
approval opens its request as always, but the answer tells the agent to stop at once, no form is
offered, and the session is marked `parked` (`Session.parked`, a `parked` event). The same
happens when the quality gate's attempts or the run's review budget run out, and when its
reviewer's CLI is missing. While a session is
parked, a headless server answers every `finished_step` of it as parked and reads no decision:
only `deepwork run --resume`, started from outside the run after a person decided, clears the
mark (`resume`), so nothing the agent did inside the run can
count as a decision.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Final

from deepwork_core.base.error_codes import ErrorCode
from deepwork_core.base.errors import SessionError
from deepwork_core.base.identifiers import SessionId
from deepwork_core.evidence.hashes import find_stale
from deepwork_core.state.approvals.models import (
    ApprovalDecision,
    ApprovalError,
    ApprovalRecord,
    ApprovalRequest,
)
from deepwork_core.state.event_kinds import ParkedEvent, ResumedEvent
from deepwork_core.state.events import EVENTS_CHANNEL, append_event
from deepwork_core.state.sessions import (
    Parked,
    ParkReason,
    Session,
    SessionStatus,
    SessionStore,
)
from deepwork_core.state.store.port import ProjectRef, Store
from deepwork_core.state.store.tables.approval_rows import open_record

#: Set by `deepwork run` in its agent's environment (to the session's id once known, else `1`):
#: the server there is headless, and `deepwork approve` there refuses (`approval.inside_run`).
RUN_ENV: Final = "DEEPWORK_RUN"


def headless_from_env(environ: Mapping[str, str]) -> bool:
    """True inside a `deepwork run` agent (`DEEPWORK_RUN`) and on CI (`CI=true`, as GitHub
    Actions and most CI services set it): no person attends such a server."""
    if environ.get(RUN_ENV):
        return True
    return environ.get("CI", "").strip().lower() in {"true", "1", "yes"}


def refuse_inside_run(environ: Mapping[str, str]) -> None:
    """Raise `approval.inside_run` in the environment `deepwork run` gave its agent: a decision
    made there never counts (`deepwork approve`, the dashboard)."""
    if environ.get(RUN_ENV):
        raise ApprovalError(
            f"this shell is inside the headless run {environ[RUN_ENV]!r} ({RUN_ENV} is set): a "
            "decision made from inside a run never counts. A person decides from their own "
            "shell or the dashboard (docs/headless.md).",
            code=ErrorCode.APPROVAL_INSIDE_RUN,
        )


#: How often `wait_for_person` reads a store without notifications (SQLite) again.
POLL_S: Final = 0.25
#: The longest a listener waits before the run is read again (a lost notification costs this).
_RELISTEN_S: Final = 5.0

_STOP = (
    "This run is headless: no person can answer inside it. Stop now: end your turn without "
    "calling any other tool. The run is parked; a person decides outside it, and "
    "`deepwork run --resume {session}` continues it."
)


@dataclass(eq=False)
class Parking:
    """Parks the sessions of one project's headless server (`machine`: where it runs)."""

    store: Store
    clock: Callable[[], datetime]
    machine: str

    def park(
        self,
        session: Session,
        reason: ParkReason,
        *,
        request_id: str | None = None,
        feedback: str | None = None,
    ) -> None:
        """Mark `session` parked for `reason` (the caller saves it) and log the `parked` event."""
        step_ids = list(session.current_step_ids)
        session.parked = Parked(
            reason=reason,
            at=self.clock(),
            step_ids=step_ids,
            request_id=request_id,
            machine=self.machine,
            root=self.store.project.root,
            feedback=feedback,
        )
        append_event(
            self.store,
            ParkedEvent(
                ts=self.clock(),
                session_id=session.session_id,
                step_ids=step_ids,
                reason=reason.value,
                request_id=request_id,
                machine=self.machine,
            ),
        )


def stop_note(session_id: str) -> str:
    """What a headless answer adds: stop now, a person decides, `--resume` goes on."""
    return _STOP.format(session=session_id)


def approval_feedback(session_id: str, prompt: str) -> str:
    """The `awaiting_approval` feedback of a parked run."""
    return (
        f"This step needs a human's approval: {prompt} {stop_note(session_id)} You must not "
        "approve it yourself: `deepwork approve` refuses inside this run, and no decision made "
        "from inside it counts."
    )


def still_parked(session: Session) -> SessionError:
    """`session.parked`: a headless server got a `finished_step` for a parked run."""
    parked = session.parked
    reason = parked.reason.value.replace("_", " ") if parked is not None else "parked"
    return SessionError(
        f"session {session.session_id!r} is parked ({reason}) at step "
        f"{', '.join(session.current_step_ids)}. {stop_note(session.session_id)}",
        code=ErrorCode.SESSION_PARKED,
    )


def resume(
    sessions: SessionStore,
    session_id: SessionId,
    clock: Callable[[], datetime],
    *,
    adopted_from: ProjectRef | None = None,
) -> Session:
    """Hand a run over to a new agent (`deepwork run --resume`): check that every completed
    step's output still has the bytes it was accepted with, clear the `parked` mark and log a
    `resumed` event. Nothing runs again: the agent continues at the current step.

    Raises `run.not_resumable` for a session that is finished or nested, `run.output_changed`
    naming each output that changed or is gone (the session is left as it was). `adopted_from`:
    the project of the store that served the run before this checkout took it over
    (`deepwork_core.engine.headless.adoption`), named in the event.
    """
    store = sessions.store
    with sessions.transaction() as tx:
        session = tx.load(session_id)
        if session.status is not SessionStatus.ACTIVE or session.parent_session_id is not None:
            state = "nested" if session.parent_session_id else session.status.value
            raise SessionError(
                f"session {session_id!r} cannot be resumed: it is {state}; only an active "
                "top-level run can be (docs/headless.md)",
                code=ErrorCode.RUN_NOT_RESUMABLE,
            )
        stale = find_stale(sessions.project_root, session.evidence)
        if stale:
            named = ", ".join(
                f"{item.path} (step {item.step_id}, "
                + ("gone)" if item.new_sha256 is None else "changed)")
                for item in stale
            )
            raise SessionError(
                f"session {session_id!r} cannot be resumed here: completed outputs differ from "
                f"what their steps were accepted with: {named}. Restore them (check out the "
                "run's branch as pushed) and resume again; nothing was run.",
                code=ErrorCode.RUN_OUTPUT_CHANGED,
            )
        before = session.parked
        here = str(sessions.project_root)
        session.parked = None
        tx.save(session)
        append_event(
            store,
            ResumedEvent(
                ts=clock(),
                session_id=session_id,
                step_ids=list(session.current_step_ids),
                machine=store.project.machine,
                root=here,
                from_root=_from_root(before, here, adopted_from),
                from_machine=None if adopted_from is None else adopted_from.machine,
                adopted=adopted_from is not None,
            ),
        )
    return session


def _from_root(before: Parked | None, here: str, adopted_from: ProjectRef | None) -> str | None:
    if adopted_from is not None:
        return adopted_from.root
    return before.root if before and before.root not in ("", here) else None


def awaits_person(sessions: SessionStore, session_id: SessionId) -> bool:
    """True while the run waits for a person: it is active and has an open approval request
    nobody decided yet, or it is parked (`attempts_exhausted`, `budget_exhausted` and
    `reviewer_missing` wait for `deepwork run --resume`)."""
    session = sessions.load(session_id)
    if session.status is not SessionStatus.ACTIVE:
        return False
    if session.pending_approval is not None:
        store = sessions.store
        with store.read() as tx:
            found = open_record(tx, store.project.project_id, session_id)
        return found is not None and _undecided(*found)
    return session.parked is not None


def _undecided(request: str, decisions: list[str]) -> bool:
    """True while the open request's decisions (documents, oldest first) settle nothing under
    its policy: none yet, or fewer approvals than it requires (`1 of 2`)."""
    if not decisions:
        return True
    record = ApprovalRecord(
        request=ApprovalRequest.model_validate_json(request),
        decisions=[ApprovalDecision.model_validate_json(body) for body in decisions],
    )
    return record.standing().concluding is None


def wait_for_person(
    sessions: SessionStore,
    session_id: SessionId,
    timeout: float,
    clock: Callable[[], float] = time.monotonic,
) -> bool:
    """Block until the run no longer `awaits_person` (True) or `timeout` seconds passed (False).
    On PostgreSQL it wakes on the store's announcement of the session's next event (`LISTEN`);
    on SQLite it reads the run again every `POLL_S`."""
    deadline = clock() + timeout
    with sessions.store.listener(EVENTS_CHANNEL) as listener:
        while awaits_person(sessions, session_id):
            left = deadline - clock()
            if left <= 0:
                return False
            if listener is None:
                time.sleep(min(left, POLL_S))
            else:
                listener.wait(min(left, _RELISTEN_S))
    return True
