"""One `VerdictKind` for evidence and the quality-gate log; state files keep their spelling."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from deepwork_core.base.layout import TMP_DIR, session_file_name
from deepwork_core.evidence.verdicts import VerdictKind
from deepwork_core.state.overview import last_verdict
from deepwork_core.state.sessions import QualityEvent, Session, SessionStore, new_session_id
from deepwork_core.state.store.port import Store

from tests.fixtures.state_rows import session_json, write_session_json

AT = "2026-11-20T12:00:00Z"


def _event(kind: str, **fields: object) -> dict[str, object]:
    return {"at": AT, "kind": kind, "step_ids": ["one"], **fields}


def _state_file(session_id: str) -> dict[str, Any]:
    """A session as the 1.x engine wrote it: the log spells the reviewer's verdict `review`."""
    return {
        "schema_version": 1,
        "session_id": session_id,
        "job_name": "job",
        "workflow_name": "main",
        "goal": "a goal",
        "current_step_ids": ["one"],
        "step_progress": {"one": {"step_id": "one", "started_at": AT}},
        "started_at": AT,
        "quality_log": [
            _event("review", attempt=1, passed=False, feedback="no"),
            _event("self_review", review_file=".deepwork/tmp/quality_review_x_one.md"),
            _event("error", error_code="quality_gate.timeout", feedback="slow"),
            _event("override", override_reason="the human said so"),
        ],
        "evidence": [
            {
                "output": "report",
                "step_id": "one",
                "path": "report.md",
                "sha256": None,
                "verdict": verdict,
                "recorded_at": AT,
            }
            for verdict in ("reviewer", "self_review", "override", "unreviewed")
        ],
    }


def test_an_old_state_file_reads_into_the_one_enum_and_writes_back_unchanged(
    tmp_path: Path, make_store: Callable[..., Store]
) -> None:
    session_id = new_session_id()
    written = _state_file(session_id)
    path = tmp_path / TMP_DIR / session_file_name(session_id)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(written), encoding="utf-8")

    db = make_store(tmp_path)  # its first open imports the old file
    store = SessionStore(db, tmp_path)
    assert store.session_path(session_id) == path
    session = store.load(session_id)
    assert [event.kind for event in session.quality_log] == [
        VerdictKind.REVIEWER,
        VerdictKind.SELF_REVIEW,
        VerdictKind.ERROR,
        VerdictKind.OVERRIDE,
    ]
    assert [item.verdict for item in session.evidence] == [
        VerdictKind.REVIEWER,
        VerdictKind.SELF_REVIEW,
        VerdictKind.OVERRIDE,
        VerdictKind.UNREVIEWED,
    ]
    with store.transaction() as tx:
        tx.save(session)
    again = session_json(db, session_id)
    assert [e["kind"] for e in again["quality_log"]] == [e["kind"] for e in written["quality_log"]]
    assert [e["verdict"] for e in again["evidence"]] == [
        "reviewer",
        "self_review",
        "override",
        "unreviewed",
    ]


def test_the_log_spells_the_reviewers_verdict_review_and_the_overview_reads_it() -> None:
    event = QualityEvent.model_validate(_event("review", passed=True))
    assert event.kind is VerdictKind.REVIEWER
    assert event.model_dump(mode="json")["kind"] == "review"
    made = QualityEvent.model_validate(
        {"at": AT, "kind": VerdictKind.REVIEWER, "step_ids": ["one"], "passed": False}
    )
    assert made.model_dump_json().count('"kind":"review"') == 1


def test_the_overview_names_the_newest_verdict(
    tmp_path: Path, make_store: Callable[..., Store]
) -> None:
    db = make_store(tmp_path)
    store = SessionStore(db, tmp_path)
    session_id = new_session_id()
    written = _state_file(session_id)
    with store.transaction() as tx:
        tx.save(Session.model_validate(written))
    for kind, expected in [
        ("override", "override"),
        ("error", "error"),
        ("unreviewed", "unreviewed"),
    ]:
        written["quality_log"] = [_event("review", passed=True), _event(kind)]
        write_session_json(db, session_id, written)
        assert last_verdict(store.load(session_id)) == expected
    written["quality_log"] = [_event("review", passed=True)]
    write_session_json(db, session_id, written)
    assert last_verdict(store.load(session_id)) == "passed"
