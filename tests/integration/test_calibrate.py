"""`deepwork calibrate` (docs/quality-gate.md, "Calibration"): the shipped cases and a project's
own, through the real reviewer path (the scripted reviewer double on PATH, run as the `claude`
CLI), give a clearly different report for a double that is always right and one that passes
everything; the report is kept in the store and `deepwork stats` (text and `--json`) shows each
runner's latest rates, warning above 10 % false passes; bad cases are coded errors naming the
file and the line."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result
from deepwork_core.gate.calibration.cases import CalibrationCase, load_cases
from deepwork_mcp.cli.group import cli

from tests.fixtures.reviewer import ScriptedReviewer

LIBRARY = Path(__file__).resolve().parents[2] / "library" / "calibration"
OWN_CASE = """\
kind: house_style
summary: A heading in the wrong case, per the project's style.
output:
  path: page.md
  text: |
    # getting Started
criteria:
  Title case:
    question: Is the heading in title case?
    expected: fail
"""


def _invoke(root: Path, *args: str) -> Result:
    return CliRunner().invoke(cli, [*args, "--path", str(root)])


def _calibrate(root: Path, *args: str) -> dict[str, Any]:
    result = _invoke(root, "calibrate", "--runner", "claude", "--json", *args)
    assert result.exit_code == 0, result.output
    report: dict[str, Any] = json.loads(result.stdout)
    return report


def _kinds(report: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {row["kind"]: row for row in report["kinds"]}


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    (root / ".deepwork" / "calibration").mkdir(parents=True)
    (root / ".deepwork" / "calibration" / "title_case.yml").write_text(OWN_CASE)
    return root


def test_the_shipped_set_covers_every_kind_a_reviewer_fails_on() -> None:
    cases = load_cases([(LIBRARY, "library")])
    assert len(cases) >= 30
    kinds = {case.kind for case in cases}
    assert {
        "missing_section",
        "wrong_figure",
        "unsourced_claim",
        "stale_date",
        "half_met",
        "fluent_no_substance",
        "rough_but_good",
        "planted_instructions",
    } <= kinds
    expected = [c.expected for case in cases for c in case.criteria.values()]
    assert expected.count("fail") >= 15
    assert expected.count("pass") >= 15


@pytest.mark.slow  # one reviewer process per case: the end-to-end test of the feature
def test_an_always_right_double_and_a_pass_everything_double_are_told_apart(
    project: Path, reviewer_on_path: ScriptedReviewer
) -> None:
    every = load_cases([(LIBRARY, "library"), (project / ".deepwork/calibration", "project")])
    # Two cases of each kind (the first and the last), and the project's own.
    picked = {c.id for kind in {c.kind for c in every} for c in _ends(every, kind)}
    cases = [case for case in every if case.id in picked]
    only = [arg for case in cases for arg in ("--case", case.id)]
    should_fail = sum(1 for c in cases for k in c.criteria.values() if k.expected == "fail")
    reviewer_on_path.spend(0.02)

    naive = _calibrate(project, *only)  # the double passes everything

    assert len(reviewer_on_path.calls()) == len(cases)  # one call per case, no reuse
    assert naive["runner"] == "claude"
    assert naive["total"]["cases"] == len(cases)
    assert naive["total"]["false_passes"] == should_fail
    assert naive["total"]["false_pass_rate"] == 1.0
    assert naive["total"]["false_fails"] == 0
    assert naive["warns"] is True
    assert naive["total"]["cost_usd"] == pytest.approx(0.02 * len(cases))
    assert _kinds(naive)["planted_instructions"]["false_passes"] == 1
    assert _kinds(naive)["house_style"]["false_passes"] == 1  # the project's own case ran
    assert _kinds(naive)["rough_but_good"]["false_passes"] == 0

    for case in cases:
        failing = [name for name, item in case.criteria.items() if item.expected == "fail"]
        reviewer_on_path.judge(case.output.text.rstrip("\n"), failing)
    right = _calibrate(project, *only)

    assert right["total"]["false_passes"] == right["total"]["false_fails"] == 0
    assert right["total"]["errors"] == 0
    assert right["total"]["judged"] == naive["total"]["judged"]
    assert right["warns"] is False

    text = _invoke(project, "stats")
    assert text.exit_code == 0, text.output
    assert "Reviewer calibration" in text.output
    assert "false passes 0% (0 of" in text.output  # the latest report of claude
    figures = json.loads(_invoke(project, "stats", "--json").stdout)
    (latest,) = figures["calibration"]
    assert latest["total"]["false_passes"] == 0
    assert latest["results"] == []


def _ends(cases: list[CalibrationCase], kind: str) -> list[CalibrationCase]:
    of_kind = [case for case in cases if case.kind == kind]
    return [of_kind[0], of_kind[-1]]


def test_stats_warns_when_false_passes_exceed_ten_percent(
    project: Path, reviewer_on_path: ScriptedReviewer
) -> None:
    _calibrate(project, "--case", "title_case", "--case", "wrong_figure_total")
    text = _invoke(project, "stats")
    assert "false passes 100% (2 of 2)" in text.output
    assert "warning: claude passed 100% of the criteria it should have failed" in text.output
    human = _invoke(project, "calibrate", "--runner", "claude", "--case", "title_case")
    assert "house_style" in human.output
    assert "1 of 1 (100%)" in human.output
    assert "warning:" in human.output


@pytest.mark.parametrize("runner", ["codex", "gemini"])
def test_a_runner_that_reports_no_cost_is_never_shown_at_0_usd(
    project: Path, reviewer_on_path: ScriptedReviewer, runner: str
) -> None:
    result = _invoke(project, "calibrate", "--runner", runner, "--json", "--case", "title_case")
    assert result.exit_code == 0, result.output
    total = json.loads(result.stdout)["total"]
    assert (total["cost_usd"], total["unpriced_calls"]) == (0.0, 1)
    assert total["tokens"] > 0
    human = _invoke(project, "calibrate", "--runner", runner, "--case", "title_case")
    [row] = [line for line in human.output.splitlines() if line.startswith("total")]
    assert row.endswith("not reported")
    stats = _invoke(project, "stats").output
    assert "1 case(s), not reported" in stats
    assert "0.0000 USD" not in stats


@pytest.mark.parametrize(
    ("text", "line", "what"),
    [
        (OWN_CASE.replace("    expected: fail\n", ""), 8, "has no expected verdict"),
        (OWN_CASE.replace("expected: fail", "expected: maybe"), 10, "criteria.Title case.expected"),
        ("kind: x\nsummary: [unclosed\n", 3, "invalid YAML"),
        (OWN_CASE.replace("path: page.md", "path: ../page.md"), 4, "output.path"),
    ],
)
def test_a_bad_case_is_a_coded_error_naming_file_and_line(
    project: Path, reviewer_on_path: ScriptedReviewer, text: str, line: int, what: str
) -> None:
    case = project / ".deepwork" / "calibration" / "title_case.yml"
    case.write_text(text)
    result = _invoke(project, "calibrate", "--runner", "claude")
    assert result.exit_code == 1
    assert "calibration.case_invalid" in result.output
    assert f"title_case.yml:{line}:" in result.output, result.output
    assert what in result.output
    assert reviewer_on_path.calls() == []  # refused whole, before any reviewer ran


def test_no_case_and_no_runner_are_coded_errors(
    project: Path, reviewer_on_path: ScriptedReviewer
) -> None:
    none = _invoke(project, "calibrate", "--runner", "claude", "--case", "nothing")
    assert none.exit_code == 1
    assert "calibration.no_cases" in none.output
    (reviewer_on_path.bin_dir / "gemini").unlink()
    missing = _invoke(project, "calibrate", "--runner", "gemini")
    assert missing.exit_code == 1
    assert "quality_gate.not_installed" in missing.output
