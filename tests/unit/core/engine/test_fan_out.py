"""Fan-out in the engine (docs/fan-out.md): instances, fan-in, aborts, limits, crash mending, and
worktrees in a real git repository."""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
from deepwork_core.base.errors import DeepWorkError
from deepwork_core.engine.fanout.fan_in import recover
from deepwork_core.engine.fanout.worktrees import Worktrees
from deepwork_core.engine.navigation import active_workflow, go_back
from deepwork_core.engine.results import FinishStatus
from deepwork_core.engine.workflow import WorkflowEngine
from deepwork_core.jobs.discovery import JobCatalog
from deepwork_core.state.sessions import SessionStatus, SessionStore
from deepwork_core.state.store.port import Store

from tests.fixtures.reviewer import ScriptedGate, passes_every_step
from tests.integration.test_fan_out_stdio import fan_job


def _engine(
    make_store: Callable[..., Store],
    root: Path,
    *,
    gate: ScriptedGate | None = None,
    limit: int = 200,
) -> WorkflowEngine:
    catalog = JobCatalog.for_project(root, [])
    return WorkflowEngine(
        root, catalog, SessionStore(make_store(root), root), gate=gate, max_instances=limit
    )


def _code(exc: pytest.ExceptionInfo[DeepWorkError]) -> str:
    return str(exc.value.code)


def test_each_instance_is_gated_alone_and_fan_in_keeps_item_order(
    tmp_path: Path, make_store: Callable[..., Store]
) -> None:
    root = fan_job(tmp_path / "p")
    gate = ScriptedGate(otherwise=passes_every_step)
    engine = _engine(make_store, root, gate=gate)
    fan = engine.start("g", "fan", "write", inputs={"topics": ["z", "a", "m"]}).brief.fan_out
    assert fan is not None
    assert [i.item for i in fan.instances] == ["z", "a", "m"]
    for instance in reversed(fan.instances):  # finished in another order than the items
        brief = active_workflow(engine, instance.session_id).brief
        assert brief is not None
        assert f"about {instance.item}." in brief.instructions
        (root / f"{instance.item}.md").write_text(instance.item)
        done = engine.finish({"section.md": f"{instance.item}.md"}, session_id=instance.session_id)
        assert done.status is FinishStatus.WORKFLOW_COMPLETE
    assert [c.session_id for c in gate.seen] == [i.session_id for i in reversed(fan.instances)]
    joined = engine.finish({}, session_id=fan.parent_session_id)
    assert joined.status is FinishStatus.NEXT_STEP
    assert joined.brief is not None
    assert joined.brief.inputs[0].paths == ["z.md", "a.md", "m.md"]


def test_fan_in_waits_for_every_instance_and_aborted_ones_need_allow_partial(
    tmp_path: Path,
    make_store: Callable[..., Store],
) -> None:
    engine = _engine(make_store, fan_job(tmp_path / "p"))
    fan = engine.start("g", "fan", "write", inputs={"topics": ["a", "b"]}).brief.fan_out
    assert fan is not None
    with pytest.raises(DeepWorkError) as running:
        engine.finish({}, session_id=fan.parent_session_id)
    assert _code(running) == "fan_out.incomplete"
    engine.abort("no sources for a", session_id=fan.instances[0].session_id)
    (engine.project_root / "b.md").write_text("b")
    engine.finish({"section.md": "b.md"}, session_id=fan.instances[1].session_id)
    with pytest.raises(DeepWorkError) as partial:
        engine.finish({}, session_id=fan.parent_session_id)
    assert _code(partial) == "fan_out.incomplete"
    view = active_workflow(engine, fan.parent_session_id).brief
    assert view is not None
    assert view.fan_out is not None
    assert [(i.state, i.abort_reason) for i in view.fan_out.instances] == [
        ("aborted", "no sources for a"),
        ("done", None),
    ]


def test_allow_partial_completes_with_the_finished_instances(
    tmp_path: Path, make_store: Callable[..., Store]
) -> None:
    engine = _engine(make_store, fan_job(tmp_path / "p", allow_partial=True))
    fan = engine.start("g", "fan", "write", inputs={"topics": ["a", "b"]}).brief.fan_out
    assert fan is not None
    engine.abort("given up", session_id=fan.instances[0].session_id)
    (engine.project_root / "b.md").write_text("b")
    engine.finish({"section.md": "b.md"}, session_id=fan.instances[1].session_id)
    joined = engine.finish({}, session_id=fan.parent_session_id)
    assert joined.brief is not None
    assert joined.brief.inputs[0].paths == ["b.md"]


def test_too_many_items_are_refused_before_anything_exists(
    tmp_path: Path, make_store: Callable[..., Store]
) -> None:
    engine = _engine(make_store, fan_job(tmp_path / "p"), limit=3)
    with pytest.raises(DeepWorkError) as refused:
        engine.start("g", "fan", "write", inputs={"topics": ["a", "b", "c", "d"]})
    assert _code(refused) == "fan_out.too_many_instances"
    assert engine.store.all_stacks() == {}
    assert not list((engine.project_root / ".deepwork" / "tmp").glob("session_*.json"))


def test_a_completed_instance_is_never_run_again(
    tmp_path: Path, make_store: Callable[..., Store]
) -> None:
    engine = _engine(make_store, fan_job(tmp_path / "p"))
    fan = engine.start("g", "fan", "write", inputs={"topics": ["a"]}).brief.fan_out
    assert fan is not None
    (engine.project_root / "a.md").write_text("a")
    engine.finish({"section.md": "a.md"}, session_id=fan.instances[0].session_id)
    again = _engine(make_store, engine.project_root)  # a new server process
    recover(again.fan, again.store, again.catalog)
    with pytest.raises(DeepWorkError) as refused:
        again.finish({"section.md": "a.md"}, session_id=fan.instances[0].session_id)
    assert _code(refused) == "session.not_active"


def test_a_crash_before_the_instances_were_made_is_mended_at_the_next_start(
    tmp_path: Path,
    make_store: Callable[..., Store],
) -> None:
    engine = _engine(make_store, fan_job(tmp_path / "p"))
    fan = engine.start("g", "fan", "write", inputs={"topics": ["a", "b"]}).brief.fan_out
    assert fan is not None
    lost = fan.instances[1].session_id
    with engine.store.store.write() as db:  # as if killed between the two writes
        db.execute("DELETE FROM sessions WHERE session_id = ?", (lost,))
    with engine.store.transaction() as tx:
        tx.remove_from_stack(lost)
    again = _engine(make_store, engine.project_root)
    recover(again.fan, again.store, again.catalog)
    session = again.store.load(lost)
    assert session.status is SessionStatus.ACTIVE
    assert session.instance_of is not None
    assert session.instance_of.item == "b"
    assert [s.session_id for s in again.store.stack(lost)] == [lost]


def test_going_back_to_a_fanned_step_aborts_its_old_instances(
    tmp_path: Path, make_store: Callable[..., Store]
) -> None:
    engine = _engine(make_store, fan_job(tmp_path / "p"))
    fan = engine.start("g", "fan", "write", inputs={"topics": ["a"]}).brief.fan_out
    assert fan is not None
    again = go_back(engine, "sections", session_id=fan.parent_session_id).brief.fan_out
    assert again is not None
    assert again.instances[0].session_id != fan.instances[0].session_id
    old = engine.store.load(fan.instances[0].session_id)
    assert old.status is SessionStatus.ABORTED


def _git(root: Path, *args: str) -> str:
    done = subprocess.run(["git", *args], cwd=root, check=True, capture_output=True, text=True)
    return done.stdout


def _repo(root: Path) -> Path:
    _git(root, "init", "-q", "-b", "main")
    _git(root, "config", "user.email", "t@example.com")
    _git(root, "config", "user.name", "T")
    (root / ".gitignore").write_text(".deepwork/tmp/\n")
    (root / "shared.txt").write_text("base\n")
    _git(root, "add", "-A")
    _git(root, "commit", "-q", "-m", "base")
    return root


def test_worktree_instances_merge_in_item_order_and_a_conflict_changes_nothing(
    tmp_path: Path,
    make_store: Callable[..., Store],
) -> None:
    root = _repo(fan_job(tmp_path / "p", isolation="worktree"))
    engine = _engine(make_store, root)
    fan = engine.start("g", "fan", "write", inputs={"topics": ["a", "b", "c"]}).brief.fan_out
    assert fan is not None
    folders = [root / (i.worktree or "") for i in fan.instances]
    for folder, instance in zip(folders, fan.instances, strict=True):
        (folder / f"{instance.item}.md").write_text(instance.item)
        (folder / "shared.txt").write_text(f"from {instance.item}\n")
        done = engine.finish({"section.md": f"{instance.item}.md"}, session_id=instance.session_id)
        # The scope guard judges the instance inside its worktree: shared.txt is not declared.
        assert "does not declare" in (done.summary or "")
        assert "shared.txt" in (done.summary or "")
    head = _git(root, "rev-parse", "HEAD")
    with pytest.raises(DeepWorkError) as conflict:
        engine.finish({}, session_id=fan.parent_session_id)
    assert _code(conflict) == "fan_out.merge_conflict"
    assert "instance 2 (b)" in conflict.value.message
    assert "shared.txt" in conflict.value.message
    assert _git(root, "rev-parse", "HEAD") != head  # instance 1 stays merged
    assert (root / "shared.txt").read_text() == "from a\n"
    assert _git(root, "status", "--porcelain") == ""
    assert not folders[0].exists()
    assert folders[1].is_dir()
    _resolve(folders[1], "a and b")
    with pytest.raises(DeepWorkError) as next_conflict:  # b is in; now c conflicts with it
        engine.finish({}, session_id=fan.parent_session_id)
    assert "instance 3 (c)" in next_conflict.value.message
    _resolve(folders[2], "a, b and c")
    joined = engine.finish({}, session_id=fan.parent_session_id)
    assert joined.status is FinishStatus.NEXT_STEP
    assert (root / "shared.txt").read_text() == "a, b and c\n"
    assert [p.read_text() for p in (root / "a.md", root / "b.md", root / "c.md")] == list("abc")
    assert not any(folder.exists() for folder in folders)
    assert "deepwork/" not in _git(root, "branch", "--list")


def _resolve(folder: Path, text: str) -> None:
    """What the agent does in a conflicted instance's worktree: merge, fix, commit."""
    subprocess.run(["git", "merge", "-q", "main"], cwd=folder, capture_output=True, check=False)
    (folder / "shared.txt").write_text(text + "\n")
    _git(folder, "add", "-A")
    _git(folder, "commit", "-q", "-m", "resolve")


class _Killed(BaseException):
    """What a SIGKILL does to the call: it stops there, and its transaction is not committed."""


def _finished_worktree_instances(
    make_store: Callable[..., Store], root: Path
) -> tuple[WorkflowEngine, str, list[Path]]:
    """A worktree fan-out over a and b whose instances both finished: the engine, the parent
    session and the instances' folders."""
    engine = _engine(make_store, _repo(fan_job(root, isolation="worktree")))
    fan = engine.start("g", "fan", "write", inputs={"topics": ["a", "b"]}).brief.fan_out
    assert fan is not None
    folders = [root / (i.worktree or "") for i in fan.instances]
    for folder, instance in zip(folders, fan.instances, strict=True):
        (folder / f"{instance.item}.md").write_text(instance.item)
        engine.finish({"section.md": f"{instance.item}.md"}, session_id=instance.session_id)
    return engine, fan.parent_session_id, folders


def test_a_kill_between_removing_a_merged_worktree_and_its_branch_merges_nothing_twice(
    tmp_path: Path, make_store: Callable[..., Store], monkeypatch: pytest.MonkeyPatch
) -> None:
    engine, parent, folders = _finished_worktree_instances(make_store, tmp_path / "p")
    remove_folder = Worktrees.remove_folder

    def killed_after_the_folder(self: Worktrees, folder: str) -> None:
        remove_folder(self, folder)
        raise _Killed  # instance a is merged and its folder gone; its branch is still there

    with monkeypatch.context() as patched:
        patched.setattr(Worktrees, "remove_folder", killed_after_the_folder)
        with pytest.raises(_Killed):
            engine.finish({}, session_id=parent)
    assert not folders[0].exists()
    assert f"deepwork/{parent}/" in _git(engine.project_root, "branch", "--list")
    again = _engine(make_store, engine.project_root)  # the next server process
    recover(again.fan, again.store, again.catalog)
    joined = again.finish({}, session_id=parent)
    assert joined.status is FinishStatus.NEXT_STEP
    merges = _git(engine.project_root, "log", "--merges", "--format=%s").splitlines()
    assert [m.rsplit(" ", 1)[-1] for m in merges] == ["(b)", "(a)"]  # each merged once
    assert "deepwork/" not in _git(engine.project_root, "branch", "--list")
    assert [(engine.project_root / f"{t}.md").read_text() for t in "ab"] == ["a", "b"]


def test_a_worktree_removed_by_hand_with_unmerged_commits_is_not_taken_as_merged(
    tmp_path: Path, make_store: Callable[..., Store]
) -> None:
    engine, parent, folders = _finished_worktree_instances(make_store, tmp_path / "p")
    _git(folders[1], "add", "-A")
    _git(folders[1], "commit", "-q", "-m", "work kept on the branch")
    _git(engine.project_root, "worktree", "remove", "--force", str(folders[1]))
    head = _git(engine.project_root, "rev-parse", "HEAD")
    with pytest.raises(DeepWorkError) as lost:
        engine.finish({}, session_id=parent)
    assert _code(lost) == "fan_out.worktree_lost"
    assert "instance 2 (b)" in lost.value.message
    assert f"git worktree add {folders[1].relative_to(engine.project_root)}" in lost.value.message
    assert _git(engine.project_root, "rev-parse", "HEAD") == head  # the transaction rolled back
    branch = lost.value.message.split("its branch ", 1)[1].split(" ", 1)[0]
    _git(engine.project_root, "worktree", "add", "-q", str(folders[1]), branch)
    joined = engine.finish({}, session_id=parent)
    assert joined.status is FinishStatus.NEXT_STEP
    assert (engine.project_root / "b.md").read_text() == "b"


def test_an_instance_cannot_go_back_on_its_own(
    tmp_path: Path, make_store: Callable[..., Store]
) -> None:
    engine = _engine(make_store, fan_job(tmp_path / "p"))
    fan = engine.start("g", "fan", "write", inputs={"topics": ["a"]}).brief.fan_out
    assert fan is not None
    with pytest.raises(DeepWorkError) as refused:
        go_back(engine, "sections", session_id=fan.instances[0].session_id)
    assert _code(refused) == "navigation.error"
