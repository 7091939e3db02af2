"""Glob matching for `.deepreview` rules (docs/reviews.md).

The glob syntax is that of `deepwork_core.base.globs`. Paths are POSIX, relative to the folder of
the
`.deepreview` file.
"""

from __future__ import annotations

import re
from bisect import bisect_left
from collections.abc import Sequence
from functools import lru_cache

from deepwork_core.base.globs import glob_to_regex, normalise_glob


@lru_cache(maxsize=4096)
def _compile(prefix: str, patterns: tuple[str, ...]) -> re.Pattern[str] | None:
    """One regex for `prefix` followed by any of `patterns` (None when there are none).

    Compiled once per distinct pattern list and folder; many rules share both (`**/*.py`).
    """
    if not patterns:
        return None
    alternatives = "|".join(glob_to_regex(normalise_glob(pattern)) for pattern in patterns)
    return re.compile(f"{re.escape(prefix)}(?:{alternatives})")


class Scope:
    """A rule's view of the project: its folder, its include and exclude globs.

    Paths are project-relative; the globs match the part below the folder. `select` and
    `any_match` take sorted path lists: the paths under the folder are found by bisection and
    matched by one compiled regex each for includes and excludes, so large lists stay cheap.
    """

    __slots__ = ("_exclude", "_include", "_prefix", "_upper", "folder")

    def __init__(self, folder: str, include: Sequence[str], exclude: Sequence[str]) -> None:
        self.folder = folder
        self._prefix = f"{folder}/" if folder else ""
        # Every path starting with "<folder>/" sorts before "<folder>0" ('0' follows '/').
        self._upper = f"{folder}0"
        include_regex = _compile(self._prefix, tuple(include))
        if include_regex is None:
            raise ValueError("a scope needs at least one include pattern")
        self._include = include_regex
        self._exclude = _compile(self._prefix, tuple(exclude))

    def window(self, sorted_paths: Sequence[str]) -> Sequence[str]:
        """The slice of `sorted_paths` that lies under the folder."""
        if not self._prefix:
            return sorted_paths
        low = bisect_left(sorted_paths, self._prefix)
        high = bisect_left(sorted_paths, self._upper, low)
        return sorted_paths[low:high]

    def matches(self, path: str) -> bool:
        return self._include.fullmatch(path) is not None and (
            self._exclude is None or self._exclude.fullmatch(path) is None
        )

    def select(self, sorted_paths: Sequence[str]) -> list[str]:
        """The paths this scope matches, in order."""
        found = filter(self._include.fullmatch, self.window(sorted_paths))
        if self._exclude is None:
            return list(found)
        exclude = self._exclude.fullmatch
        return [path for path in found if exclude(path) is None]

    def any_match(self, sorted_paths: Sequence[str]) -> bool:
        exclude = self._exclude
        for path in filter(self._include.fullmatch, self.window(sorted_paths)):
            if exclude is None or exclude.fullmatch(path) is None:
                return True
        return False
