"""Output validation (JOBS-REQ-001.5, docs/runtime.md)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from deepwork_core.base.errors import DeepWorkError
from deepwork_core.engine.outputs import validate_outputs
from deepwork_core.jobs.model import Step

STEP = Step.model_validate(
    {
        "id": "publish",
        "name": "Publish",
        "description": "d",
        "instructions_file": "steps/publish.md",
        "outputs": {
            "final": {"type": "file", "description": "final", "required": True},
            "extra": {"type": "file", "description": "extra", "required": False},
            "pages": {"type": "files", "description": "pages", "required": True},
            "assets": {"type": "files", "description": "assets", "required": False},
        },
        "reviews": [],
    }
)


@pytest.fixture
def root(tmp_path: Path) -> Path:
    project = tmp_path / "project"
    for name in ("final.md", "extra.md", "p1.md", "p2.md", "sub/inner.md"):
        (project / name).parent.mkdir(parents=True, exist_ok=True)
        (project / name).write_text(name)
    (tmp_path / "outside.md").write_text("secret")
    return project.resolve()


def check(root: Path, outputs: dict[str, object]) -> DeepWorkError:
    with pytest.raises(DeepWorkError) as caught:
        validate_outputs(root, [STEP], outputs)
    return caught.value


def test_valid_outputs_are_normalised_and_grouped_by_step(root: Path) -> None:
    result = validate_outputs(
        root, [STEP], {"final": "./final.md", "pages": ["p1.md", "sub/../p2.md"]}
    )
    assert result.by_step == {"publish": {"final": "final.md", "pages": ["p1.md", "p2.md"]}}
    assert result.merged == {"final": "final.md", "pages": ["p1.md", "p2.md"]}


@pytest.mark.req("JOBS-REQ-001.5.1")
def test_unknown_keys_are_rejected_listing_them_and_the_declared_names(root: Path) -> None:
    error = check(root, {"final": "final.md", "pages": ["p1.md"], "bogus": "x", "other": "y"})
    assert error.code == "outputs.unknown"
    assert "bogus, other" in error.message
    assert "assets, extra, final, pages" in error.message


@pytest.mark.req("JOBS-REQ-001.5.2")
def test_missing_required_outputs_are_rejected_listing_them(root: Path) -> None:
    error = check(root, {"extra": "extra.md"})
    assert error.code == "outputs.missing"
    assert "final, pages" in error.message


@pytest.mark.req("JOBS-REQ-001.5.3")
def test_optional_outputs_may_be_omitted(root: Path) -> None:
    result = validate_outputs(root, [STEP], {"final": "final.md", "pages": ["p1.md"]})
    assert set(result.merged) == {"final", "pages"}


@pytest.mark.req("JOBS-REQ-001.5.4")
@pytest.mark.parametrize("value", [["final.md"], 3, None, ""])
def test_file_output_must_be_a_single_string(root: Path, value: object) -> None:
    error = check(root, {"final": value, "pages": ["p1.md"]})
    assert error.code == "outputs.wrong_type"
    assert "'final'" in error.message
    assert "type 'file'" in error.message


@pytest.mark.req("JOBS-REQ-001.5.5")
def test_file_output_must_exist(root: Path) -> None:
    error = check(root, {"final": "nope.md", "pages": ["p1.md"]})
    assert error.code == "outputs.file_not_found"
    assert "nope.md" in error.message


@pytest.mark.req("JOBS-REQ-001.5.6")
@pytest.mark.parametrize("value", ["p1.md", {"a": "p1.md"}, 7])
def test_files_output_must_be_a_list(root: Path, value: object) -> None:
    error = check(root, {"final": "final.md", "pages": value})
    assert error.code == "outputs.wrong_type"
    assert "type 'files'" in error.message


@pytest.mark.req("JOBS-REQ-001.5.7")
@pytest.mark.parametrize("element", [1, None, ["p1.md"], ""])
def test_files_output_elements_must_be_strings(root: Path, element: object) -> None:
    error = check(root, {"final": "final.md", "pages": ["p1.md", element]})
    assert error.code == "outputs.wrong_type"
    assert "every element" in error.message


@pytest.mark.req("JOBS-REQ-001.5.8")
def test_every_files_element_must_exist(root: Path) -> None:
    error = check(root, {"final": "final.md", "pages": ["p1.md", "missing.md"]})
    assert error.code == "outputs.file_not_found"
    assert "missing.md" in error.message


@pytest.mark.parametrize("target", ["sub", ".", "pipe.md"])
def test_outputs_that_are_not_regular_files_are_rejected(root: Path, target: str) -> None:
    os.mkfifo(root / "pipe.md")
    error = check(root, {"final": target, "pages": ["p1.md"]})
    assert error.code == "outputs.not_a_file"
    assert repr(target) in error.message
    error = check(root, {"final": "final.md", "pages": ["p1.md", target]})
    assert error.code == "outputs.not_a_file"


@pytest.mark.parametrize("path", ["a" * 100_000, "a/" * 3000 + "x", "\u00fc" * 300])
def test_names_the_os_refuses_are_not_found_not_a_crash(root: Path, path: str) -> None:
    error = check(root, {"final": path, "pages": ["p1.md"]})
    assert error.code == "outputs.file_not_found"
    assert len(error.message) < 1000  # the path is not echoed back whole


def test_a_path_with_a_lone_surrogate_is_invalid_text(root: Path) -> None:
    error = check(root, {"final": "\udcff.md", "pages": ["p1.md"]})
    assert error.code == "text.invalid"


def test_required_files_output_cannot_be_an_empty_list(root: Path) -> None:
    error = check(root, {"final": "final.md", "pages": []})
    assert error.code == "outputs.empty_list"


def test_optional_files_output_may_be_an_empty_list(root: Path) -> None:
    result = validate_outputs(root, [STEP], {"final": "final.md", "pages": ["p1.md"], "assets": []})
    assert result.merged["assets"] == []


@pytest.mark.parametrize("path", ["../outside.md", "/etc/passwd", "sub/../../outside.md"])
def test_paths_outside_the_project_are_rejected(root: Path, path: str) -> None:
    error = check(root, {"final": path, "pages": ["p1.md"]})
    assert error.code == "path.outside_project"


def test_symlink_pointing_outside_is_rejected(root: Path) -> None:
    (root / "link.md").symlink_to(root.parent / "outside.md")
    error = check(root, {"final": "final.md", "pages": ["p1.md", "link.md"]})
    assert error.code == "path.outside_project"


def test_symlink_inside_the_project_keeps_its_own_name(root: Path) -> None:
    (root / "alias.md").symlink_to(root / "final.md")
    result = validate_outputs(root, [STEP], {"final": "alias.md", "pages": ["p1.md"]})
    assert result.merged["final"] == "alias.md"


def test_absolute_path_inside_the_project_is_made_relative(root: Path) -> None:
    result = validate_outputs(root, [STEP], {"final": str(root / "final.md"), "pages": ["p1.md"]})
    assert result.merged["final"] == "final.md"


def test_every_problem_is_reported_at_once(root: Path) -> None:
    error = check(root, {"bogus": "x", "final": "nope.md", "pages": []})
    # The most serious problem gives the code; each problem keeps its own.
    assert error.code == "outputs.file_not_found"
    assert [p.code for p in error.problems] == [
        "outputs.file_not_found",
        "outputs.empty_list",
        "outputs.unknown",
    ]
    for fragment in ("bogus", "nope.md", "at least one file"):
        assert fragment in error.message


def test_a_path_outside_the_project_outranks_a_missing_output(root: Path) -> None:
    error = check(root, {"pages": ["../elsewhere.md"]})
    assert error.code == "path.outside_project"
    assert [p.code for p in error.problems] == ["path.outside_project", "outputs.missing"]
    assert error.message.splitlines()[1].startswith("- path.outside_project: ")


def test_outputs_of_a_concurrent_group_are_checked_against_their_own_step(root: Path) -> None:
    other = Step.model_validate(
        {
            "id": "side",
            "name": "Side",
            "description": "d",
            "instructions_file": "steps/side.md",
            "outputs": {"note": {"type": "file", "description": "n", "required": True}},
            "reviews": [],
        }
    )
    result = validate_outputs(
        root, [STEP, other], {"final": "final.md", "pages": ["p1.md"], "note": "extra.md"}
    )
    assert result.by_step == {
        "publish": {"final": "final.md", "pages": ["p1.md"]},
        "side": {"note": "extra.md"},
    }
    error = check_group(root, [STEP, other], {"final": "final.md", "pages": ["p1.md"]})
    assert error.code == "outputs.missing"
    assert "note" in error.message


def check_group(root: Path, steps: list[Step], outputs: dict[str, object]) -> DeepWorkError:
    with pytest.raises(DeepWorkError) as caught:
        validate_outputs(root, steps, outputs)
    return caught.value
