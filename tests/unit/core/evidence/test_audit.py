"""One checkpoint's audit: hashes, stale evidence and undeclared changes together."""

from __future__ import annotations

import subprocess
from datetime import UTC, datetime
from pathlib import Path

from deepwork_core.evidence.audit import audit_checkpoint
from deepwork_core.evidence.hashes import bind, hash_outputs
from deepwork_core.evidence.scope import take_snapshot
from deepwork_core.evidence.verdicts import VerdictKind


def git(repo: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True, timeout=30)


def make_repo(root: Path) -> Path:
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    git(root, "config", "user.email", "t@example.com")
    git(root, "config", "user.name", "Tester")
    (root / "src.py").write_text("x = 1\n")
    git(root, "add", ".")
    git(root, "commit", "-q", "-m", "first")
    return root.resolve()


def test_an_audit_reports_stale_evidence_and_undeclared_files(tmp_path: Path) -> None:
    root = make_repo(tmp_path / "repo")
    (root / "plan.md").write_text("plan\n")
    earlier = bind(
        hash_outputs(root, {"plan": {"plan": "plan.md"}}), VerdictKind.REVIEWER, datetime.now(UTC)
    )
    began = take_snapshot(root)
    (root / "report.md").write_text("report\n")
    (root / "plan.md").write_text("plan, edited during the next step\n")
    (root / "src.py").write_text("x = 2\n")
    (root / "docs").mkdir()
    (root / "docs" / "notes.md").write_text("notes\n")

    audit = audit_checkpoint(
        root, {"write": {"report": "report.md"}}, earlier, began, may_change=["docs/**"]
    )

    assert [h.path for h in audit.hashes] == ["report.md"]
    assert [(s.step_id, s.path) for s in audit.stale] == [("plan", "plan.md")]
    assert audit.undeclared == ["plan.md", "src.py"]
    assert audit.snapshot is not None
    assert audit.guard_note is None


def test_outside_git_or_switched_off_there_is_no_guard(tmp_path: Path) -> None:
    (tmp_path / "report.md").write_text("report\n")
    audit = audit_checkpoint(tmp_path.resolve(), {"write": {"report": "report.md"}}, [], None)
    assert audit.undeclared == []
    assert audit.snapshot is None
    root = make_repo(tmp_path / "repo")
    began = take_snapshot(root)
    (root / "src.py").write_text("changed\n")
    off = audit_checkpoint(root, {}, [], began, guard=False)
    assert off.undeclared == []
    assert off.guard_note == "scope guard off"
