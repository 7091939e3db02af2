"""`.deepreview` parsing: files in the layout users have, and every problem with its line."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from deepwork_review.deepreview import Strategy, parse_deepreview

from tests.fixtures.corpus import corpus_root

# Per source: rule file origin -> number of rules.
CORPUS_FILES = {
    "compat": {"project": 7, "rule_keeper": 1, "toolkit": 1},
    "shared": {
        "root": 10,
        "src__deepwork__standard_jobs__deepwork_jobs": 1,
        "src__deepwork__standard_jobs__deepwork_reviews": 1,
    },
}
# Instruction files the root files name, which live next to them in their projects.
INSTRUCTION_FILES = {
    "compat": ("prompt_style", "missing_rules"),
    "shared": ("prompt_best_practices", "suggest_new_reviews"),
}
CORPUS_CASES = [
    pytest.param(source, origin, count, id=f"{source}-{origin}")
    for source, files in CORPUS_FILES.items()
    for origin, count in sorted(files.items())
]


def _write(root: Path, relative: str, text: str) -> None:
    path = root / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def _copy_rule_file(source: str, origin: str, project: Path) -> None:
    shutil.copyfile(
        corpus_root(source) / "deepreview" / origin / ".deepreview", project / ".deepreview"
    )
    for name in INSTRUCTION_FILES[source]:
        _write(project, f".deepwork/review/{name}.md", f"Instructions of {name}.\n")


@pytest.mark.parametrize(("source", "origin", "rule_count"), CORPUS_CASES)
def test_corpus_deepreview_files_parse(
    tmp_path: Path, source: str, origin: str, rule_count: int
) -> None:
    _copy_rule_file(source, origin, tmp_path)

    parsed = parse_deepreview(tmp_path.resolve(), ".deepreview")

    assert parsed.problems == ()
    assert len(parsed.rules) == rule_count
    for rule in parsed.rules:
        assert rule.instructions.strip()
        assert rule.line >= 1
        assert rule.defining_file == f".deepreview:{rule.line}"


def test_compat_project_file_details(tmp_path: Path) -> None:
    _copy_rule_file("compat", "project", tmp_path)

    rules = {rule.name: rule for rule in parse_deepreview(tmp_path, ".deepreview").rules}

    assert rules["prompt_style"].line == 3  # after the two comment lines
    assert rules["prompt_style"].instructions == "Instructions of prompt_style.\n"
    assert rules["prompt_style"].instructions_file == ".deepwork/review/prompt_style.md"
    assert rules["missing_rules"].strategy is Strategy.MATCHES_TOGETHER
    coverage = rules["spec_coverage"]
    assert coverage.strategy is Strategy.ALL_CHANGED_FILES
    assert coverage.agent_for("claude") == "spec-checker"
    assert coverage.agent_for("gemini") is None
    guide = rules["user_guide_current"]
    assert guide.additional_context.unchanged_matching_files is True
    assert guide.additional_context.all_changed_filenames is False
    assert guide.exclude == ("**/__pycache__/**",)
    assert rules["changelog_entry"].additional_context.all_changed_filenames is True
    assert rules["python_conventions"].exclude == ("**/migrations/**", "build/**")


def test_shared_root_file_details(tmp_path: Path) -> None:
    _copy_rule_file("shared", "root", tmp_path)

    rules = {rule.name: rule for rule in parse_deepreview(tmp_path, ".deepreview").rules}

    assert rules["prompt_best_practices"].line == 1
    assert rules["prompt_best_practices"].instructions_file == (
        ".deepwork/review/prompt_best_practices.md"
    )
    traceability = rules["requirements_traceability"]
    assert traceability.strategy is Strategy.ALL_CHANGED_FILES
    assert traceability.agent_for("claude") == "requirements-reviewer"
    docs = rules["update_documents_relating_to_src_deepwork"]
    assert docs.additional_context.unchanged_matching_files is True
    assert docs.exclude == ("**/__pycache__/**",)


def _problems(
    tmp_path: Path, text: str, source: str = ".deepreview"
) -> list[tuple[str, int | None]]:
    _write(tmp_path, source, text)
    parsed = parse_deepreview(tmp_path.resolve(), source)
    assert parsed.rules == ()
    return [(problem.code, problem.line) for problem in parsed.problems]


GOOD_REVIEW = """\
  review:
    strategy: individual
    instructions: Look.
"""


def test_empty_file_holds_no_rules(tmp_path: Path) -> None:
    assert _problems(tmp_path, "") == []
    assert _problems(tmp_path, "# only a comment\n") == []


def test_invalid_yaml_is_reported_with_its_line(tmp_path: Path) -> None:
    assert _problems(tmp_path, "a:\n  b: [1, 2\n  c: 3\n") == [("yaml.syntax", 3)]


def test_top_level_must_be_a_map(tmp_path: Path) -> None:
    assert _problems(tmp_path, "- one\n- two\n") == [("review.config_invalid", 1)]


def test_rule_name_pattern(tmp_path: Path) -> None:
    text = "bad name!:\n  description: d\n  match: {include: ['*']}\n" + GOOD_REVIEW
    assert _problems(tmp_path, text) == [("review.config_invalid", 1)]


def test_every_problem_of_a_rule_is_reported_with_its_line(tmp_path: Path) -> None:
    text = (
        "first:\n"
        f"  description: {'x' * 257}\n"
        "  match:\n"
        "    include: []\n"
        "  review:\n"
        "    strategy: sometimes\n"
        "    instructions: Look.\n"
        "    colour: blue\n"
    )
    assert sorted(_problems(tmp_path, text)) == [
        ("review.config_invalid", 2),  # description too long
        ("review.config_invalid", 4),  # include needs one glob
        ("review.config_invalid", 6),  # unknown strategy
        ("review.config_invalid", 8),  # unknown key
    ]


def test_missing_keys_point_at_the_rule(tmp_path: Path) -> None:
    assert _problems(tmp_path, "\n\nlonely:\n  description: d\n") == [
        ("review.config_invalid", 3),
        ("review.config_invalid", 3),
    ]


def test_instructions_must_be_text_or_a_file(tmp_path: Path) -> None:
    text = (
        "r:\n  description: d\n  match: {include: ['*']}\n"
        "  review:\n    strategy: individual\n    instructions: {path: x.md}\n"
    )
    assert _problems(tmp_path, text) == [("review.instructions_invalid", 6)]


def test_missing_instructions_file(tmp_path: Path) -> None:
    text = (
        "r:\n  description: d\n  match: {include: ['*']}\n"
        "  review:\n    strategy: individual\n    instructions:\n      file: nowhere.md\n"
    )
    assert _problems(tmp_path, text) == [("review.instructions_missing", 6)]


def test_instructions_file_is_relative_to_the_deepreview_folder(tmp_path: Path) -> None:
    _write(tmp_path, "pkg/guide.md", "Guide text.\n")
    _write(
        tmp_path,
        "pkg/.deepreview",
        "r:\n  description: d\n  match: {include: ['*']}\n"
        "  review:\n    strategy: individual\n    instructions: {file: guide.md}\n",
    )
    (rule,) = parse_deepreview(tmp_path.resolve(), "pkg/.deepreview").rules
    assert rule.instructions == "Guide text.\n"
    assert rule.instructions_file == "pkg/guide.md"
    assert rule.folder == "pkg"


@pytest.mark.parametrize("target", ["../../outside.md", "/etc/hostname"])
def test_instructions_file_must_stay_inside_the_project(tmp_path: Path, target: str) -> None:
    project = tmp_path / "project"
    _write(tmp_path, "outside.md", "secret\n")
    text = (
        "r:\n  description: d\n  match: {include: ['*']}\n"
        f"  review:\n    strategy: individual\n    instructions: {{file: '{target}'}}\n"
    )
    assert _problems(project, text, "sub/.deepreview") == [
        ("review.instructions_outside_project", 6)
    ]


def test_instructions_symlink_leaving_the_project_is_refused(tmp_path: Path) -> None:
    project = tmp_path / "project"
    _write(tmp_path, "outside.md", "secret\n")
    project.mkdir()
    (project / "link.md").symlink_to(tmp_path / "outside.md")
    text = (
        "r:\n  description: d\n  match: {include: ['*']}\n"
        "  review:\n    strategy: individual\n    instructions: {file: link.md}\n"
    )
    assert _problems(project, text) == [("review.instructions_outside_project", 6)]


def test_one_bad_rule_does_not_hide_the_good_ones(tmp_path: Path) -> None:
    text = (
        "good:\n  description: d\n  match: {include: ['*.py']}\n" + GOOD_REVIEW + "bad:\n"
        "  description: d\n"
    )
    _write(tmp_path, ".deepreview", text)
    parsed = parse_deepreview(tmp_path, ".deepreview")
    assert [rule.name for rule in parsed.rules] == ["good"]
    assert {problem.line for problem in parsed.problems} == {7}


def test_duplicate_rule_names_are_an_error(tmp_path: Path) -> None:
    text = "r:\n  description: a\n" + "r:\n  description: b\n"
    assert _problems(tmp_path, text) == [("yaml.duplicate_key", 3)]


def test_fingerprint_covers_the_instructions_file(tmp_path: Path) -> None:
    _write(tmp_path, "guide.md", "one\n")
    _write(
        tmp_path,
        ".deepreview",
        "r:\n  description: d\n  match: {include: ['*']}\n"
        "  review:\n    strategy: individual\n    instructions: {file: guide.md}\n",
    )
    before = parse_deepreview(tmp_path, ".deepreview").rules[0].fingerprint
    _write(tmp_path, "guide.md", "two\n")
    after = parse_deepreview(tmp_path, ".deepreview").rules[0].fingerprint
    assert before != after
