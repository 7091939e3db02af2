"""What the `tools/check_*.py` scripts share: the repository, its version, the skill and tool
names every client must list, running a client with a bounded process, and the loop that runs
one check per client and prints PASS or FAIL (`run_checks`).

Both scripts import this module; neither imports the other's names (check_plugins runs the
checks of check_agents, which needs nothing from it).
"""

from __future__ import annotations

import argparse
import tempfile
import tomllib
from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager
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


#: One client to check: its name, its npm spec, how to install it into the cache (the folder of
#: its binaries) and the check (binaries, the stand-in endpoint's URL, a scratch folder -> what
#: passed, or `CheckFailed`).
ClientCheck = tuple[str, str, Callable[[Path], Path], Callable[[Path, str, Path], str]]


def run_checks(
    argv: list[str],
    description: str,
    prefix: str,
    endpoint: Callable[[], AbstractContextManager[str]],
    checks: Sequence[ClientCheck],
) -> int:
    """Each check against a local stand-in for the model endpoint, in a scratch folder of its
    own, printing `PASS`/`FAIL` per client; 1 when any failed. `--cache` is where npm installs."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--cache", type=Path, default=ROOT / ".nox" / "_plugin_clients")
    cache = parser.parse_args(argv).cache.resolve()
    failures = 0
    with endpoint() as base, tempfile.TemporaryDirectory(prefix=prefix) as folder:
        for name, spec, install, check in checks:
            scratch = Path(folder) / name
            scratch.mkdir()
            try:
                print(f"PASS {name} ({spec}): {check(install(cache), base, scratch)}")
            except CheckFailed as exc:
                failures += 1
                print(f"FAIL {name} ({spec}): {exc}")
    return 1 if failures else 0
