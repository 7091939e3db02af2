"""Fixtures shared by every test suite."""

from __future__ import annotations

from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="session")
def corpus_dir() -> Path:
    """Real DeepWork 0.9.1 user files (`<repo>/../shared/corpus/deepwork-0.9.1`), read in place."""
    path = REPO_ROOT.parent / "shared" / "corpus" / "deepwork-0.9.1"
    if not (path / "INDEX.md").is_file():
        pytest.fail(f"the shared corpus is missing: expected {path}/INDEX.md")
    return path
