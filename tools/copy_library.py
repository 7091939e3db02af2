"""Copy the library (`library/jobs/`, `library/calibration/`) into the deepwork-mcp package,
or check the copy.

`deepwork jobs add` (docs/job-library.md) reads the job library from
`packages/deepwork-mcp/src/deepwork_mcp/library_jobs/`, and `deepwork calibrate`
(docs/quality-gate.md) its cases from `.../library_calibration/`, so that both work from an
installed wheel. Those folders are generated from `library/`, which stays the one place to edit:

    python tools/copy_library.py write   # make the package copy identical to library/jobs/
    python tools/copy_library.py check   # exit 1 listing every file that differs

The test suite runs the same comparison (tests/unit/mcp/cli/test_jobs_add.py).
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SOURCE = ROOT / "library" / "jobs"
PACKAGE_COPY = ROOT / "packages" / "deepwork-mcp" / "src" / "deepwork_mcp" / "library_jobs"
#: Each library folder and its copy in the package.
COPIES = (
    (SOURCE, PACKAGE_COPY),
    (ROOT / "library" / "calibration", PACKAGE_COPY.with_name("library_calibration")),
)


def _files(root: Path) -> dict[str, bytes]:
    if not root.is_dir():
        return {}
    return {
        path.relative_to(root).as_posix(): path.read_bytes()
        for path in sorted(root.rglob("*"))
        if path.is_file() and "__pycache__" not in path.parts
    }


def differences(source: Path = SOURCE, copy: Path = PACKAGE_COPY) -> list[str]:
    """Every file that is missing from, extra in, or different in the copy."""
    want, have = _files(source), _files(copy)
    found = [f"missing: {name}" for name in sorted(want.keys() - have.keys())]
    found += [f"extra: {name}" for name in sorted(have.keys() - want.keys())]
    found += [
        f"stale: {name}" for name in sorted(want.keys() & have.keys()) if want[name] != have[name]
    ]
    return found


def write(source: Path = SOURCE, copy: Path = PACKAGE_COPY) -> None:
    """Replace the copy with the library as it is now."""
    if copy.exists():
        shutil.rmtree(copy)
    shutil.copytree(source, copy, ignore=shutil.ignore_patterns("__pycache__"))


def main(argv: list[str]) -> int:
    if argv == ["write"]:
        for source, copy in COPIES:
            write(source, copy)
        return 0
    if argv == ["check"]:
        problems = [
            f"{copy.name}/ {problem}"
            for source, copy in COPIES
            for problem in differences(source, copy)
        ]
        for problem in problems:
            print(problem)
        if problems:
            print("the package copy of the library is out of date: run tools/copy_library.py write")
        return 1 if problems else 0
    print(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
