"""The one glob syntax of DeepWork (`.deepreview` rules, a step's `may_change`).

`**/` zero or more folders, a trailing `**` anything, `*` any characters except `/`, `?` one
character except `/`; everything else is literal. Paths are POSIX and relative.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import lru_cache


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


def normalise_glob(pattern: str) -> str:
    """`pattern` without leading `./`."""
    while pattern.startswith("./"):
        pattern = pattern[2:]
    return pattern


@lru_cache(maxsize=1024)
def _compile_any(patterns: tuple[str, ...]) -> re.Pattern[str] | None:
    if not patterns:
        return None
    alternatives = "|".join(glob_to_regex(normalise_glob(p)) for p in patterns)
    return re.compile(f"(?:{alternatives})")


def matches_any(path: str, patterns: Sequence[str]) -> bool:
    """True when the relative POSIX `path` matches one of `patterns` as a whole."""
    regex = _compile_any(tuple(patterns))
    return regex is not None and regex.fullmatch(path) is not None
