"""Fixtures for the plugin tests: the scripts under tools/ loaded as modules."""

from __future__ import annotations

import importlib.util
import shutil
import sys
from pathlib import Path
from types import ModuleType

import pytest

REPO = Path(__file__).resolve().parents[3]


def _load(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"_tools_{name}", REPO / "tools" / f"{name}.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while the class is built
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="session")
def render_tool() -> ModuleType:
    return _load("render")


@pytest.fixture(scope="session")
def version_tool() -> ModuleType:
    return _load("version")


@pytest.fixture
def repo_copy(tmp_path: Path) -> Path:
    """The render inputs and the rendered files, copied so a test may change them."""
    for name in (
        "pyproject.toml",
        "platform",
        "plugins",
        ".claude-plugin",
        ".agents",
        ".cursor-plugin",
        ".github",
        "packages",
    ):
        source = REPO / name
        if source.is_dir():
            shutil.copytree(source, tmp_path / name, ignore=shutil.ignore_patterns("src"))
        else:
            shutil.copy2(source, tmp_path / name)
    # The one rendered folder inside a package source tree (the OpenCode files of the wheel).
    data = Path("packages/deepwork-mcp/src/deepwork_mcp/platform_files")
    shutil.copytree(REPO / data, tmp_path / data)
    return tmp_path
