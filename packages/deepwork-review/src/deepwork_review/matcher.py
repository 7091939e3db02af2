"""Glob matching for `.deepreview` rules (FORMATS.md §4).

Syntax: `**/` zero or more folders, a trailing `**` anything, `*` any characters except `/`,
`?` one character except `/`; everything else is literal. Paths are POSIX, relative to the
folder of the `.deepreview` file. Every pattern is compiled once: the common shapes
(`**/*.py`, `docs/**`, `README.md`, `**/CLAUDE.md`) become plain string tests, the rest one
anchored regular expression per pattern set.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from functools import lru_cache

_WILDCARDS = frozenset("*?")


def glob_to_regex(pattern: str) -> str:
    """The regular expression (without anchors) that matches what `pattern` matches."""
    out: list[str] = []
    i, n = 0, len(pattern)
    while i < n:
        char = pattern[i]
        if pattern.startswith("**", i):
            if pattern.startswith("**/", i):
                out.append("(?:[^/]*/)*")
                i += 3
                continue
            if i + 2 == n:
                out.append(".*")
                i += 2
                continue
            out.append("[^/]*")  # `**` inside a name behaves like `*`
            i += 2
            continue
        if char == "*":
            out.append("[^/]*")
        elif char == "?":
            out.append("[^/]")
        else:
            out.append(re.escape(char))
        i += 1
    return "".join(out)


def _normalise(pattern: str) -> str:
    while pattern.startswith("./"):
        pattern = pattern[2:]
    return pattern


def _string_test(pattern: str) -> Callable[[str], bool] | None:
    """A fast equivalent of the pattern using only string methods, when one exists."""
    if not _WILDCARDS.intersection(pattern):
        return pattern.__eq__
    if pattern.startswith("**/") and "*" not in pattern[3:] and "?" not in pattern[3:]:
        name = pattern[3:]
        suffix = "/" + name
        return lambda path: path == name or path.endswith(suffix)
    if pattern.startswith("**/*") and not _WILDCARDS.intersection(pattern[4:]):
        tail = pattern[4:]
        if "/" not in tail:
            return (lambda path: path.endswith(tail)) if tail else (lambda path: True)
    if pattern.endswith("/**") and not _WILDCARDS.intersection(pattern[:-3]):
        prefix = pattern[:-2]
        return lambda path: path.startswith(prefix)
    if pattern == "**":
        return lambda path: True
    return None


class GlobSet:
    """A compiled set of globs: `matches(path)` is true when any of them matches."""

    __slots__ = ("_regex", "_tests", "patterns")

    def __init__(self, patterns: Iterable[str]) -> None:
        self.patterns: tuple[str, ...] = tuple(_normalise(p) for p in patterns)
        tests: list[Callable[[str], bool]] = []
        regex_parts: list[str] = []
        for pattern in self.patterns:
            test = _string_test(pattern)
            if test is None:
                regex_parts.append(glob_to_regex(pattern))
            else:
                tests.append(test)
        self._tests = tuple(tests)
        self._regex = re.compile("|".join(regex_parts)) if regex_parts else None

    def matches(self, path: str) -> bool:
        for test in self._tests:
            if test(path):
                return True
        return self._regex is not None and self._regex.fullmatch(path) is not None


class Scope:
    """A rule's view of the project: its folder, its include and exclude globs.

    `relative(path)` maps a project-relative path into the folder (None when outside);
    `matches(path)` takes a project-relative path.
    """

    __slots__ = ("_exclude", "_include", "_prefix", "folder")

    def __init__(self, folder: str, include: Sequence[str], exclude: Sequence[str]) -> None:
        self.folder = folder
        self._prefix = f"{folder}/" if folder else ""
        self._include = _glob_set(tuple(include))
        self._exclude = _glob_set(tuple(exclude))

    def relative(self, path: str) -> str | None:
        if not self._prefix:
            return path
        return path[len(self._prefix) :] if path.startswith(self._prefix) else None

    def matches(self, path: str) -> bool:
        inner = self.relative(path)
        return (
            inner is not None and self._include.matches(inner) and not self._exclude.matches(inner)
        )

    def select(self, paths: Iterable[str]) -> list[str]:
        """The paths (project-relative) this scope matches, in the order given."""
        return [path for path in paths if self.matches(path)]

    def any_match(self, paths: Iterable[str]) -> bool:
        return any(self.matches(path) for path in paths)


@lru_cache(maxsize=4096)
def _glob_set(patterns: tuple[str, ...]) -> GlobSet:
    # Many rules share pattern lists (`**/*.py`); compile each distinct list once per process.
    return GlobSet(patterns)
