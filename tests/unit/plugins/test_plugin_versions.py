"""One version everywhere: pyprojects, sibling pins, manifests and every pinned `uvx` call."""

from __future__ import annotations

import json
import re
import tomllib
from pathlib import Path
from types import ModuleType

import pytest

REPO = Path(__file__).resolve().parents[3]


def _project(path: Path) -> dict[str, object]:
    data: dict[str, object] = tomllib.loads(path.read_text(encoding="utf-8"))["project"]
    return data


def _json(relative: str) -> dict[str, object]:
    data: dict[str, object] = json.loads((REPO / relative).read_text(encoding="utf-8"))
    return data


def _versions_found(root: Path) -> dict[str, str]:
    """Every place a version is written -> the version written there."""
    found: dict[str, str] = {}
    for pyproject in [root / "pyproject.toml", *sorted(root.glob("packages/*/pyproject.toml"))]:
        name = pyproject.relative_to(root).as_posix()
        project = _project(pyproject)
        found[name] = str(project["version"])
        for dependency in project.get("dependencies", []):  # type: ignore[attr-defined]
            pinned = re.fullmatch(r"(deepwork[a-z-]*)==(.+)", dependency)
            if pinned:
                found[f"{name} pin {pinned[1]}"] = pinned[2]
            else:
                assert not dependency.startswith("deepwork"), f"{name}: unpinned {dependency}"
    return found


def _uvx_pins() -> dict[str, str]:
    pins: dict[str, str] = {}
    for relative in (
        "plugins/claude/.mcp.json",
        "plugins/gemini/gemini-extension.json",
        "plugins/claude/hooks/hooks.json",
        "plugins/gemini/hooks/hooks.json",
        "plugins/codex/.mcp.json",
        "plugins/codex/hooks/hooks.json",
        "plugins/copilot/.mcp.json",
        "plugins/cursor/mcp.json",
        "plugins/opencode/opencode.json",
    ):
        text = (REPO / relative).read_text(encoding="utf-8")
        for number, version in enumerate(re.findall(r"deepwork==([^\s\"]+)", text)):
            pins[f"{relative} uvx pin #{number}"] = version
    return pins


def test_every_version_equals_the_root_version() -> None:
    root = str(_project(REPO / "pyproject.toml")["version"])
    found = _versions_found(REPO)
    found["plugin.json"] = str(_json("plugins/claude/.claude-plugin/plugin.json")["version"])
    found["gemini-extension.json"] = str(_json("plugins/gemini/gemini-extension.json")["version"])
    pins = _uvx_pins()
    assert len(pins) >= 12  # six servers, post-commit hooks of Claude, Gemini and Codex
    found.update(pins)
    assert {place: v for place, v in found.items() if v != root} == {}
    assert len([p for p in found if " pin deepwork-" in p]) >= 5  # root 3 + members' siblings


def test_the_servers_are_started_from_the_pinned_package() -> None:
    root = str(_project(REPO / "pyproject.toml")["version"])
    claude = _json("plugins/claude/.mcp.json")["mcpServers"]["deepwork"]  # type: ignore[index]
    gemini = _json("plugins/gemini/gemini-extension.json")["mcpServers"]["deepwork"]  # type: ignore[index]
    assert claude == {
        "command": "uvx",
        "args": [
            f"deepwork=={root}",
            "serve",
            "--external-runner",
            "claude",
            "--platform",
            "claude",
        ],
    }
    assert gemini["command"] == "uvx"
    assert gemini["args"] == [f"deepwork=={root}", "serve", "--platform", "gemini"]


def test_the_marketplace_has_no_plugin_version_to_drift() -> None:
    marketplace = _json(".claude-plugin/marketplace.json")
    assert "version" not in marketplace
    plugins = marketplace["plugins"]
    assert isinstance(plugins, list)
    assert [p["source"] for p in plugins] == ["./plugins/claude"]
    assert all("version" not in p for p in plugins)


def test_version_tool_rewrites_versions_and_pins(version_tool: ModuleType, repo_copy: Path) -> None:
    files = [repo_copy / "pyproject.toml", *sorted(repo_copy.glob("packages/*/pyproject.toml"))]
    version_tool.set_version("7.8.9", files)
    assert set(_versions_found(repo_copy).values()) == {"7.8.9"}
    assert "fastmcp>=4.1.2,<4.2" in (repo_copy / "packages/deepwork-mcp/pyproject.toml").read_text(
        encoding="utf-8"
    )


def test_version_tool_refuses_a_non_semver_version(
    version_tool: ModuleType, repo_copy: Path
) -> None:
    with pytest.raises(ValueError, match=r"1\.2\.3"):
        version_tool.set_version("1.0", [repo_copy / "pyproject.toml"])


def test_the_readme_names_the_current_version() -> None:
    root = str(_project(REPO / "pyproject.toml")["version"])
    named = re.findall(r"deepwork==([0-9][^\s`]*)", (REPO / "README.md").read_text("utf-8"))
    assert named, "README.md shows how to run the pinned server"
    assert set(named) == {root}
