"""How this `deepwork` was started, as a command the user can run again (docs/evidence.md).

The approval answer tells the user what to type in a terminal. `deepwork approve` only works
the way DeepWork was started: a plugin runs `uvx deepwork==1.0.0 serve`, a checkout is served
with `uvx --from <clone> deepwork serve`, and neither puts `deepwork` on PATH. `launch_prefix`
reads the parent process's command line (uv runs the tool as its child) and gives back the
words before `serve`: `uvx --from /src/deepwork deepwork`, `uvx deepwork==1.0.0`, or `deepwork`
when it was not started through uv (or the parent cannot be read, as outside Linux).
"""

from __future__ import annotations

import os
import shlex
from pathlib import Path
from typing import Final

#: What `uvx` runs as (the `uvx` binary starts `uv tool uvx …`).
_UV_FORMS: Final = (["uv", "tool", "uvx"], ["uv", "tool", "run"], ["uvx"])


def parent_argv(pid: int | None = None) -> list[str]:
    """The command line of process `pid` (default: our parent); [] when it cannot be read."""
    try:
        raw = Path(f"/proc/{os.getppid() if pid is None else pid}/cmdline").read_bytes()
    except OSError:
        return []
    return [word.decode("utf-8", "replace") for word in raw.split(b"\0") if word]


def launch_prefix(parent: list[str]) -> str:
    """The command that starts this DeepWork, for `<prefix> approve …`, from the parent's argv."""
    if not parent or "serve" not in parent:
        return "deepwork"
    words = [Path(parent[0]).name, *parent[1 : parent.index("serve")]]
    for form in _UV_FORMS:
        if words[: len(form)] == form and len(words) > len(form):
            return shlex.join(["uvx", *words[len(form) :]])
    return "deepwork"
