"""SessionStore: durable sessions and stack (docs/runtime.md)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from deepwork_core.base.errors import InvalidIdentifierError, SessionError
from deepwork_core.base.identifiers import SESSION_ID_PATTERN, parse_session_id
from deepwork_core.state.sessions import (
    SCHEMA_VERSION,
    Session,
    SessionStatus,
    SessionStore,
    StepRecord,
    new_session_id,
)
from deepwork_core.state.store.opening import open_existing_store
from deepwork_core.state.store.port import Store

NOW = datetime(2026, 11, 20, 12, 0, tzinfo=UTC)


def make_session(session_id: str | None = None, **changes: object) -> Session:
    data: dict[str, object] = {
        "session_id": session_id or new_session_id(),
        "job_name": "job",
        "workflow_name": "main",
        "goal": "a goal",
        "current_step_ids": ["one"],
        "step_progress": {"one": StepRecord(step_id="one", started_at=NOW)},
        "started_at": NOW,
    }
    data.update(changes)
    return Session.model_validate(data)


@pytest.fixture
def store(tmp_path: Path, make_store: Callable[..., Store]) -> SessionStore:
    return SessionStore(make_store(tmp_path), tmp_path)


def test_session_ids_are_url_safe_and_match_the_pattern() -> None:
    ids = {new_session_id() for _ in range(200)}
    assert len(ids) == 200
    assert all(re.fullmatch(SESSION_ID_PATTERN, i) for i in ids)


def test_session_ids_never_start_like_a_command_line_option() -> None:
    # With plain token_urlsafe, one id in 64 started with "-": 2,000 draws all but surely show it.
    leads = {new_session_id()[0] for _ in range(2000)}
    assert leads.isdisjoint({"-", "_"})
    assert all(len(new_session_id()) == 16 for _ in range(50))


def test_reading_an_empty_project_creates_nothing(
    tmp_path: Path, test_store_url: str | None
) -> None:
    # A root that only reads opens no store where there is none (a URL names one: PostgreSQL).
    found = open_existing_store(test_store_url, tmp_path)
    assert (found is None) == (test_store_url is None)
    if found is not None:
        with found:
            assert SessionStore(found, tmp_path).stack() == []
    assert not (tmp_path / ".deepwork").exists()


def test_reading_a_new_store_finds_no_stack(store: SessionStore) -> None:
    assert store.stack() == []


def test_tmp_dir_is_created_lazily_with_a_gitignore(tmp_path: Path, store: SessionStore) -> None:
    with store.transaction() as tx:
        tx.push(make_session())
    assert (tmp_path / ".deepwork" / "tmp" / ".gitignore").read_text() == "*\n"


def test_push_persists_session_and_stack_with_schema_version(
    tmp_path: Path, store: SessionStore, make_store: Callable[..., Store]
) -> None:
    first, second = make_session(), make_session()
    with store.transaction() as tx:
        tx.push(first)
        tx.push(second)
    stack_file = json.loads((tmp_path / ".deepwork/tmp/stack.json").read_text())
    assert stack_file == {
        "schema_version": SCHEMA_VERSION,
        "session_ids": [first.session_id, second.session_id],
        "top_job": "job",
    }
    assert not store.session_path(first.session_id).exists()  # the store holds it
    with store.store.read() as db:
        [(body, status)] = db.execute(
            "SELECT body, status FROM sessions WHERE session_id = ?", (first.session_id,)
        )
    assert json.loads(body)["schema_version"] == SCHEMA_VERSION
    assert status == "active"
    # A fresh store (a new server process) sees the same stack.
    again = SessionStore(make_store(tmp_path), tmp_path)
    assert [s.session_id for s in again.stack()] == [first.session_id, second.session_id]
    assert again.load(second.session_id) == second


def test_remove_from_stack_works_mid_stack(store: SessionStore) -> None:
    sessions = [make_session() for _ in range(3)]
    with store.transaction() as tx:
        for session in sessions:
            tx.push(session)
        tx.remove_from_stack(sessions[1].session_id)
    assert [s.session_id for s in store.stack()] == [sessions[0].session_id, sessions[2].session_id]


def test_the_stack_file_exists_exactly_while_a_workflow_is_active(store: SessionStore) -> None:
    # The plugins' hook commands test for this file before they start Python.
    outer, inner = make_session(), make_session()
    with store.transaction() as tx:
        tx.push(outer)
        tx.push(inner)
    with store.transaction() as tx:
        tx.remove_from_stack(inner.session_id)
    assert store.stack_path.is_file()
    with store.transaction() as tx:
        tx.remove_from_stack(outer.session_id)
    assert not store.stack_path.exists()
    assert store.stack() == []
    assert store.load(outer.session_id).session_id == outer.session_id  # kept for inspection


def test_no_temporary_files_are_left_behind(tmp_path: Path, store: SessionStore) -> None:
    with store.transaction() as tx:
        for _ in range(5):
            tx.push(make_session())
    leftovers = [p.name for p in (tmp_path / ".deepwork/tmp").iterdir() if p.name.endswith(".tmp")]
    assert leftovers == []


def test_unknown_session_is_not_found(store: SessionStore) -> None:
    with pytest.raises(SessionError) as caught:
        store.load("abcdefgh")
    assert caught.value.code == "session.not_found"


@pytest.mark.parametrize("bad", ["../../x", "a/b/c/d/e", "/etc/passwd", "", "short", "a b c d e"])
def test_malformed_session_ids_are_rejected_before_any_file_access(
    tmp_path: Path, store: SessionStore, bad: str
) -> None:
    # The store takes a parsed `SessionId`: a malformed id stops where it comes in.
    with pytest.raises(InvalidIdentifierError) as caught:
        store.load(parse_session_id(bad))
    assert caught.value.code == "identifier.invalid"
    assert not (tmp_path / ".deepwork").exists() or not any(
        p.name.startswith("session_") for p in (tmp_path / ".deepwork/tmp").iterdir()
    )


def _state_file(tmp_path: Path, session: Session) -> Path:
    return tmp_path / ".deepwork" / "tmp" / f"session_{session.session_id}.json"


def _set_body(store: SessionStore, session: Session, body: str) -> None:
    with store.store.write() as db:
        db.execute("UPDATE sessions SET body = ? WHERE session_id = ?", (body, session.session_id))


@pytest.mark.parametrize(
    ("content", "fragment"),
    [
        ("{not json", "not valid JSON"),
        ('{"schema_version": 99}', "schema_version 99"),
        ("[]", "schema_version None"),
        ("null", "schema_version None"),
        ('{"schema_version": 1, "session_id": 5}', "invalid at"),
    ],
)
def test_a_corrupt_stored_session_is_a_clear_error_naming_it(
    store: SessionStore, content: str, fragment: str
) -> None:
    session = make_session()
    with store.transaction() as tx:
        tx.push(session)
    _set_body(store, session, content)
    with pytest.raises(SessionError) as caught:
        store.stack()
    assert caught.value.code == "session.state_corrupt"
    assert session.session_id in caught.value.message
    assert store.store.display in caught.value.message
    assert fragment in caught.value.message
    # Never silently reset: the broken row is still there, untouched.
    with store.store.read() as db:
        assert db.execute("SELECT body FROM sessions") == [(content,)]


@pytest.mark.parametrize(
    "content", ["{not json", '{"schema_version": 1, "session_id": 5}', b"\xff\xfe\x00"]
)
def test_a_corrupt_old_session_file_is_set_aside_naming_it_and_kept(
    tmp_path: Path, content: str | bytes, make_store: Callable[..., Store]
) -> None:
    good = make_session("sess_good0001")
    good_path = _state_file(tmp_path, good)
    path = _state_file(tmp_path, make_session("sess_broken01"))
    path.parent.mkdir(parents=True)
    good_path.write_text(good.model_dump_json())
    raw = content if isinstance(content, bytes) else content.encode()
    path.write_bytes(raw)
    (path.parent / "stack.json").write_text(
        '{"schema_version": 1, "session_ids": ["sess_good0001", "sess_broken01"]}'
    )
    opened = make_store(tmp_path)  # opening the store imports the old files
    store = SessionStore(opened, tmp_path)
    # The file that does not read is named in one coded warning and kept, renamed; the rest
    # came in and every view still shows it.
    [notice] = opened.notices
    assert notice.startswith("session.state_corrupt: ")
    assert str(path) in notice
    aside = path.with_name(path.name + ".unreadable")
    assert str(aside) in notice
    assert aside.read_bytes() == raw
    assert not path.exists()
    assert [s.session_id for s in store.stack()] == ["sess_good0001"]


def test_the_stack_marker_mirrors_the_store_and_is_never_read_by_it(
    tmp_path: Path, store: SessionStore
) -> None:
    session = make_session()
    with store.transaction() as tx:
        tx.push(session)
    store.stack_path.write_text("null")  # the hooks' probe only; the store holds the stacks
    assert [s.session_id for s in store.stack()] == [session.session_id]
    other = make_session()
    with store.transaction() as tx:
        tx.push(other)
    assert json.loads(store.stack_path.read_text())["session_ids"] == [
        session.session_id,
        other.session_id,
    ]


def test_a_stack_naming_a_missing_session_is_corrupt(store: SessionStore) -> None:
    session = make_session()
    with store.transaction() as tx:
        tx.push(session)
    with store.store.write() as db:
        db.execute("DELETE FROM sessions")
    with pytest.raises(SessionError) as caught:
        store.stack()
    assert caught.value.code == "session.state_corrupt"
    assert "does not hold" in caught.value.message


def test_stack_naming_a_finished_session_is_corrupt(tmp_path: Path, store: SessionStore) -> None:
    session = make_session()
    with store.transaction() as tx:
        tx.push(session)
        session.status = SessionStatus.COMPLETED
        tx.save(session)
    with pytest.raises(SessionError) as caught:
        store.stack()
    assert caught.value.code == "session.state_corrupt"


def test_transactions_serialise_read_modify_write_across_threads(store: SessionStore) -> None:
    session = make_session(goal="0")
    with store.transaction() as tx:
        tx.push(session)

    def bump() -> None:
        for _ in range(25):
            with store.transaction() as tx:
                current = tx.load(session.session_id)
                current.goal = str(int(current.goal) + 1)
                tx.save(current)

    threads = [threading.Thread(target=bump) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert store.load(session.session_id).goal == "100"


_BUMP_SCRIPT = """
import os, sys
from pathlib import Path
from deepwork_core.state.sessions import SessionStore
from deepwork_core.state.store.opening import open_store
root = Path(sys.argv[1])
store = SessionStore(open_store(os.environ.get("DEEPWORK_STORE_URL"), root), root)
for _ in range(int(sys.argv[3])):
    with store.transaction() as tx:
        current = tx.load(sys.argv[2])
        current.goal = str(int(current.goal) + 1)
        tx.save(current)
"""


@pytest.mark.slow
def test_transactions_serialise_read_modify_write_across_processes(
    tmp_path: Path, store: SessionStore
) -> None:
    session = make_session(goal="0")
    with store.transaction() as tx:
        tx.push(session)
    argv = [sys.executable, "-c", _BUMP_SCRIPT, str(tmp_path), session.session_id, "40"]
    workers = [subprocess.Popen(argv) for _ in range(3)]
    for worker in workers:
        assert worker.wait(timeout=120) == 0
    assert store.load(session.session_id).goal == "120"


def _age(store: SessionStore, session: Session, days: float) -> None:
    """Make the session look last written `days` ago."""
    with store.store.write() as db:
        db.execute(
            "UPDATE sessions SET updated_at = ? WHERE session_id = ?",
            (time.time() - days * 86400, session.session_id),
        )


def _stored(store: SessionStore, session: Session) -> bool:
    with store.store.read() as db:
        return bool(
            db.execute("SELECT 1 FROM sessions WHERE session_id = ?", (session.session_id,))
        )


def _age_file(path: Path, days: float) -> None:
    stamp = time.time() - days * 86400
    os.utime(path, (stamp, stamp))


def test_prune_removes_old_finished_sessions_and_their_review_files(
    tmp_path: Path, make_store: Callable[..., Store]
) -> None:
    store = SessionStore(
        make_store(tmp_path), tmp_path, max_age=timedelta(days=7), keep_finished=10
    )
    active, old, recent = make_session(), make_session(), make_session()
    with store.transaction() as tx:
        tx.push(active)
        for finished in (old, recent):
            finished.status = SessionStatus.COMPLETED
            tx.save(finished)
    _age(store, old, 30)
    _age(store, active, 30)  # old but active: never pruned
    review = tmp_path / ".deepwork/tmp" / f"quality_review_{old.session_id}_one.md"
    review.write_text("review")

    removed = store.prune(force=True)

    assert removed == [old.session_id]
    assert not _stored(store, old)
    assert not review.exists()
    assert _stored(store, recent)
    assert _stored(store, active)


def test_prune_keeps_at_most_keep_finished(
    tmp_path: Path, make_store: Callable[..., Store]
) -> None:
    store = SessionStore(make_store(tmp_path), tmp_path, keep_finished=3)
    finished = [make_session() for _ in range(6)]
    with store.transaction() as tx:
        for session in finished:
            session.status = SessionStatus.ABORTED
            tx.save(session)
    for position, session in enumerate(finished):
        _age(store, session, 6 - position)  # later ones are newer
    removed = store.prune(force=True)
    assert sorted(removed) == sorted(s.session_id for s in finished[:3])
    assert all(_stored(store, s) for s in finished[3:])


def test_prune_is_throttled(tmp_path: Path, make_store: Callable[..., Store]) -> None:
    store = SessionStore(make_store(tmp_path), tmp_path, keep_finished=0)
    store.prune(force=True)
    session = make_session(status=SessionStatus.COMPLETED)
    with store.transaction() as tx:
        tx.save(session)
    assert store.prune() == []  # ran a moment ago
    assert store.prune(force=True) == [session.session_id]


def test_all_outputs_merges_in_completion_order() -> None:
    session = make_session(
        step_progress={
            "b": StepRecord(
                step_id="b",
                started_at=NOW,
                completed_at=NOW + timedelta(seconds=2),
                outputs={"x": "late.md"},
            ),
            "a": StepRecord(
                step_id="a",
                started_at=NOW,
                completed_at=NOW + timedelta(seconds=1),
                outputs={"x": "early.md", "y": ["1.md", "2.md"]},
            ),
            "c": StepRecord(step_id="c", started_at=NOW, outputs={"z": "not-done.md"}),
        }
    )
    assert session.all_outputs() == {"x": "late.md", "y": ["1.md", "2.md"]}


def test_prune_removes_temporary_files_left_by_a_killed_writer(
    tmp_path: Path, make_store: Callable[..., Store]
) -> None:
    store = SessionStore(make_store(tmp_path), tmp_path)
    with store.transaction() as tx:
        tx.push(make_session())
    folder = tmp_path / ".deepwork/tmp"
    stale = [folder / ".stack.json.abc123.tmp", folder / ".session_x.json.def456.tmp"]
    fresh = folder / ".stack.json.ghi789.tmp"  # a writer may be renaming it right now
    other = folder / ".notes.tmp"
    for path in (*stale, fresh, other):
        path.write_text("{")
    for path in (*stale, other):
        _age_file(path, 1)
    store.prune(force=True)
    assert not any(path.exists() for path in stale)
    assert fresh.exists()
    assert other.exists()
