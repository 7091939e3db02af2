"""Finding the DeepWork project an event belongs to."""

from __future__ import annotations

from pathlib import Path

DEEPWORK_DIR = ".deepwork"


def find_project_root(start: Path) -> Path | None:
    """The nearest folder at or above `start` that holds a `.deepwork/` folder, if any."""
    try:
        here = start.resolve()
    except OSError:
        return None
    for folder in (here, *here.parents):
        if (folder / DEEPWORK_DIR).is_dir():
            return folder
    return None
