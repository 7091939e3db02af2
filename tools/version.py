"""Show or change the project version in one command.

    python tools/version.py            # print the version and whether it is released
    python tools/version.py set 1.2.3  # rewrite every pyproject version and deepwork-* pin
    python tools/version.py release    # mark the version as published on PyPI

`set` also marks the new version as not released (`[tool.deepwork] released = false` in the root
pyproject.toml): the rendered skills then say how to run DeepWork from a clone. `release` flips
it when the release is made (docs/releasing.md). After either, run `uv lock` (after `set`) and
`nox -s render` so the lock file, the plugin manifests and the skills follow.
"""

from __future__ import annotations

import re
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PYPROJECTS = [ROOT / "pyproject.toml", *sorted(ROOT.glob("packages/*/pyproject.toml"))]
SEMVER = re.compile(r"\d+\.\d+\.\d+")
# `version = "…"` at the start of a line (only [project] has one) and the exact sibling pins.
VERSION_LINE = re.compile(r'^version = "[^"]*"', re.MULTILINE)
PIN = re.compile(r'"(deepwork(?:-[a-z]+)?(?:\[[a-z,]+\])?)==[^"]*"')
# `released = …` under `[tool.deepwork]` (the only `released` key of the root pyproject.toml).
RELEASED_LINE = re.compile(r"^released = (true|false)$", re.MULTILINE)


def current() -> str:
    """The version in the root pyproject.toml: the one version source."""
    data = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    return str(data["project"]["version"])


def released(root: Path = ROOT) -> bool:
    """Whether the version of the root pyproject.toml is published (`[tool.deepwork] released`)."""
    data = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))
    return bool(data.get("tool", {}).get("deepwork", {}).get("released", False))


def mark_released(value: bool, root: Path = ROOT) -> Path:
    """Write `[tool.deepwork] released = value` into the root pyproject.toml."""
    path = root / "pyproject.toml"
    text = path.read_text(encoding="utf-8")
    if not RELEASED_LINE.search(text):
        raise ValueError(f"{path}: no `released = true|false` line under [tool.deepwork]")
    path.write_text(RELEASED_LINE.sub(f"released = {str(value).lower()}", text, count=1), "utf-8")
    return path


def set_version(version: str, files: list[Path] = PYPROJECTS) -> list[Path]:
    """Write `version` into each file's `[project].version` and its deepwork-* `==` pins, and mark
    it as not released yet."""
    if not SEMVER.fullmatch(version):
        raise ValueError(f"version must look like 1.2.3 (plugin manifests need semver): {version}")
    for path in files:
        text = path.read_text(encoding="utf-8")
        text = VERSION_LINE.sub(f'version = "{version}"', text, count=1)
        text = PIN.sub(rf'"\1=={version}"', text)
        text = RELEASED_LINE.sub("released = false", text, count=1)
        path.write_text(text, encoding="utf-8")
    return files


def main(argv: list[str]) -> int:
    if not argv:
        print(f"{current()} ({'released' if released() else 'not released yet'})")
        return 0
    if argv == ["release"]:
        print(f"updated {mark_released(True).relative_to(ROOT)}: {current()} is released")
        print("next: nox -s render")
        return 0
    if len(argv) == 2 and argv[0] == "set":
        for path in set_version(argv[1]):
            print(f"updated {path.relative_to(ROOT)}")
        print("next: uv lock && nox -s render")
        return 0
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
