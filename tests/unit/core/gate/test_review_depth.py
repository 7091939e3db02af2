"""Review depth: job.yml in both formats, the brief at each depth, the conversions."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from deepwork_core.base.errors import DeepWorkError
from deepwork_core.gate.briefs import LIGHT_ROLE, THOROUGH_NOTE, build_review_brief
from deepwork_core.gate.checkpoint import Checkpoint, ResolvedInput
from deepwork_core.gate.quality import plan_review_tasks
from deepwork_core.jobs.formats.convert import convert_job
from deepwork_core.jobs.parser import load_job, parse_job_dir
from deepwork_core.state.store.port import Store

from tests.fixtures.jobdata import changed, valid_job, write_job

FIXTURES = Path(__file__).parents[3] / "fixtures"


def checkpoint(store: Store, tmp_path: Path, depth: str | None) -> Checkpoint:
    data = valid_job()
    if depth is not None:
        data = changed(data, ("steps", 1, "reviews", 0, "depth"), depth)
    job = load_job(write_job(tmp_path, data))
    return Checkpoint(
        project_root=tmp_path,
        store=store,
        session_id="s1",
        job=job,
        step_ids=("second",),
        outputs={"report.md": "report.md"},
        input_files=[ResolvedInput("second", "notes.md", None, "first", paths=["notes.md"])],
        notes="My notes about the report.",
    )


def test_a_reviews_depth_wins_over_the_default(tmp_path: Path, store: Store) -> None:
    [task] = plan_review_tasks(checkpoint(store, tmp_path, "thorough"), "light")
    assert task.depth == "thorough"
    [task] = plan_review_tasks(checkpoint(store, tmp_path / "b", None), "light")
    assert task.depth == "light"


def test_an_unknown_depth_is_refused(tmp_path: Path) -> None:
    data = changed(valid_job(), ("steps", 1, "reviews", 0, "depth"), "deep")
    with pytest.raises(DeepWorkError):
        load_job(write_job(tmp_path, data))


def test_light_brief_is_role_criteria_and_answer_format_only(tmp_path: Path, store: Store) -> None:
    cp = checkpoint(store, tmp_path, "light")
    [task] = plan_review_tasks(cp)
    brief = build_review_brief(cp, task)
    assert LIGHT_ROLE in brief
    assert "Is it clear?" in brief
    assert "My notes" not in brief
    assert "job 'demo'" not in brief
    assert len(brief.encode()) - len("- **Clear**: Is it clear?") <= 1000


def test_standard_and_thorough_briefs(tmp_path: Path, store: Store) -> None:
    standard_cp = checkpoint(store, tmp_path, None)
    [task] = plan_review_tasks(standard_cp)
    standard = build_review_brief(standard_cp, task)
    assert "My notes" in standard
    assert THOROUGH_NOTE not in standard
    thorough_cp = checkpoint(store, tmp_path / "t", "thorough")
    [task] = plan_review_tasks(thorough_cp)
    assert build_review_brief(thorough_cp, task).endswith(standard.split("\n")[-1])
    assert THOROUGH_NOTE in build_review_brief(thorough_cp, task)


def test_the_v010_format_reads_depth_and_conversion_keeps_it(tmp_path: Path) -> None:
    job_dir = tmp_path / "meeting_digest"
    shutil.copytree(FIXTURES / "jobs_v010" / "meeting_digest", job_dir)
    job_file = job_dir / "job.yml"
    text = job_file.read_text().replace(
        "      strategy: matches_together\n",
        "      strategy: matches_together\n      depth: light\n",
        1,
    )
    job_file.write_text(text)
    job = load_job(job_dir)
    depths = [review.depth for step in job.steps for review in step.reviews]
    assert "light" in depths
    converted = convert_job(parse_job_dir(job_dir), "0.9")
    assert "depth: light" in converted.job_yml
