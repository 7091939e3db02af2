"""A quick, cautious reading of git's ignore rules: which new files git surely does not ignore.

The change watch must know whether git ignores a file a step created. Asking git costs a round
trip to a `git check-ignore` process, which on a busy machine is most of a checkpoint. Most new
files match no ignore pattern at all, and that much can be decided here: `IgnoreRules.may_ignore`
answers False only when no pattern of any ignore file could match any part of the path; every
other path is asked of git, which decides.

The reading is deliberately loose, so it can only err towards asking git: leading and trailing
slashes are dropped (a pattern may match any run of path components, at any depth), `*` and `?`
also match `/`, `**/` and `/**` may match nothing, case is ignored, negations are skipped (they
only ever un-ignore), and a pattern with a backslash makes every path a question for git.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Iterable
from pathlib import Path


class IgnoreRules:
    """The patterns of a set of ignore files, read once."""

    def __init__(self, files: Iterable[Path], *, complete: bool = True) -> None:
        """`complete` False: some ignore file could not be read, so every path is a question."""
        self._always = not complete
        regexes: set[str] = set()
        for file in files:
            try:
                text = file.read_text(encoding="utf-8", errors="replace")
            except FileNotFoundError:
                continue
            except OSError:
                self._always = True
                continue
            for pattern in _patterns(text):
                if "\\" in pattern:
                    self._always = True
                for variant in {pattern, pattern.replace("**/", ""), pattern.replace("/**", "")}:
                    regexes.add(fnmatch.translate(variant.replace("[^", "[!")))
        self._regex = re.compile("|".join(f"(?:{r})" for r in sorted(regexes))) if regexes else None

    def may_ignore(self, path: str) -> bool:
        """False when git surely does not ignore `path` (project- or repository-relative)."""
        if self._always:
            return True
        if self._regex is None:
            return False
        parts = path.lower().split("/")
        match = self._regex.match
        for start in range(len(parts)):
            for end in range(start + 1, len(parts) + 1):
                if match("/".join(parts[start:end])):
                    return True
        return False


def _patterns(text: str) -> list[str]:
    patterns: list[str] = []
    for line in text.splitlines():
        stripped = line.rstrip()  # leading spaces are part of a pattern, trailing ones not
        if not stripped or stripped.startswith(("#", "!")):
            continue
        pattern = stripped.strip("/").lower()
        if pattern:
            patterns.append(pattern)
    return patterns
