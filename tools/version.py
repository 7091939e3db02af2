"""Show or change the project version in one command.

    python tools/version.py            # print the version (root pyproject.toml)
    python tools/version.py set 1.2.3  # rewrite every pyproject version and deepwork-* pin

After `set`, run `uv lock` and `nox -s render` so the lock file and the plugin manifests follow.
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


def current() -> str:
    """The version in the root pyproject.toml: the one version source."""
    data = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    return str(data["project"]["version"])


def set_version(version: str, files: list[Path] = PYPROJECTS) -> list[Path]:
    """Write `version` into each file's `[project].version` and its deepwork-* `==` pins."""
    if not SEMVER.fullmatch(version):
        raise ValueError(f"version must look like 1.2.3 (plugin manifests need semver): {version}")
    for path in files:
        text = path.read_text(encoding="utf-8")
        text = VERSION_LINE.sub(f'version = "{version}"', text, count=1)
        text = PIN.sub(rf'"\1=={version}"', text)
        path.write_text(text, encoding="utf-8")
    return files


def main(argv: list[str]) -> int:
    if not argv:
        print(current())
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
