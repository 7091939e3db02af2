"""The release switch (docs/releasing.md): until the version is on PyPI the texts say how to run
DeepWork from a clone and never send anyone to PyPI, where `deepwork` is another program; the
release path turns them over to the PyPI form (issue 44)."""

from __future__ import annotations

import sys
import tomllib
from pathlib import Path
from types import ModuleType

REPO = Path(__file__).resolve().parents[3]
SKILL = Path("plugins/claude/skills/deepwork/SKILL.md")
SERVER = Path("plugins/claude/.mcp.json")
VERSION = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]["version"]

sys.path.insert(0, str(REPO / "tools"))
import release_check  # noqa: E402


def _flip(root: Path, released: bool) -> None:
    path = root / "pyproject.toml"
    text = path.read_text(encoding="utf-8")
    for value in ("true", "false"):
        text = text.replace(f"released = {value}", f"released = {str(released).lower()}")
    path.write_text(text, encoding="utf-8")


def _command_section(skill: str) -> str:
    section = skill[skill.index("## The `deepwork` command") :]
    return section[: section.index("\n## ", 1)]


def test_the_skill_says_how_to_run_from_a_clone_until_the_release(
    render_tool: ModuleType, repo_copy: Path
) -> None:
    _flip(repo_copy, released=False)
    before = render_tool.render(repo_copy)
    _flip(repo_copy, released=True)
    after = render_tool.render(repo_copy)

    unreleased, released = _command_section(before[SKILL]), _command_section(after[SKILL])
    flat = " ".join(unreleased.split())
    assert f"DeepWork {VERSION} is not on PyPI yet" in flat
    assert "uvx --from ~/deepwork deepwork jobs validate" in flat
    assert "belongs to another program" in flat
    assert "not on PyPI" not in released
    assert f"DeepWork {VERSION} from PyPI" in " ".join(released.split())
    # The plugins start the same pinned server either way, and no text is left unpinned.
    assert before[SERVER] == after[SERVER]
    assert render_tool.unpinned(before, VERSION) == []
    assert render_tool.unpinned(after, VERSION) == []


def test_the_version_tool_sets_the_switch_and_a_new_version_clears_it(
    version_tool: ModuleType, repo_copy: Path
) -> None:
    _flip(repo_copy, released=False)
    version_tool.mark_released(True, repo_copy)
    assert version_tool.released(repo_copy)
    files = [repo_copy / "pyproject.toml", *sorted(repo_copy.glob("packages/*/pyproject.toml"))]
    version_tool.set_version("7.8.9", files)
    assert not version_tool.released(repo_copy)


def test_a_release_is_refused_while_the_switch_is_off(repo_copy: Path) -> None:
    _flip(repo_copy, released=False)
    [problem] = release_check.switch_problems(repo_copy)
    assert "released is false" in problem
    _flip(repo_copy, released=True)
    assert release_check.switch_problems(repo_copy) == []


def test_the_readme_and_the_checkout_agree_with_the_switch(render_tool: ModuleType) -> None:
    readme = " ".join((REPO / "README.md").read_text(encoding="utf-8").split())
    skill = (REPO / SKILL).read_text(encoding="utf-8")
    if render_tool.released(REPO):
        assert "is not on PyPI yet" not in readme
        assert "not on PyPI" not in _command_section(skill)
    else:
        assert f"Version {VERSION} is not on PyPI yet" in readme
        assert "not on PyPI yet" in _command_section(skill)
    for page in ("README.md", *(p.relative_to(REPO) for p in (REPO / "docs").glob("*.md"))):
        text = (REPO / page).read_text(encoding="utf-8")
        assert "pip install deepwork" not in text.replace("pip install uv", ""), page
        assert "pip install 'deepwork" not in text, page
        assert "uvx deepwork serve" not in text, page
        assert "uvx --from 'deepwork" not in text, page
