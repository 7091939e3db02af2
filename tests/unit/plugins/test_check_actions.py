"""tools/check_actions.py, which `nox -s workflows` runs: the repository's action.yml and
.pre-commit-hooks.yaml pass, and a broken copy of either fails, naming what is wrong."""

from __future__ import annotations

import importlib.util
import shutil
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture(scope="module")
def checker() -> ModuleType:
    spec = importlib.util.spec_from_file_location("check_actions", ROOT / "tools/check_actions.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("check_actions", module)
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def copy(tmp_path: Path) -> Path:
    for name in ("action.yml", ".pre-commit-hooks.yaml"):
        shutil.copy(ROOT / name, tmp_path / name)
    return tmp_path


def test_the_repository_files_pass(checker: ModuleType) -> None:
    assert checker.check(ROOT) == []


@pytest.mark.parametrize(
    ("name", "old", "new", "expected"),
    [
        ("action.yml", "using: composite", "using: node20", "runs/using"),
        ("action.yml", "  rereview:\n    description:", "  rereview:\n    describe:", "inputs/"),
        ("action.yml", 'deepwork "${args[@]}"', "true", "does not run"),
        (".pre-commit-hooks.yaml", "language: python", "language: pyhton", "0/language"),
        (".pre-commit-hooks.yaml", "pass_filenames: false", "pass_filenames: no-thanks", "0/pass"),
        (".pre-commit-hooks.yaml", "  entry: deepwork verify\n", "", "'entry' is a required"),
    ],
)
def test_a_broken_file_fails(
    checker: ModuleType, copy: Path, name: str, old: str, new: str, expected: str
) -> None:
    path = copy / name
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new))
    failures = checker.check(copy)
    assert failures
    assert all(f.startswith(f"{name}: ") for f in failures), failures
    assert any(expected in f for f in failures), failures
