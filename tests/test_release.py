"""The release path: versions agree, the CHANGELOG has the entry, the workflow publishes right."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent
WORKFLOW = ROOT / ".github" / "workflows" / "release.yml"

sys.path.insert(0, str(ROOT / "tools"))
import release_check  # noqa: E402


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """A copy of every file the version checks read."""
    for relative in ("pyproject.toml", "uv.lock", "CHANGELOG.md"):
        shutil.copyfile(ROOT / relative, tmp_path / relative)
    for pyproject in ROOT.glob("packages/*/pyproject.toml"):
        target = tmp_path / pyproject.relative_to(ROOT)
        target.parent.mkdir(parents=True)
        shutil.copyfile(pyproject, target)
    for folder in release_check.RENDERED:
        shutil.copytree(ROOT / folder, tmp_path / folder)
    return tmp_path


def _replace(path: Path, old: str, new: str) -> None:
    text = path.read_text(encoding="utf-8")
    assert old in text, f"{old!r} not in {path}"
    path.write_text(text.replace(old, new, 1), encoding="utf-8")


def test_this_checkout_is_ready_to_release() -> None:
    assert release_check.release_problems() == []
    version = release_check.project_version()
    assert release_check.release_problems(tag=f"v{version}") == []


def test_a_package_version_that_differs_is_named(tree: Path) -> None:
    version = release_check.project_version(tree)
    _replace(tree / "packages/deepwork-review/pyproject.toml", f'"{version}"', '"9.9.9"')
    problems = release_check.version_problems(tree)
    assert any(
        p.startswith("packages/deepwork-review/pyproject.toml: version 9.9.9") for p in problems
    )


def test_a_stale_pin_in_a_rendered_plugin_file_is_named(tree: Path) -> None:
    version = release_check.project_version(tree)
    _replace(tree / "plugins/claude/.mcp.json", f"deepwork=={version}", "deepwork==0.0.1")
    problems = release_check.version_problems(tree)
    assert problems == [f"plugins/claude/.mcp.json: pins deepwork==0.0.1, expected =={version}"]


def test_a_manifest_and_the_lock_must_follow_the_version(tree: Path) -> None:
    version = release_check.project_version(tree)
    _replace(tree / "pyproject.toml", f'version = "{version}"', 'version = "7.0.0"')
    problems = "\n".join(release_check.version_problems(tree))
    assert "plugins/gemini/gemini-extension.json: version" in problems
    assert "uv.lock: deepwork-core" in problems


def test_the_changelog_needs_a_non_empty_entry_for_the_version(tree: Path) -> None:
    version = release_check.project_version(tree)
    assert release_check.changelog_section(version, tree)
    _replace(tree / "CHANGELOG.md", f"## {version}", "## 0.0.0")
    assert f"CHANGELOG.md: no `## {version}` section" in release_check.release_problems(tree)
    (tree / "CHANGELOG.md").write_text(f"# Changelog\n\n## {version}\n\n## 0.9.0\nOld.\n")
    assert release_check.changelog_section(version, tree) == ""
    assert f"CHANGELOG.md: the `## {version}` section is empty" in (
        release_check.release_problems(tree)
    )


def test_a_tag_must_name_the_version() -> None:
    version = release_check.project_version()
    assert release_check.release_problems(tag="v0.0.1") == [
        f"tag v0.0.1 does not name version {version} (expected v{version})"
    ]


def test_notes_print_the_changelog_section(capsys: pytest.CaptureFixture[str]) -> None:
    assert release_check.main(["notes"]) == 0
    assert capsys.readouterr().out.strip() == release_check.changelog_section(
        release_check.project_version()
    )
    assert release_check.main(["notes", "0.0.0"]) == 1


def _workflow() -> dict[Any, Any]:
    data = yaml.safe_load(WORKFLOW.read_text(encoding="utf-8"))
    assert isinstance(data, dict)
    return data


def _runs(job: dict[str, Any]) -> str:
    return "\n".join(str(step.get("run", "")) for step in job["steps"])


def _uses(job: dict[str, Any]) -> list[str]:
    return [str(step["uses"]).split("@")[0] for step in job["steps"] if "uses" in step]


def test_the_workflow_runs_on_version_tags_only() -> None:
    data = _workflow()
    triggers = data[True] if True in data else data["on"]  # YAML 1.1 reads `on` as true
    assert triggers == {"push": {"tags": ["v*"]}}
    assert data["permissions"] == {"contents": "read"}


def test_the_workflow_checks_builds_publishes_and_attaches_in_order() -> None:
    jobs = _workflow()["jobs"]
    check, build, pypi, release = jobs["check"], jobs["build"], jobs["pypi"], jobs["github-release"]
    assert "uv run nox\n" in _runs(check) + "\n"
    assert "uv run nox -s release_check" in _runs(check)
    assert (build["needs"], pypi["needs"], release["needs"]) == ("check", "build", "pypi")
    assert "uv build --all-packages --no-sources" in _runs(build)
    assert pypi["permissions"] == {"id-token": "write"}
    assert "pypa/gh-action-pypi-publish" in _uses(pypi)
    assert release["permissions"] == {"contents": "write"}
    assert "dist/*.whl" in _runs(release)
    assert "release_check.py notes" in _runs(release)
