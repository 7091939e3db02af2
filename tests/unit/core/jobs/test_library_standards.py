"""The library jobs hold the standard a professional in each domain demands (issue 33).

Each test names what the job must keep: a reader's interests and what was sent (weekly_digest),
counts anyone can re-run (data_quality_audit), no approval written before the owner gives it
(incident_postmortem), and no claim without a quoted passage (interview_synthesis).
"""

from __future__ import annotations

import re
from pathlib import Path

from deepwork_core.jobs.model import JobDefinition, Step
from deepwork_core.jobs.parser import parse_job_dir

from tests.fixtures.paths import REPO_ROOT

LIBRARY = REPO_ROOT / "library" / "jobs"


def _job(name: str) -> JobDefinition:
    return parse_job_dir(LIBRARY / name, expected_name=name).require()


def _review_text(step: Step) -> str:
    """Every criterion and instruction of the step's reviews, as one text."""
    parts: list[str] = []
    for review in step.reviews:
        parts += [f"{name}: {text}" for name, text in review.quality_criteria.items()]
        parts.append(review.additional_review_guidance or "")  # 0.10: the review's instructions
    return " ".join(" ".join(parts).split())


def _files(name: str) -> str:
    folder = LIBRARY / name
    return "\n".join(p.read_text(encoding="utf-8") for p in sorted(folder.rglob("*.md")))


def test_weekly_digest_keeps_the_readers_interests_and_what_was_sent() -> None:
    job = _job("weekly_digest")
    first, gather, write = (job.step(s) for s in ("review_last_run", "gather_news", "write_digest"))
    assert "profile.md" in first.outputs["profile"].description
    assert "sent.md" in write.outputs["sent_log"].description
    assert {"profile"} <= {i.file for i in gather.inputs} & {i.file for i in write.inputs}
    gate = _review_text(gather)
    assert "at least three distinct searches" in gate
    assert "single search fail" in gate
    assert "sent before" in gate


def test_data_quality_audit_declares_its_scripts_and_reruns_a_count() -> None:
    job = _job("data_quality_audit")
    profile, check = job.step("profile"), job.step("check_rules")
    assert "scripts/profile.py" in profile.outputs["profile_script"].description
    assert "scripts/check_" in check.outputs["check_scripts"].description
    assert check.outputs["check_scripts"].type.is_file
    gate = _review_text(check)
    assert "Re-run one count" in gate
    assert "run its command line" in gate


def test_incident_postmortem_never_writes_approved_before_the_owner() -> None:
    job = _job("incident_postmortem")
    assert job.step("approve").approval is not None
    text = _files("incident_postmortem")
    assert not re.search(r"(Status|Decision): approved", text)
    assert "Decision: pending" in text
    assert "Status: awaiting sign-off" in text
    assert "Not approved in advance" in _review_text(job.step("approve"))


def test_interview_synthesis_catches_a_claim_with_no_quoted_passage() -> None:
    job = _job("interview_synthesis")
    assert "no quoted passage" in _review_text(job.step("write_synthesis"))
    assert "without a quoted passage" in _review_text(job.step("find_themes"))


def test_the_raised_jobs_got_a_new_minor_version() -> None:
    for name in ("weekly_digest", "incident_postmortem", "interview_synthesis"):
        version = _job(name).version
        assert version is not None
        assert tuple(int(x) for x in version.split(".")) >= (1, 1, 0), name
    assert Path(LIBRARY / "data_quality_audit" / "job.yml").is_file()  # 0.10: no version


#: The four jobs whose reviews once took the author's word for every source and count (issue 44).
SPOT_CHECKED = ("research_report", "release_notes", "spec_driven_development", "competitive_report")


def test_every_review_of_the_raised_jobs_spot_checks_and_says_what_it_found() -> None:
    """Each review asks the reviewer to open one source or re-run one command, and to say in its
    feedback what it checked and what it found."""
    for name in SPOT_CHECKED:
        job = _job(name)
        for step in job.steps:
            for review in step.reviews:
                criteria = [f"{k}: {v}" for k, v in review.quality_criteria.items()]
                text = " ".join([*criteria, review.additional_review_guidance or ""])
                flat = " ".join(text.split())
                assert re.search(r"[Ss]pot-check|Re-run one|run `git|[Rr]un one of", flat), (
                    name,
                    step.id,
                    review.run_each,
                )
                assert re.search(r"[Ss]ay (in your feedback )?(which|what)", flat), (
                    name,
                    step.id,
                    review.run_each,
                )
                assert len(review.quality_criteria) <= 5 or not review.quality_criteria
        if job.version is not None:
            assert tuple(int(x) for x in job.version.split(".")) >= (1, 2, 0), name
