"""The README speaks of every plugin there is (issue 43, item 23)."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]
README = (REPO / "README.md").read_text(encoding="utf-8")


def test_the_layout_lists_every_plugin_folder() -> None:
    layout = README.split("### Layout", 1)[1]
    for folder in sorted(p.name for p in (REPO / "plugins").iterdir() if p.is_dir()):
        assert f"plugins/{folder}/" in layout, folder


def test_no_sentence_counts_two_plugins() -> None:
    assert not re.search(r"\bBoth plugins\b", README)


def test_every_client_row_gives_a_command() -> None:
    table = README.split("| Client |", 1)[1].split("\n\n", 1)[0]
    rows = [line for line in table.splitlines()[1:] if line.startswith("| ") and "---" not in line]
    assert len(rows) >= 7
    for row in rows:
        assert "`" in row, row
    [cursor] = [row for row in rows if row.startswith("| Cursor |")]
    assert "plugins/cursor/mcp.json" in cursor
