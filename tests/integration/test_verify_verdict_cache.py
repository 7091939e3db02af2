"""`deepwork verify --rereview --verdict-cache DIR` (docs/verify.md, "Verdicts kept between CI
runs"): CI keeps each verdict it judged in DIR, signed with the CI key, under the gate's reuse
key, and a later re-review of a task with the same key takes it instead of calling the reviewer,
still countersigning. Real runs of the `reviewed` job leave receipts in a real git repository;
the scripted reviewer double on PATH counts the calls. One changed byte in an output re-judges
only the task that saw it; an entry that is tampered with, a symlink, too large, malformed, under
another key's name or signed by an untrusted key is judged again; `reuse: off` reuses nothing
and `passes` never reuses a failed verdict."""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import Result
from deepwork_core.base.layout import CONFIG_FILE, RECEIPTS_DIR
from deepwork_core.receipts.keys import CiKey
from deepwork_core.receipts.verdict_cache import MAX_ENTRY_BYTES, CacheEntry, VerdictCache

from tests.fixtures.git_repo import commit_all, git
from tests.fixtures.reviewer import ScriptedReviewer
from tests.integration.test_verify_rereview import (
    _findings,
    _receipt,
    _run_reviewed,
    _trust_ci_key,
    _verify,
)
from tests.integration.test_verify_rereview import (
    project as project,
)

_REUSED = re.compile(r"reused from [^/\s]+/(write|polish), \d{4}-\d\d-\d\dT[\d:]+Z")


def _rereview(root: Path, cache: Path, key: CiKey, *args: str) -> Result:
    git(root, "checkout", "-q", "--", RECEIPTS_DIR)  # each CI run starts from the commit
    return _verify(root, "--rereview", "--verdict-cache", str(cache), *args, key=key)


def _entries(cache: Path) -> dict[str, CacheEntry]:
    """The cache's entries by the step they were judged for."""
    entries = [CacheEntry.model_validate_json(p.read_text()) for p in cache.glob("*.json")]
    return {e.step_id: e for e in entries}


@pytest.fixture
def key(project: Path) -> CiKey:
    """The CI key `ci`, trusted on `main` (and `feature` rebased onto it)."""
    ci = CiKey.new("ci")
    _trust_ci_key(project, ci)
    return ci


def test_verdict_cache_needs_rereview(project: Path, tmp_path: Path) -> None:
    result = _verify(project, "--verdict-cache", str(tmp_path / "cache"))
    assert result.exit_code == 2
    assert "--verdict-cache keeps the verdicts of --rereview" in result.output
    assert not (tmp_path / "cache").exists()


def test_a_cache_that_cannot_be_written_still_countersigns(
    project: Path, reviewer_on_path: ScriptedReviewer, tmp_path: Path, key: CiKey
) -> None:
    blocker = tmp_path / "blocker"
    blocker.write_text("a file, not a folder")

    result = _rereview(project, blocker / "cache", key)

    assert result.exit_code == 0, result.output
    assert "1 receipt(s) countersigned by ci" in result.output
    assert result.output.count(": not kept (") == 2
    assert blocker.read_text() == "a file, not a folder"


def _set_policy(root: Path, text: str) -> None:
    """Commit `text` as the base ref's config and move `feature` onto it."""
    git(root, "checkout", "-q", "--", RECEIPTS_DIR)
    git(root, "checkout", "-q", "main")
    (root / CONFIG_FILE).write_text(text)
    commit_all(root, "policy")
    git(root, "checkout", "-q", "feature")
    git(root, "rebase", "-q", "main")


def test_a_second_rereview_with_the_cache_makes_no_reviewer_call_and_still_countersigns(
    project: Path, reviewer_on_path: ScriptedReviewer, tmp_path: Path, key: CiKey
) -> None:
    cache = tmp_path / "cache"
    before = len(reviewer_on_path.calls())
    first = _rereview(project, cache, key)
    assert first.exit_code == 0, first.output
    assert len(reviewer_on_path.calls()) - before == 2
    kept = _entries(cache)
    assert set(kept) == {"write", "polish"}
    session = _receipt(project).body.session_id
    assert {(e.signer, e.session_id, e.runner) for e in kept.values()} == {
        ("ci", session, "claude")
    }
    assert all(e.receipt.startswith(f"{RECEIPTS_DIR}/reviewed/") for e in kept.values())

    before = len(reviewer_on_path.calls())
    second = _rereview(project, cache, key)

    assert second.exit_code == 0, second.output
    assert len(reviewer_on_path.calls()) == before  # no reviewer call
    assert "0 reviewer call(s) with claude ($0.0000 reported), 1 receipt(s) countersigned" in (
        second.output
    )
    assert "2 verdict(s) reused" in second.output
    assert len(_REUSED.findall(second.output)) == 2
    (sign,) = _receipt(project).countersignatures
    reused = {r.step: r.reused_from for r in sign.reviews}
    assert set(reused) == {"write", "polish"}
    assert all(text is not None and _REUSED.fullmatch(text) for text in reused.values())
    assert reused["write"] == f"reused from {session}/write, " + (
        kept["write"].judged_at.isoformat(timespec="seconds").replace("+00:00", "Z")
    )
    plain = _verify(project)  # the countersignature over the reused entries holds
    assert plain.exit_code == 0, plain.output


def test_one_changed_byte_in_an_output_rejudges_only_the_task_that_saw_it(
    project: Path, reviewer_on_path: ScriptedReviewer, tmp_path: Path, key: CiKey
) -> None:
    cache = tmp_path / "cache"
    assert _rereview(project, cache, key).exit_code == 0
    first = _receipt(project).body.session_id
    # Another run on another branch: report.md the same bytes, final.md one byte different.
    git(project, "checkout", "-q", "--", RECEIPTS_DIR)
    git(project, "checkout", "-q", "-b", "other", "main")
    answer = asyncio.run(_run_reviewed(project, tmp_path / "state", final_text="Content\n"))
    assert answer["status"] == "workflow_complete", answer
    assert (project / "final.md").read_text() == "Content\nfinal.md\n"
    git(project, "add", "-A")
    git(project, "commit", "-q", "-m", "another run")
    second = _receipt(project).body.session_id
    assert second != first

    _only_polish_judged(project, reviewer_on_path, cache, key)

    (sign,) = _receipt(project).countersignatures
    reused = {r.step: r.reused_from for r in sign.reviews}
    assert str(reused["write"]).startswith(f"reused from {first}/write, ")
    judged = [CacheEntry.model_validate_json(p.read_text()) for p in cache.glob("*.json")]
    assert sorted((e.step_id, e.session_id == first) for e in judged) == [
        ("polish", False),  # judged for the second run's receipt
        ("polish", True),
        ("write", True),
    ]
    assert all(e.session_id in (first, second) for e in judged)


def _only_polish_judged(root: Path, reviewer: ScriptedReviewer, cache: Path, key: CiKey) -> Result:
    """A re-review in which the reviewer judges polish's review only; write's is reused."""
    before = len(reviewer.calls())
    result = _rereview(root, cache, key)
    assert result.exit_code == 0, result.output
    calls = reviewer.calls()[before:]
    assert len(calls) == 1
    assert "Is the text polished?" in calls[0]["stdin"]
    (sign,) = _receipt(root).countersignatures
    reused = {r.step: r.reused_from for r in sign.reviews}
    assert reused["polish"] is None
    assert reused["write"] is not None
    assert "/write, " in reused["write"]
    return result


def _resign_untrusted(path: Path) -> None:
    entry = CacheEntry.model_validate_json(path.read_text())
    VerdictCache(path.parent).keep(CiKey.new("stranger"), entry)


def _under_another_name(path: Path) -> None:
    other = next(p for p in path.parent.glob("*.json") if p != path)
    path.write_bytes(other.read_bytes())


def _symlink(path: Path) -> None:
    copy = path.parent.parent / "elsewhere.json"
    copy.write_bytes(path.read_bytes())
    path.unlink()
    path.symlink_to(copy)


def _edit_feedback(path: Path) -> None:
    document = json.loads(path.read_text())
    document["verdict"]["feedback"] = "edited"
    path.write_text(json.dumps(document))


TAMPERING: dict[str, tuple[Callable[[Path], None], str]] = {
    "edited": (_edit_feedback, "its signature does not hold"),
    "malformed": (lambda p: p.write_text("{not json"), "malformed"),
    "too_large": (
        lambda p: p.write_text(p.read_text() + " " * MAX_ENTRY_BYTES),
        f"larger than {MAX_ENTRY_BYTES} bytes",
    ),
    "symlink": (_symlink, "a symlink"),
    "untrusted_key": (
        _resign_untrusted,
        "signed by 'stranger', not a CI key trusted on the base ref",
    ),
    "another_key": (_under_another_name, "its content does not match its key"),
}


@pytest.mark.parametrize("how", sorted(TAMPERING))
def test_a_tampered_cache_entry_is_judged_again(
    project: Path, reviewer_on_path: ScriptedReviewer, tmp_path: Path, key: CiKey, how: str
) -> None:
    cache = tmp_path / "cache"
    assert _rereview(project, cache, key).exit_code == 0
    tamper, why = TAMPERING[how]
    target = next(p for p in cache.glob("*.json") if _entries_step(p) == "polish")
    tamper(target)

    result = _only_polish_judged(project, reviewer_on_path, cache, key)

    assert "1 verdict(s) reused" in result.output
    assert f"cache entry {target.name} not trusted ({why}); judged again" in result.output


def _entries_step(path: Path) -> str:
    return CacheEntry.model_validate_json(path.read_text()).step_id


def test_reuse_off_reuses_nothing_and_keeps_nothing(
    project: Path, reviewer_on_path: ScriptedReviewer, tmp_path: Path, key: CiKey
) -> None:
    cache = tmp_path / "cache"
    assert _rereview(project, cache, key).exit_code == 0  # under the default, `passes`
    kept = {p.name: p.read_bytes() for p in cache.glob("*.json")}
    assert len(kept) == 2
    _set_policy(project, "verify:\n  require_countersign: true\nquality_gate:\n  reuse: off\n")

    before = len(reviewer_on_path.calls())
    result = _rereview(project, cache, key)

    assert result.exit_code == 0, result.output
    assert len(reviewer_on_path.calls()) - before == 2
    assert "0 verdict(s) reused" in result.output
    assert all(r.reused_from is None for r in _receipt(project).countersignatures[0].reviews)
    assert {p.name: p.read_bytes() for p in cache.glob("*.json")} == kept  # nothing written


@pytest.mark.parametrize(("mode", "calls"), [("passes", 1), ("all", 0)])
def test_a_failed_verdict_is_reused_only_under_reuse_all(
    project: Path,
    reviewer_on_path: ScriptedReviewer,
    tmp_path: Path,
    key: CiKey,
    mode: str,
    calls: int,
) -> None:
    _set_policy(project, f"verify:\n  require_countersign: true\nquality_gate:\n  reuse: {mode}\n")
    reviewer_on_path.answer("fail", when="Is the text polished?")
    cache = tmp_path / "cache"
    assert _rereview(project, cache, key, "--format", "json").exit_code == 1
    assert not _entries(cache)["polish"].verdict.passed

    before = len(reviewer_on_path.calls())
    result = _rereview(project, cache, key, "--format", "json")

    assert result.exit_code == 1
    assert len(reviewer_on_path.calls()) - before == calls
    codes = {f["code"] for f in _findings(result)}
    assert codes == {"verify.rereview_failed", "verify.countersign_missing"}
