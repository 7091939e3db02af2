"""What `tools/check_plugins.py` and `tools/check_agents.py` share: the repository, its version,
the skill and tool names every client must list, and running a client with a bounded process.

Both scripts import this module; neither imports the other's names (check_plugins runs the
checks of check_agents, which needs nothing from it).
"""

from __future__ import annotations

import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from deepwork_core.base.process import Completed, run_bounded
from release_check import SERVER_TOOLS  # a sibling script: tools/ is sys.path[0]

ROOT = Path(__file__).resolve().parent.parent
VERSION: str = tomllib.loads((ROOT / "pyproject.toml").read_text("utf-8"))["project"]["version"]
TOOLS = SERVER_TOOLS


def _skill_names() -> tuple[str, ...]:
    """Every skill `platform/plugin.toml` declares, under its Claude name: the `[[skills]]`, then
    one per `[[entry_points]]` line (an entry point of a standard job)."""
    plugin = tomllib.loads((ROOT / "platform" / "plugin.toml").read_text("utf-8"))
    return tuple(s["name"] for s in [*plugin["skills"], *plugin.get("entry_points", [])])


CLAUDE_SKILLS = _skill_names()
# Gemini and the four newer clients: the same skills, `_` spelled `-` (tools/render.py).
GEMINI_SKILLS = tuple(name.replace("_", "-") for name in CLAUDE_SKILLS)


class CheckFailed(Exception):
    """One check's failure, with the message shown to the developer."""


def indent(text: str) -> str:
    return "\n".join(f"       {line}" for line in text.strip().splitlines())


def tail(result: Completed, lines: int = 25) -> str:
    out = (result.stdout.strip() + "\n" + result.stderr.strip()).strip().splitlines()
    return "\n".join(out[-lines:]) or "(no output)"


def run(
    argv: list[str],
    env: Mapping[str, str],
    cwd: Path = ROOT,
    timeout: float = 120,
    input_text: str | None = None,
) -> Completed:
    try:
        return run_bounded(argv, cwd=cwd, timeout=timeout, env=env, input_text=input_text)
    except FileNotFoundError as exc:
        raise CheckFailed(f"cannot run {argv[0]}: {exc}") from None


def ok(argv: list[str], env: Mapping[str, str], **kwargs: Any) -> Completed:
    result = run(argv, env, **kwargs)
    if result.returncode != 0:
        raise CheckFailed(f"`{' '.join(argv)}` exited {result.returncode}:\n{tail(result)}")
    return result
