"""The quick reading of ignore rules may ask git too often, never too seldom: every path git
ignores is one it says git may ignore."""

from __future__ import annotations

import subprocess
from pathlib import Path

from deepwork_core.evidence.ignore_rules import IgnoreRules

from tests.fixtures.git_repo import init_repo

RULES = """\
# a comment
*.log
/build/
docs/**/draft-*.md
**/cache
Temp?.txt
[Oo]ut[0-9]/
[^a]x.bin
!keep.log
 leading.txt
trailing.txt{spaces}
src/gen/
""".format(spaces="   ")

PATHS = [
    "a.log", "deep/er/b.log", "keep.log", "build/x.o", "sub/build/x.o", "docs/a/b/draft-1.md",
    "docs/draft-2.md", "cache", "a/b/cache/x", "Temp1.txt", "temp1.txt", "out3/x", "Out4/y",
    "zx.bin", "ax.bin", " leading.txt", "leading.txt", "trailing.txt", "src/gen/x.py",
    "src/general.py", "plain.md", "src/ok.py", "docs/final.md", "x/out/y",
]  # fmt: skip


def git_ignored(repo: Path, paths: list[str]) -> set[str]:
    result = subprocess.run(
        ["git", "check-ignore", "--no-index", "--stdin", "-z"],
        cwd=repo,
        input="\0".join(paths) + "\0",
        capture_output=True,
        text=True,
        check=False,
    )
    return {path for path in result.stdout.split("\0") if path}


def test_every_path_git_ignores_is_asked_of_git(tmp_path: Path) -> None:
    init_repo(tmp_path)
    (tmp_path / ".gitignore").write_text(RULES)
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / ".gitignore").write_text("local-*.md\n")
    ignored = git_ignored(tmp_path, [*PATHS, "docs/local-1.md"])
    assert {"a.log", "build/x.o", "docs/local-1.md", "src/gen/x.py"} <= ignored
    rules = IgnoreRules([tmp_path / ".gitignore", tmp_path / "docs" / ".gitignore"])
    for path in ignored:
        assert rules.may_ignore(path), path
    surely_not = [path for path in PATHS if not rules.may_ignore(path)]
    assert {"plain.md", "src/ok.py", "docs/final.md", "src/general.py"} <= set(surely_not)


def test_no_rules_ignore_nothing_and_unreadable_rules_ask_git(tmp_path: Path) -> None:
    assert not IgnoreRules([tmp_path / "missing"]).may_ignore("a.txt")
    assert IgnoreRules([], complete=False).may_ignore("a.txt")
    (tmp_path / "escaped").write_text("\\#hash\n")
    assert IgnoreRules([tmp_path / "escaped"]).may_ignore("anything.txt")
