"""Evidence records: hashes bound to verdicts, and the staleness check that re-reads them."""

from __future__ import annotations

import hashlib
import os
from datetime import UTC, datetime
from pathlib import Path

from deepwork_core.evidence.hashes import (
    OutputEvidence,
    bind,
    find_stale,
    hash_outputs,
    merge,
    sha256_file,
)
from deepwork_core.evidence.verdicts import VerdictKind

WHEN = datetime(2026, 11, 23, 22, 0, tzinfo=UTC)


def digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    (root / "out").mkdir(parents=True)
    (root / "out" / "report.md").write_text("report v1\n")
    (root / "out" / "a.md").write_text("a\n")
    (root / "out" / "b.md").write_text("b\n")
    return root.resolve()


def test_every_file_of_every_output_is_hashed(tmp_path: Path) -> None:
    root = project(tmp_path)
    hashes = hash_outputs(
        root, {"write": {"report": "out/report.md"}, "split": {"parts": ["out/a.md", "out/b.md"]}}
    )
    assert [(h.step_id, h.output, h.path, h.sha256) for h in hashes] == [
        ("write", "report", "out/report.md", digest("report v1\n")),
        ("split", "parts", "out/a.md", digest("a\n")),
        ("split", "parts", "out/b.md", digest("b\n")),
    ]


def test_a_file_that_is_gone_or_escapes_the_project_has_no_hash(tmp_path: Path) -> None:
    root = project(tmp_path)
    outside = tmp_path / "secret.txt"
    outside.write_text("secret\n")
    (root / "out" / "link.md").symlink_to(outside)
    assert sha256_file(root, "out/missing.md") is None
    assert sha256_file(root, "out/link.md") is None
    assert sha256_file(root, "out") is None


def test_an_edit_after_the_verdict_is_stale_evidence(tmp_path: Path) -> None:
    root = project(tmp_path)
    evidence = bind(
        hash_outputs(root, {"write": {"report": "out/report.md"}}), VerdictKind.REVIEWER, WHEN
    )
    assert find_stale(root, evidence) == []

    (root / "out" / "report.md").write_text("report v2\n")
    [stale] = find_stale(root, evidence)
    assert (stale.step_id, stale.output, stale.path) == ("write", "report", "out/report.md")
    assert (stale.old_sha256, stale.new_sha256) == (digest("report v1\n"), digest("report v2\n"))

    (root / "out" / "report.md").unlink()
    assert find_stale(root, evidence)[0].new_sha256 is None


def test_touching_a_file_without_changing_its_bytes_is_not_stale(tmp_path: Path) -> None:
    root = project(tmp_path)
    evidence = bind(
        hash_outputs(root, {"write": {"report": "out/report.md"}}), VerdictKind.OVERRIDE, WHEN, "ok"
    )
    os.utime(root / "out" / "report.md", (1, 1))
    assert find_stale(root, evidence) == []
    assert evidence[0].override_reason == "ok"


def test_a_new_verdict_replaces_the_step_records_it_covers(tmp_path: Path) -> None:
    root = project(tmp_path)
    first = bind(
        hash_outputs(
            root,
            {"split": {"parts": ["out/a.md", "out/b.md"]}, "write": {"report": "out/report.md"}},
        ),
        VerdictKind.SELF_REVIEW,
        WHEN,
    )
    again = bind(hash_outputs(root, {"split": {"parts": ["out/a.md"]}}), VerdictKind.REVIEWER, WHEN)
    merged = merge(first, again, steps=["split"])
    assert sorted((e.path, e.verdict) for e in merged) == [
        ("out/a.md", VerdictKind.REVIEWER),
        ("out/report.md", VerdictKind.SELF_REVIEW),
    ]


def test_records_survive_a_json_round_trip(tmp_path: Path) -> None:
    root = project(tmp_path)
    [record] = bind(
        hash_outputs(root, {"write": {"report": "out/report.md"}}), VerdictKind.UNREVIEWED, WHEN
    )
    assert OutputEvidence.model_validate_json(record.model_dump_json()) == record


def test_a_file_swapped_for_a_link_out_of_the_project_is_stale(tmp_path: Path) -> None:
    root = project(tmp_path)
    evidence = bind(
        hash_outputs(root, {"write": {"report": "out/report.md"}}), VerdictKind.REVIEWER, WHEN
    )
    outside = tmp_path / "same.md"
    outside.write_text("report v1\n")  # the same bytes, outside the project
    (root / "out" / "report.md").unlink()
    (root / "out" / "report.md").symlink_to(outside)
    [stale] = find_stale(root, evidence)
    assert stale.new_sha256 is None
