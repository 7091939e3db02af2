"""Root URIs to project folders (the stdio behaviour is in tests/integration/test_navigation.py)."""

from __future__ import annotations

from pathlib import Path

from deepwork_mcp.roots import ProjectRoot, Projects, root_folder


def test_only_local_existing_folders_count(tmp_path: Path) -> None:
    (tmp_path / "with space").mkdir()
    (tmp_path / "file.txt").write_text("x")
    assert root_folder(tmp_path.as_uri()) == tmp_path.resolve()
    assert root_folder((tmp_path / "with space").as_uri()) == (tmp_path / "with space").resolve()
    assert root_folder((tmp_path / "file.txt").as_uri()) is None
    assert root_folder((tmp_path / "missing").as_uri()) is None
    assert root_folder("https://example.com/repo") is None
    assert root_folder("file://otherhost/srv/x") is None


async def test_a_fixed_folder_wins_and_the_fallback_serves_until_asked(tmp_path: Path) -> None:
    fixed = ProjectRoot(fixed=tmp_path, fallback=Path("/"))
    assert await fixed.resolve(None) == tmp_path.resolve()
    following = ProjectRoot(fixed=None, fallback=tmp_path)
    assert following.follows_client
    assert await following.resolve(None) == tmp_path.resolve()


def test_projects_make_one_value_per_folder(tmp_path: Path) -> None:
    made: list[Path] = []

    def make(folder: Path) -> str:
        made.append(folder)
        return folder.name

    projects = Projects(ProjectRoot(fixed=None, fallback=tmp_path / "a"), make)
    assert projects.get() == "a"
    assert projects.get() == "a"
    assert projects.get(tmp_path / "b") == "b"
    assert made == [tmp_path / "a", tmp_path / "b"]
