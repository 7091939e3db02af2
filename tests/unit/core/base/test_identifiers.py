"""Names and paths from outside are checked before any file is touched (docs/job-format.md)."""

from __future__ import annotations

from pathlib import Path

import pytest
from deepwork_core.base.errors import (
    InvalidIdentifierError,
    InvalidTextError,
    PathOutsideProjectError,
)
from deepwork_core.base.identifiers import (
    MAX_TEXT_CHARS,
    SHOWN_CHARS,
    check_name,
    check_text,
    parse_optional_session_id,
    parse_session_id,
    resolve_inside,
    shown,
)
from deepwork_core.jobs.discovery import JobCatalog
from deepwork_core.jobs.errors import JobNotFoundError


@pytest.mark.parametrize("name", ["a", "job_1", "x9_y"])
def test_valid_names_pass(name: str) -> None:
    assert check_name(name, kind="job_name") == name


@pytest.mark.parametrize(
    "name", ["", "1job", "Job", "my-job", "../x", "/abs", "a b", "a\x00b", None, 3, ["a"]]
)
def test_invalid_names_are_rejected_with_the_kind_named(name: object) -> None:
    with pytest.raises(InvalidIdentifierError) as caught:
        check_name(name, kind="workflow_name")
    assert caught.value.code == "identifier.invalid"
    assert caught.value.agent_fixable
    assert "workflow_name" in str(caught.value)


@pytest.mark.parametrize("session_id", ["../../x", "abc", "a" * 65, "with space1", "", None])
def test_invalid_session_ids_are_rejected(session_id: object) -> None:
    with pytest.raises(InvalidIdentifierError):
        parse_session_id(session_id)


@pytest.mark.parametrize("session_id", ["abcdef", "A1_b-c" * 10, "x" * 64])
def test_a_valid_session_id_is_parsed_to_itself(session_id: str) -> None:
    assert parse_session_id(session_id) == session_id
    assert parse_optional_session_id(session_id) == session_id


def test_no_session_id_names_the_top_of_the_stack() -> None:
    assert parse_optional_session_id(None) is None
    with pytest.raises(InvalidIdentifierError):
        parse_optional_session_id("../x")


def test_rejected_values_are_clipped_in_messages(tmp_path: Path) -> None:
    huge = "A" * 100_000
    with pytest.raises(InvalidIdentifierError) as caught:
        check_name(huge, kind="job_name")
    assert len(str(caught.value)) < 400
    assert "100002 characters" in str(caught.value)

    # A long name that matches the pattern is echoed clipped by discovery too.
    with pytest.raises(JobNotFoundError) as not_found:
        JobCatalog.for_project(tmp_path).get("a" * 100_000)
    assert len(str(not_found.value)) < 400


def test_shown_keeps_short_values_whole() -> None:
    assert shown("abc") == "'abc'"
    assert len(shown("x" * 1000)) < SHOWN_CHARS + 30


def test_lone_surrogates_are_invalid_text() -> None:
    assert check_text("fine ✓", what="goal") == "fine ✓"
    assert check_text(None, what="notes") is None
    with pytest.raises(InvalidTextError) as caught:
        check_text("bad \udcff", what="goal")
    assert caught.value.code == "text.invalid"


@pytest.mark.parametrize("path", ["a.md", "sub/b.md", "sub/../a.md", "."])
def test_paths_inside_the_project_resolve(tmp_path: Path, path: str) -> None:
    root = tmp_path.resolve()
    assert resolve_inside(root, path).is_relative_to(root)


@pytest.mark.parametrize("path", ["../x", "/etc/passwd", "sub/../../x", "a\x00b"])
def test_paths_leaving_the_project_are_rejected(tmp_path: Path, path: str) -> None:
    with pytest.raises(PathOutsideProjectError) as caught:
        resolve_inside(tmp_path.resolve(), path, what="output")
    assert caught.value.code == "path.outside_project"


def test_a_symlink_pointing_outside_is_rejected(tmp_path: Path) -> None:
    root = tmp_path / "project"
    root.mkdir()
    (tmp_path / "secret.txt").write_text("s", encoding="utf-8")
    (root / "link.txt").symlink_to(tmp_path / "secret.txt")
    with pytest.raises(PathOutsideProjectError):
        resolve_inside(root.resolve(), "link.txt")


@pytest.mark.parametrize(
    "path",
    [
        "a/b/file.md",  # plain folders
        "a/./b//file.md",
        "missing/deeper/file.md",  # parts that do not exist are kept as they are
        "a/b/file.md/below",  # below a file
        "inner/file.md",  # through a folder link inside the project
        "a/inner-link.md",  # a file link inside the project
        "a/../a/b/file.md",
        "",
        ".",
    ],
)
def test_a_path_resolves_as_pathlib_resolves_it(tmp_path: Path, path: str) -> None:
    root = (tmp_path / "project").resolve()
    (root / "a" / "b").mkdir(parents=True)
    (root / "a" / "b" / "file.md").write_text("x", encoding="utf-8")
    (root / "inner").symlink_to(root / "a" / "b")
    (root / "a" / "inner-link.md").symlink_to(root / "a" / "b" / "file.md")
    assert resolve_inside(root, path) == (root / path).resolve()


def test_overlong_text_is_refused() -> None:
    assert check_text("x" * MAX_TEXT_CHARS, what="notes") is not None
    with pytest.raises(InvalidTextError) as caught:
        check_text("x" * (MAX_TEXT_CHARS + 1), what="notes")
    assert caught.value.code == "text.too_long"
    assert caught.value.agent_fixable


#: Where a session id comes in from outside: a tool's argument, a command's, a dashboard address.
SESSION_ID_EDGES = {
    "deepwork-mcp/src/deepwork_mcp/tools/workflows.py",
    "deepwork-mcp/src/deepwork_mcp/cli/team/approve.py",
    "deepwork-mcp/src/deepwork_mcp/cli/team/audit.py",
    "deepwork-mcp/src/deepwork_mcp/cli/log.py",
    "deepwork-mcp/src/deepwork_mcp/cli/report.py",
    "deepwork-mcp/src/deepwork_mcp/cli/store.py",
    "deepwork-mcp/src/deepwork_mcp/cli/receipts/write.py",
    "deepwork-mcp/src/deepwork_mcp/cli/headless/run.py",
    "deepwork-mcp/src/deepwork_mcp/cli/headless/wait.py",
    "deepwork-mcp/src/deepwork_mcp/dashboard/app.py",
}


def test_session_ids_are_parsed_only_where_they_come_in() -> None:
    """The layers below the edges take a `SessionId` and never check it again."""
    packages = Path(__file__).resolve().parents[4] / "packages"
    parsing = {
        str(path.relative_to(packages))
        for path in packages.rglob("*.py")
        if "parse_session_id(" in (text := path.read_text("utf-8"))
        or "parse_optional_session_id(" in text
    }
    definition = "deepwork-core/src/deepwork_core/base/identifiers.py"
    assert parsing - {definition} == SESSION_ID_EDGES
