"""Doc spec files (docs/job-format.md, "Doc specs")."""

from __future__ import annotations

from pathlib import Path

import pytest
from deepwork_core.base.errors import DocSpecError
from deepwork_core.jobs.docspec import (
    DocSpecInvalidError,
    load_doc_spec,
    render_doc_spec_for_instructions,
)

GOOD = """\
---
name: Monthly report
description: A report for the leadership team.
target_audience: Managers
frequency: Monthly
path_patterns:
  - reports/*.md
quality_criteria:
  - name: Summary first
    description: Does it open with a three-line summary?
  - name: Sources
    description: Is every figure sourced?
---

# March report

Summary: revenue grew.
"""


def write(tmp_path: Path, text: str | bytes, name: str = "spec.md") -> Path:
    path = tmp_path / name
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8")
    return path


def problems_of(exc: pytest.ExceptionInfo[DocSpecInvalidError]) -> list[tuple[str, int | None]]:
    return [(problem.code, problem.line) for problem in exc.value.problems]


def test_valid_spec_loads_every_field(tmp_path: Path) -> None:
    path = write(tmp_path, GOOD)
    spec = load_doc_spec(path)
    assert spec.name == "Monthly report"
    assert spec.description == "A report for the leadership team."
    assert spec.target_audience == "Managers"
    assert spec.frequency == "Monthly"
    assert spec.path_patterns == ["reports/*.md"]
    assert [(c.name, c.description) for c in spec.quality_criteria] == [
        ("Summary first", "Does it open with a three-line summary?"),
        ("Sources", "Is every figure sourced?"),
    ]
    assert spec.example_document == "# March report\n\nSummary: revenue grew."
    assert spec.source == path


def test_minimal_spec_and_empty_body(tmp_path: Path) -> None:
    text = "---\nname: N\ndescription: D\nquality_criteria:\n  - {name: a, description: b}\n---\n"
    spec = load_doc_spec(write(tmp_path, text))
    assert spec.target_audience is None
    assert spec.frequency is None
    assert spec.path_patterns == []
    assert spec.example_document == ""


def test_unknown_key_is_rejected_with_its_line(tmp_path: Path) -> None:
    path = write(tmp_path, GOOD.replace("frequency: Monthly\n", "frequency: Monthly\nowner: me\n"))
    with pytest.raises(DocSpecInvalidError) as exc:
        load_doc_spec(path)
    assert exc.value.code == "doc_spec.invalid"
    assert problems_of(exc) == [("doc_spec.unknown_key", 6)]
    assert f"{path}:6" in str(exc.value)


def test_unknown_key_inside_a_criterion_is_rejected(tmp_path: Path) -> None:
    path = write(
        tmp_path, GOOD.replace("  - name: Sources\n", "  - name: Sources\n    weight: 2\n")
    )
    with pytest.raises(DocSpecInvalidError) as exc:
        load_doc_spec(path)
    assert problems_of(exc) == [("doc_spec.unknown_key", 12)]


def test_every_missing_key_is_reported_at_once(tmp_path: Path) -> None:
    path = write(tmp_path, "---\nname: Only a name\n---\nbody\n")
    with pytest.raises(DocSpecInvalidError) as exc:
        load_doc_spec(path)
    codes = sorted(problem.key or "" for problem in exc.value.problems)
    assert codes == ["description", "quality_criteria"]
    assert {problem.code for problem in exc.value.problems} == {"doc_spec.missing_key"}
    assert all(problem.file == path for problem in exc.value.problems)


@pytest.mark.parametrize(
    ("replacement", "line"),
    [
        ("quality_criteria: []\n", 8),
        ("quality_criteria: nope\n", 8),
    ],
)
def test_criteria_must_be_a_non_empty_list(tmp_path: Path, replacement: str, line: int) -> None:
    text = GOOD.split("quality_criteria:")[0] + replacement + "---\nbody\n"
    with pytest.raises(DocSpecInvalidError) as exc:
        load_doc_spec(write(tmp_path, text))
    assert problems_of(exc) == [("doc_spec.invalid_value", line)]


def test_criterion_needs_name_and_description(tmp_path: Path) -> None:
    text = "---\nname: N\ndescription: D\nquality_criteria:\n  - name: only\n---\n"
    with pytest.raises(DocSpecInvalidError) as exc:
        load_doc_spec(write(tmp_path, text))
    assert problems_of(exc) == [("doc_spec.missing_key", 5)]
    assert exc.value.problems[0].key == "quality_criteria.0.description"


@pytest.mark.parametrize(
    "text",
    [
        "no frontmatter at all\n",
        "",
        "---\nname: x\ndescription: never closed\n",
        "\n---\nname: x\n---\n",
    ],
)
def test_missing_frontmatter(tmp_path: Path, text: str) -> None:
    with pytest.raises(DocSpecInvalidError) as exc:
        load_doc_spec(write(tmp_path, text))
    assert exc.value.code == "doc_spec.no_frontmatter"
    assert exc.value.problems[0].line == 1


def test_yaml_syntax_error_names_the_file_line(tmp_path: Path) -> None:
    path = write(tmp_path, "---\nname: N\ndescription: [unclosed\n---\n")
    with pytest.raises(DocSpecInvalidError) as exc:
        load_doc_spec(path)
    assert exc.value.code == "doc_spec.yaml"
    assert str(path) in str(exc.value)
    assert "line 4" in str(exc.value) or "line 3" in str(exc.value)


def test_frontmatter_must_be_a_mapping(tmp_path: Path) -> None:
    with pytest.raises(DocSpecInvalidError) as exc:
        load_doc_spec(write(tmp_path, "---\n- a\n- b\n---\n"))
    assert exc.value.code == "doc_spec.invalid"


def test_alias_bomb_is_refused(tmp_path: Path) -> None:
    bomb = "---\na: &a [x, x, x, x, x, x, x, x, x, x]\n"
    for level in range(1, 9):
        refs = ", ".join([f"*{chr(96 + level)}"] * 10)
        bomb += f"{chr(97 + level)}: &{chr(97 + level)} [{refs}]\n"
    bomb += "---\n"
    with pytest.raises(DocSpecInvalidError) as exc:
        load_doc_spec(write(tmp_path, bomb))
    assert exc.value.code == "doc_spec.yaml"


def test_missing_and_binary_files(tmp_path: Path) -> None:
    with pytest.raises(DocSpecError) as missing:
        load_doc_spec(tmp_path / "absent.md")
    assert missing.value.code == "doc_spec.unreadable"
    with pytest.raises(DocSpecError) as binary:
        load_doc_spec(write(tmp_path, b"---\nname: \xff\xfe\n---\n"))
    assert binary.value.code == "doc_spec.unreadable"


def test_bom_and_crlf_are_accepted(tmp_path: Path) -> None:
    text = "\ufeff" + GOOD.replace("\n", "\r\n")
    spec = load_doc_spec(write(tmp_path, text.encode("utf-8")))
    assert spec.name == "Monthly report"
    assert "Summary: revenue grew." in spec.example_document


def test_render_for_instructions_has_everything(tmp_path: Path) -> None:
    rendered = render_doc_spec_for_instructions(load_doc_spec(write(tmp_path, GOOD)))
    for expected in [
        "Monthly report",
        "A report for the leadership team.",
        "Managers",
        "Monthly",
        "1. **Summary first**: Does it open with a three-line summary?",
        "2. **Sources**: Is every figure sourced?",
        "# March report",
        "Summary: revenue grew.",
    ]:
        assert expected in rendered


def test_render_fences_an_example_holding_backticks(tmp_path: Path) -> None:
    text = GOOD.replace("Summary: revenue grew.", "```python\nprint(1)\n```")
    rendered = render_doc_spec_for_instructions(load_doc_spec(write(tmp_path, text)))
    assert "````markdown\n# March report" in rendered
    assert rendered.rstrip().endswith("````")
