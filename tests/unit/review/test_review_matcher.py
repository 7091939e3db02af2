"""Glob semantics of `.deepreview` rules (docs/reviews.md) and scoping to a rule's folder."""

from __future__ import annotations

import re

import pytest
from deepwork_core.base.globs import glob_to_regex
from deepwork_review.matcher import Scope

PATHS = [
    "a.py",
    "src/a.py",
    "src/deep/er/b.py",
    "src/a.pyc",
    "docs/README.md",
    "README.md",
    "x/README.md",
    "docs",
    "docs/a/b/c.txt",
    "src/tests/test_a.py",
    "a/b/c/d",
    "ab",
    "a/b",
    ".deepreview",
    "pkg/.deepreview",
]


@pytest.mark.parametrize(
    ("pattern", "expected"),
    [
        # `**` at the start: zero or more folders
        ("**/*.py", {"a.py", "src/a.py", "src/deep/er/b.py", "src/tests/test_a.py"}),
        ("**/README.md", {"README.md", "docs/README.md", "x/README.md"}),
        ("**/.deepreview", {".deepreview", "pkg/.deepreview"}),
        # `**` in the middle
        ("src/**/a.py", {"src/a.py"}),
        ("src/**/*.py", {"src/a.py", "src/deep/er/b.py", "src/tests/test_a.py"}),
        ("a/**/d", {"a/b/c/d"}),
        # `**` at the end: anything below
        ("docs/**", {"docs/README.md", "docs/a/b/c.txt"}),
        ("src/deep/**", {"src/deep/er/b.py"}),
        ("**", set(PATHS)),
        ("**/*", set(PATHS)),
        # `*` never crosses a folder, `?` is one character
        ("*.py", {"a.py"}),
        ("src/*.py", {"src/a.py"}),
        ("src/a.py?", {"src/a.pyc"}),
        ("a?", {"ab"}),
        ("a?b", set()),
        # literal
        ("README.md", {"README.md"}),
        ("./README.md", {"README.md"}),
        # characters that mean something in a regular expression are literal
        ("a+b", set()),
    ],
)
def test_glob_semantics(pattern: str, expected: set[str]) -> None:
    scope = Scope("", [pattern], [])
    assert {path for path in PATHS if scope.matches(path)} == expected
    assert set(scope.select(sorted(PATHS))) == expected


def test_regex_is_anchored_and_never_crosses_a_folder_with_star() -> None:
    regex = re.compile(glob_to_regex("src/*.py"))
    assert regex.fullmatch("src/a.py")
    assert not regex.fullmatch("src/a/b.py")
    assert not regex.fullmatch("xsrc/a.py")


def test_brackets_and_braces_are_literal() -> None:
    assert Scope("", ["[ab].py"], []).matches("[ab].py")
    assert not Scope("", ["[ab].py"], []).matches("a.py")
    assert Scope("", ["{a,b}.py"], []).matches("{a,b}.py")


def test_exclude_patterns_win() -> None:
    scope = Scope("", ["**/*.py"], ["tests/fixtures/**", "**/generated_*.py"])
    assert scope.select(
        ["a.py", "tests/fixtures/x.py", "tests/test_a.py", "pkg/generated_x.py"]
    ) == ["a.py", "tests/test_a.py"]


def test_scope_matches_paths_relative_to_the_rule_folder() -> None:
    scope = Scope("pkg/sub", ["*.py", "docs/**"], [])
    assert scope.matches("pkg/sub/a.py")
    assert scope.matches("pkg/sub/docs/x/y.md")
    assert not scope.matches("pkg/sub/deeper/a.py")  # `*` does not cross folders
    assert not scope.matches("a.py")  # outside the folder
    assert not scope.matches("pkg/subway/a.py")  # a sibling with the same prefix


def test_folder_window_excludes_siblings_with_similar_names() -> None:
    paths = sorted(["pkg-x/a.py", "pkg.x/a.py", "pkg/a.py", "pkg/z/b.py", "pkg0/a.py", "pkgz/a.py"])
    scope = Scope("pkg", ["**"], [])
    assert list(scope.window(paths)) == ["pkg/a.py", "pkg/z/b.py"]
    assert scope.select(paths) == ["pkg/a.py", "pkg/z/b.py"]
    assert scope.any_match(paths)
    assert not Scope("pkg", ["*.md"], []).any_match(paths)
