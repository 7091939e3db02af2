"""A doc spec's review runs once per checkpoint, in every configuration a job can express
(docs/quality-gate.md, "Review tasks"): the spec alone, the spec joining a review of its output
or of the whole step, a `.deepreview` rule matching the same file beside it, and background
reviews answering `reviewing` first. Through the real server (in memory) with the scripted
reviewer on PATH, which logs every call it gets."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest
from deepwork_mcp.server import create_server
from fastmcp import Client

from tests.fixtures.configs import config
from tests.fixtures.reviewer import ScriptedReviewer
from tests.fixtures.tool_calls import call_ok
from tests.fixtures.workflow_project import make_project, write_files
from tests.integration.test_gate_rules import RULES
from tests.integration.test_quality_gate import review_brief

OWN_REVIEW = """\
    reviews:
      - run_each: report
        quality_criteria:
          Accurate: Is the report accurate?
"""
#: The step's `reviews:` in each variant, and the reviews the reviewer must get.
REVIEWS = {
    "spec_alone": ("    reviews: []\n", 1),
    "spec_joins_the_outputs_review": (OWN_REVIEW, 1),
    "spec_beside_a_step_review": (OWN_REVIEW.replace("run_each: report", "run_each: step"), 1),
}


def _project(tmp_path: Path, reviews: str, *, rule: bool) -> Path:
    root = make_project(tmp_path / "project")
    job = root / ".deepwork" / "jobs" / "speced" / "job.yml"
    text = job.read_text()
    job.write_text(text[: text.index("    reviews:")] + reviews)
    if rule:
        (root / ".deepreview").write_text(RULES, encoding="utf-8")
        subprocess.run(["git", "init", "-q", str(root)], check=True, timeout=60)
    return root


async def _finish(client: Client[Any]) -> dict[str, Any]:
    """`finished_step` until it answers something other than `reviewing` (each call waits for
    the reviews' real end, up to `wait_seconds`)."""
    for _ in range(100):
        answer = await call_ok(client, "finished_step", outputs={"report": "report.md"})
        if answer["status"] != "reviewing":
            return answer
    raise AssertionError("the reviews never ended")


#: (variant, a rule on the file, background reviews answering `reviewing` first). The spec
#: alone, without a rule, answered at once, is tests/integration/test_quality_gate.py's, per runner.
CASES = [
    *((variant, rule, False) for variant in sorted(REVIEWS) for rule in (False, True)),
    ("spec_alone", False, True),
    ("spec_alone", True, True),
]
CASES.remove(("spec_alone", False, False))


def _case_id(case: tuple[str, bool, bool]) -> str:
    variant, rule, background = case
    return "-".join(
        [variant, "rule_on_the_file" if rule else "no_rule"]
        + (["reviewing_first"] if background else [])
    )


@pytest.mark.parametrize(("variant", "rule", "background"), CASES, ids=map(_case_id, CASES))
async def test_the_doc_spec_is_reviewed_once(
    tmp_path: Path,
    reviewer_on_path: ScriptedReviewer,
    variant: str,
    rule: bool,
    background: bool,
) -> None:
    """Issue 43, item 10: the reviewer got the spec's brief twice (and was paid twice)."""
    reviews, expected = REVIEWS[variant]
    root = _project(tmp_path, reviews, rule=rule)
    settings = config(external_runner="claude", wait_seconds=1 if background else 20)
    if background:
        reviewer_on_path.answer("gated")  # held until released: the first answer is `reviewing`
    async with Client(create_server(root, settings)) as client:
        await call_ok(client, "start_workflow", goal="g", job_name="speced", workflow_name="main")
        write_files(root, "report.md")
        if background:
            first = await call_ok(client, "finished_step", outputs={"report": "report.md"})
            assert first["status"] == "reviewing", first
            reviewer_on_path.release()
        done = await _finish(client)
    assert done["status"] == "workflow_complete", done
    briefs = [review_brief(call) for call in reviewer_on_path.calls()]
    assert len(briefs) == expected + rule, briefs
    assert len(set(briefs)) == len(briefs)  # no brief twice
    spec = [brief for brief in briefs if "Monthly report: Has summary" in brief]
    assert len(spec) == 1, briefs


@pytest.mark.parametrize("variant", ["spec_alone", "spec_joins_the_outputs_review"])
async def test_a_reply_by_the_specs_own_names_is_not_asked_again(
    tmp_path: Path, reviewer_on_path: ScriptedReviewer, variant: str
) -> None:
    """Issue 43, item 10, reproduced: the brief names a doc spec's criterion `Monthly report:
    Has summary`; a reviewer that answers `Has summary`, as the spec names it, left it
    "unjudged", so the same brief was asked (and paid for) a second time, and then failed."""
    reviews, _ = REVIEWS[variant]
    root = _project(tmp_path, reviews, rule=False)
    reviewer_on_path.answer("spec_names")
    async with Client(create_server(root, config(external_runner="claude"))) as client:
        await call_ok(client, "start_workflow", goal="g", job_name="speced", workflow_name="main")
        write_files(root, "report.md")
        done = await _finish(client)
    assert done["status"] == "workflow_complete", done
    [call] = reviewer_on_path.calls()
    assert "Monthly report: Has summary" in review_brief(call)
