"""The standard jobs walked the way their texts say, through the real server and the scripted
external reviewer (issue 44): every call gets the answer the guidance promises, and none is
spent on a contradiction between what a text asks for and what the server accepts.

- `new_job`, `learn` and `repair` complete a job that uses `for_each`, `isolation: worktree`
  and a `concurrent_group` (the features the texts recommend, and which once raised warnings
  the `job.yml` check refused);
- the walk of `new_job` for "a weekly report of open pull requests for my team": each step is
  accepted on its first call, the test run nested on `test` leaves no undeclared change behind,
  and `iterate`, which fixed a script, completes in one call.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from deepwork_mcp.server import create_server
from fastmcp import Client

from tests.fixtures.configs import config
from tests.fixtures.git_repo import commit_all
from tests.fixtures.reviewer import ScriptedReviewer
from tests.fixtures.tool_calls import call_ok

pytestmark = pytest.mark.slow  # whole standard workflows, each review a reviewer process

FEATURE_JOB = """\
name: service_upgrade
summary: "Upgrade each service in its own worktree, then write its API notes and guide side by side"
step_arguments:
  - {name: services, description: "The services to upgrade", type: string}
  - {name: plan.md, description: "The upgrade plan, docs/upgrades/plan.md", type: file_path}
  - name: change.md
    description: "What changed in one service, docs/upgrades/<service>.md"
    type: file_path
  - {name: api.md, description: "The API notes, docs/api.md", type: file_path}
  - {name: guide.md, description: "The user guide, docs/guide.md", type: file_path}
workflows:
  upgrade:
    summary: "Plan, upgrade each service in its own worktree, document the change"
    common_job_info_provided_to_all_steps_at_runtime: "Services live under services/<name>/."
    steps:
      - name: plan
        instructions_file: steps/plan.md
        inputs: {services: {}}
        outputs:
          plan.md:
            review: {strategy: individual, instructions: "The plan MUST name every service."}
      - name: upgrade
        instructions_file: steps/upgrade.md
        inputs: {services: {}, plan.md: {}}
        outputs: {change.md: {}}
        for_each: services
        max_parallel: 2
        allow_partial: true
        isolation: worktree
      - name: api_docs
        instructions_file: steps/api_docs.md
        inputs: {change.md: {}}
        outputs: {api.md: {}}
        concurrent_group: docs
        isolation: worktree
      - name: guide
        instructions_file: steps/guide.md
        inputs: {change.md: {}}
        outputs: {guide.md: {}}
        concurrent_group: docs
        isolation: worktree
"""
FEATURE_STEPS = ("plan", "upgrade", "api_docs", "guide")

WEEKLY_JOB = """\
name: weekly_pr_report
summary: "Every week, the team's open pull requests: what is new, what is stuck, who must act"
step_arguments:
  - name: since
    description: "The first day the report covers, yyyy-mm-dd (absent: seven days ago)"
    type: string
  - name: pull_requests.json
    description: >-
      The open pull requests with author, age, reviewers and state,
      .deepwork/tmp/weekly_pr_report/pull_requests.json
    type: file_path
    json_schema: {type: object, required: [pull_requests]}
  - name: report.md
    description: "This week's report, reports/pull_requests/<yyyy-mm-dd>.md (one file per run)"
    type: file_path
workflows:
  weekly_pr_report:
    summary: "List the open pull requests, compare with last week, write who must act"
    common_job_info_provided_to_all_steps_at_runtime: |
      The team is the reviewers named in CODEOWNERS. Reports go to reports/pull_requests/, one
      dated file per week, never overwritten; the newest earlier one is last week's.
    steps:
      - name: gather
        instructions_file: steps/gather.md
        inputs: {since: {required: false}}
        outputs:
          pull_requests.json:
            review:
              strategy: individual
              instructions: "Every pull request MUST have its age in days."
      - name: write_report
        instructions_file: steps/write_report.md
        inputs: {pull_requests.json: {}}
        outputs:
          report.md:
            review:
              strategy: individual
              instructions: |
                - The report MUST open with what changed since last week's report.
                - Every stuck pull request MUST name who must act.
"""


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = (tmp_path / "project").resolve()
    (root / ".deepwork" / "jobs").mkdir(parents=True)
    (root / "README.md").write_text("A project with services.\n")
    (root / "CODEOWNERS").write_text("* @alice @bob\n")
    commit_all(root)
    return root


@pytest.fixture
async def client(project: Path, reviewer_on_path: ScriptedReviewer) -> AsyncIterator[Client[Any]]:
    """The server as the Claude Code plugin starts it (an external reviewer), waiting for its
    reviews as long as it may, so that a passing checkpoint is one call."""
    settings = config(external_runner="claude", wait_seconds=45)
    async with Client(create_server(project, settings)) as connected:
        yield connected


def _write(root: Path, relative: str, text: str) -> str:
    (root / relative).parent.mkdir(parents=True, exist_ok=True)
    (root / relative).write_text(text, encoding="utf-8")
    return relative


def _install(root: Path, name: str, job_yml: str, steps: tuple[str, ...]) -> str:
    folder = f".deepwork/jobs/{name}"
    for step in steps:
        _write(root, f"{folder}/steps/{step}.md", f"# {step}\n\nDo the {step} step.\n")
    return _write(root, f"{folder}/job.yml", job_yml)


async def _start(client: Client[Any], workflow: str, **inputs: str) -> dict[str, Any]:
    started = await call_ok(
        client,
        "start_workflow",
        goal=f"run {workflow}",
        job_name="deepwork_jobs",
        workflow_name=workflow,
        inputs=inputs,
    )
    step: dict[str, Any] = started["begin_step"]
    return step


async def _check_in(client: Client[Any], step: dict[str, Any], **outputs: Any) -> dict[str, Any]:
    """One checkpoint the way the guidance says: it must not come back `needs_work`."""
    answer = await call_ok(client, "finished_step", outputs=outputs, session_id=step["session_id"])
    assert answer["status"] in ("next_step", "workflow_complete"), json.dumps(answer)[:3000]
    return answer


async def test_new_job_completes_a_job_with_for_each_worktrees_and_a_concurrent_group(
    client: Client[Any], project: Path
) -> None:
    step = await _start(client, "new_job", job_purpose="upgrade our services one by one")
    job_yml = _write(project, ".deepwork/jobs/service_upgrade/job.yml", FEATURE_JOB)
    notes = _write(project, ".deepwork/jobs/service_upgrade/DESIGN.md", "# Design notes\n")
    answer = await _check_in(client, step, job_definition=job_yml, design_notes=notes)

    steps = [
        _write(project, f".deepwork/jobs/service_upgrade/steps/{name}.md", f"# {name}\n")
        for name in FEATURE_STEPS
    ]
    answer = await _check_in(client, answer["begin_step"], step_instruction_files=steps)
    feedback = _write(project, ".deepwork/tmp/new_job_service_upgrade_test_feedback.md", "# T\n")
    answer = await _check_in(client, answer["begin_step"], test_feedback=feedback)

    (project / job_yml).write_text(FEATURE_JOB.replace("side by side", "at the same time"))
    log = _write(project, ".deepwork/tmp/new_job_service_upgrade_changes.md", "# Changes\n")
    done = await _check_in(client, answer["begin_step"], job_definition=job_yml, change_log=log)
    assert done["status"] == "workflow_complete"


async def test_learn_completes_a_job_with_for_each_worktrees_and_a_concurrent_group(
    client: Client[Any], project: Path
) -> None:
    job_yml = _install(project, "service_upgrade", FEATURE_JOB, FEATURE_STEPS)
    step = await _start(client, "learn", job_name="service_upgrade")
    (project / job_yml).write_text(FEATURE_JOB.replace("max_parallel: 2", "max_parallel: 3"))
    lessons = _write(project, ".deepwork/tmp/learn_service_upgrade.md", "# Lessons\n")
    done = await _check_in(client, step, lessons=lessons, changed_job_files=[job_yml])
    assert done["status"] == "workflow_complete"


async def test_repair_completes_a_job_with_for_each_worktrees_and_a_concurrent_group(
    client: Client[Any], project: Path
) -> None:
    job_yml = _install(project, "service_upgrade", FEATURE_JOB, FEATURE_STEPS)
    step = await _start(client, "repair")
    plan = _write(project, ".deepwork/tmp/repair/plan.md", "# Plan\n")
    manifest = _write(project, ".deepwork/tmp/repair/backup/MANIFEST.md", "# Backup\n")
    answer = await _check_in(client, step, repair_plan=plan, backup_manifest=manifest)

    (project / job_yml).write_text(FEATURE_JOB.replace("Services live", "The services live"))
    group = {
        "job_changes": _write(project, ".deepwork/tmp/repair/job_changes.md", "# Jobs\n"),
        "changed_job_files": [job_yml],
        "settings_changes": _write(project, ".deepwork/tmp/repair/settings_changes.md", "# S\n"),
    }
    answer = await _check_in(client, answer["begin_step"], **group)  # the group: one call
    report = _write(project, ".deepwork/tmp/repair/report.md", "# Repaired\n")
    done = await _check_in(client, answer["begin_step"], repair_report=report)
    assert done["status"] == "workflow_complete"


async def test_the_weekly_pull_request_report_walks_new_job_without_a_wasted_call(
    client: Client[Any], project: Path, reviewer_on_path: ScriptedReviewer
) -> None:
    purpose = "a weekly report of open pull requests for my team"
    define = await _start(client, "new_job", job_purpose=purpose)
    assert len(json.dumps(define).encode()) <= 20_000  # the first answer stays small
    folder = ".deepwork/jobs/weekly_pr_report"
    job_yml = _write(project, f"{folder}/job.yml", WEEKLY_JOB)
    notes = _write(
        project, f"{folder}/DESIGN.md", f"# Design notes\n\nThe user asked for {purpose}.\n"
    )
    implement = (await _check_in(client, define, job_definition=job_yml, design_notes=notes))[
        "begin_step"
    ]

    gather = _write(project, f"{folder}/steps/gather.md", "# Gather\n\nRun scripts/list_prs.sh.\n")
    write = _write(project, f"{folder}/steps/write_report.md", "# Write the report\n")
    script = _write(project, f"{folder}/scripts/list_prs.sh", "gh pr list --json number\n")
    answer = await _check_in(
        client, implement, step_instruction_files=[gather, write], support_files=[script]
    )
    test = answer["begin_step"]

    # The test run: the new job's workflow nested on top of `test`, as its instructions say.
    nested = await call_ok(
        client, "start_workflow", goal=purpose, job_name="weekly_pr_report",
        workflow_name="weekly_pr_report",
    )  # fmt: skip
    prs = _write(
        project, ".deepwork/tmp/weekly_pr_report/pull_requests.json", '{"pull_requests": []}'
    )
    answer = await _check_in(client, nested["begin_step"], **{"pull_requests.json": prs})
    report = _write(project, "reports/pull_requests/2026-10-05.md", "# Open pull requests\n")
    nested_done = await _check_in(client, answer["begin_step"], **{"report.md": report})
    assert nested_done["status"] == "workflow_complete"
    assert [entry["step"] for entry in nested_done["stack"]] == ["test"]
    # A round of the test fixes a step of the job itself (`test` may change the job's files).
    (project / write).write_text("# Write the report\n\nOpen with what changed since last week.\n")
    feedback = _write(project, ".deepwork/tmp/new_job_weekly_pr_report_test_feedback.md", "# T\n")
    answer = await _check_in(client, test, test_feedback=feedback)
    assert answer["evidence"]["undeclared_changes"] == []  # the nested run's files are its own
    iterate = answer["begin_step"]
    assert {o["name"] for o in iterate["step_expected_outputs"]} >= {"support_files"}

    # iterate fixes the script and the job; submitting them as the step says is one call.
    (project / script).write_text("gh pr list --state open --json number,author,createdAt\n")
    (project / job_yml).write_text(WEEKLY_JOB.replace("who must act", "who must act next"))
    log = _write(project, ".deepwork/tmp/new_job_weekly_pr_report_changes.md", "# Changes\n")
    calls_before = len(reviewer_on_path.calls())
    done = await _check_in(
        client, iterate, job_definition=job_yml, step_instruction_files=[write],
        support_files=[script], change_log=log,
    )  # fmt: skip
    assert done["status"] == "workflow_complete"
    assert done["evidence"]["undeclared_changes"] == []
    assert len(reviewer_on_path.calls()) > calls_before  # the changed files were reviewed again
    assert done["all_outputs"]["step_instruction_files"] == [gather, write]
