"""`stack.json` for the hooks: rewritten only when what they read changes."""

from __future__ import annotations

import json
from pathlib import Path

from deepwork_core.state.stack_marker import write_stack_marker


def test_the_marker_is_rewritten_only_when_its_content_changes(tmp_path: Path) -> None:
    path = tmp_path / "stack.json"
    write_stack_marker(path, {None: ["sess_a0000001"]}, "job")
    first = path.stat().st_ino
    write_stack_marker(path, {None: ["sess_a0000001"]}, "job")
    assert path.stat().st_ino == first  # the same file: nothing was written
    write_stack_marker(path, {None: ["sess_a0000001", "sess_b0000002"]}, "job")
    assert path.stat().st_ino != first  # replaced, never written in place
    assert json.loads(path.read_text())["session_ids"] == ["sess_a0000001", "sess_b0000002"]
    write_stack_marker(path, {None: []})
    assert not path.exists()


def test_a_cut_off_marker_is_replaced_by_the_stacks(tmp_path: Path) -> None:
    path = tmp_path / "stack.json"
    path.write_text('{"schema_version": 1, "sess')
    write_stack_marker(path, {None: ["sess_a0000001"]})
    assert json.loads(path.read_text())["session_ids"] == ["sess_a0000001"]
