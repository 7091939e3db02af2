"""Where each project's approval key lives: the user's state directory, outside `.deepwork/`.

The key that seals human approvals (docs/security.md) must not sit in the project, where the agent
writes freely. It is `<state>/keys/<sha256 of the resolved project root>.key`, where `<state>` is
`DEEPWORK_STATE_DIR` when set (tests, CI), else `$XDG_STATE_HOME/deepwork` (an absolute
`XDG_STATE_HOME` only, as the XDG spec says), else `~/.local/state/deepwork`. The command line
reads the environment and passes the folder down; `deepwork serve` and `deepwork approve` of one
project therefore find the same key.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Final

from deepwork_core.state.approval_seal import ApprovalKey

STATE_DIR_ENV: Final = "DEEPWORK_STATE_DIR"
_XDG_STATE_HOME: Final = "XDG_STATE_HOME"


def state_dir(env: Mapping[str, str]) -> Path:
    """DeepWork's folder in the user's state directory, from the environment `env`."""
    chosen = env.get(STATE_DIR_ENV)
    if chosen:
        return Path(chosen).expanduser().absolute()
    xdg = env.get(_XDG_STATE_HOME)
    if xdg and Path(xdg).is_absolute():
        return Path(xdg) / "deepwork"
    home = env.get("HOME")
    return (Path(home) if home else Path.home()) / ".local" / "state" / "deepwork"


def approval_key(state: Path, project_root: Path) -> ApprovalKey:
    """The approval key of `project_root` under the state folder `state` (made on first use)."""
    digest = hashlib.sha256(os.fsencode(project_root.resolve())).hexdigest()
    return ApprovalKey(state / "keys" / f"{digest}.key")
