"""The project's runtime folder `.deepwork/tmp/` (`docs/runtime-layout.md`)."""

from __future__ import annotations

from pathlib import Path

from deepwork_core.base.fsutil import atomic_write_text
from deepwork_core.base.layout import TMP_DIR

_GITIGNORE = "*\n"


def ensure_tmp_dir(project_root: Path) -> Path:
    """Create `.deepwork/tmp/` if needed, with a `.gitignore` holding `*`, and return it.

    The `.gitignore` ignores everything in the folder, itself included, so runtime files never
    show up as changes in git or in reviews.
    """
    tmp = project_root / TMP_DIR
    tmp.mkdir(parents=True, exist_ok=True)
    gitignore = tmp / ".gitignore"
    if not gitignore.exists():
        atomic_write_text(gitignore, _GITIGNORE)
    return tmp
