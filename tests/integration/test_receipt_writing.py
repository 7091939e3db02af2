"""Which runs leave a receipt, and with which key (docs/verify.md, "The receipt" and "Keys"):
through the real server, the first completed run on a machine makes its gate key and lists the
public half under `.deepwork/gate_keys/` (the answer says to commit both); a later run signs
with the same key and lists nothing new. A run that is unfinished or aborted has no receipt,
and `deepwork receipt` refuses to write one (`receipt.not_completed`). A nested run has a
receipt of its own, naming its parent, and both verify. A step accepted while its criteria were
removed from job.yml, or while a `.deepreview` rule reviewing it was weakened, both restored
before the run completed, is named in the receipt as run under another definition, and
`deepwork verify` refuses it (`verify.job_changed_during_run`); a step a human approves later
keeps the definition the gate accepted it under."""

from __future__ import annotations

import hashlib
import json
import os
import stat
from pathlib import Path
from typing import Any

from click.testing import CliRunner
from deepwork_core.base.layout import GATE_KEYS_DIR, RECEIPTS_DIR
from deepwork_mcp.approvals.keys import gate_key
from deepwork_mcp.cli.group import cli
from deepwork_mcp.server import create_server
from fastmcp import Client

from tests.fixtures.configs import config
from tests.fixtures.evidence_project import make_evidence_project
from tests.fixtures.git_repo import commit_all, git
from tests.fixtures.receipt_repo import OUTPUTS
from tests.fixtures.tool_calls import call_ok
from tests.fixtures.workflow_project import MARKDOWN_RULE, make_project, write_files


def _state() -> Path:
    return Path(os.environ["DEEPWORK_STATE_DIR"])


def _project(tmp_path: Path) -> Path:
    root = make_project(tmp_path / "project")
    commit_all(root, "the project")
    return root


def _on_a_branch(root: Path, message: str) -> None:
    """List the machine's gate key, commit everything on `main` and work on `feature`."""
    key = gate_key(_state())
    (root / GATE_KEYS_DIR).mkdir(parents=True)
    (root / key.pub_path).write_text(key.public_line())
    commit_all(root, message)
    git(root, "checkout", "-q", "-b", "feature")


async def _complete(client: Client[Any], root: Path) -> dict[str, Any]:
    await call_ok(client, "start_workflow", goal="g", job_name="three_step", workflow_name="main")
    write_files(root, "notes.md", "drafts/1.md", "final.md")
    answer: dict[str, Any] = {}
    for outputs in OUTPUTS:
        answer = await call_ok(client, "finished_step", outputs=outputs)
    assert answer["status"] == "workflow_complete", answer
    return answer


async def test_the_first_run_makes_the_gate_key_and_lists_it_once(tmp_path: Path) -> None:
    root = _project(tmp_path)
    key_file = _state() / "gate" / "gate.key"
    assert not key_file.exists()
    async with Client(create_server(root, config(), state_dir=_state())) as client:
        first = await _complete(client, root)
        second = await _complete(client, root)

    assert stat.S_IMODE(key_file.stat().st_mode) == 0o600
    key = gate_key(_state())
    listing = f"{GATE_KEYS_DIR}/{key.name}.pub"
    assert key.pub_path == listing
    assert (root / listing).read_text() == key.public_line()
    (note,) = first["evidence"]["receipts"]
    assert (note["key"], note["listed_key"]) == (key.name, listing)
    assert f"git add {note['path']} {listing}" in first["summary"]
    assert "trusted once merged into the base branch" in first["summary"]

    (again,) = second["evidence"]["receipts"]
    assert again["key"] == key.name
    assert "listed_key" not in again  # the answer leaves out what is None
    assert again["path"] != note["path"]
    assert listing not in second["summary"]
    assert sorted(p.name for p in (root / GATE_KEYS_DIR).iterdir()) == [f"{key.name}.pub"]


async def test_an_unfinished_or_aborted_run_has_no_receipt(tmp_path: Path) -> None:
    root = _project(tmp_path)
    async with Client(create_server(root, config(), state_dir=_state())) as client:
        started = await call_ok(
            client, "start_workflow", goal="g", job_name="three_step", workflow_name="main"
        )
        session_id = started["begin_step"]["session_id"]
        write_files(root, "notes.md")
        step = await call_ok(client, "finished_step", outputs=OUTPUTS[0])
        assert step["status"] == "next_step"
        assert "receipts" not in str(step.get("evidence"))
        assert not (root / RECEIPTS_DIR).exists()

        unfinished = CliRunner().invoke(cli, ["receipt", session_id, "--path", str(root)])
        assert unfinished.exit_code == 1
        assert "receipt.not_completed" in unfinished.output

        await call_ok(client, "abort_workflow", explanation="not needed after all")
    assert not (root / RECEIPTS_DIR).exists()
    assert not (root / GATE_KEYS_DIR).exists()

    aborted = CliRunner().invoke(cli, ["receipt", session_id, "--path", str(root)])
    assert aborted.exit_code == 1
    assert "receipt.not_completed" in aborted.output
    assert "aborted" in aborted.output
    assert not (root / RECEIPTS_DIR).exists()


async def test_a_nested_run_has_a_receipt_of_its_own_and_both_verify(tmp_path: Path) -> None:
    root = _project(tmp_path)
    _on_a_branch(root, "the gate key")
    async with Client(create_server(root, config(), state_dir=_state())) as client:
        top = await call_ok(
            client, "start_workflow", goal="g", job_name="three_step", workflow_name="main"
        )
        write_files(root, "notes.md", "one.md", "drafts/1.md", "final.md")
        await call_ok(client, "finished_step", outputs=OUTPUTS[0])
        nested = await call_ok(
            client, "start_workflow", goal="n", job_name="multi", workflow_name="alpha"
        )
        inner = await call_ok(client, "finished_step", outputs={"one_out": "one.md"})
        (inner_note,) = inner["evidence"]["receipts"]
        for outputs in OUTPUTS[1:]:
            outer = await call_ok(client, "finished_step", outputs=outputs)
    assert outer["status"] == "workflow_complete"
    (outer_note,) = outer["evidence"]["receipts"]
    top_id, nested_id = top["begin_step"]["session_id"], nested["begin_step"]["session_id"]
    assert (inner_note["session_id"], outer_note["session_id"]) == (nested_id, top_id)
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "both runs")

    result = CliRunner().invoke(cli, ["verify", "--path", str(root), "--base", "main"])
    assert result.exit_code == 0, result.output
    assert "2 receipts checked, all hold" in result.output
    receipt = json.loads((root / inner_note["path"]).read_text())
    assert (receipt["body"]["job"], receipt["body"]["parent_session_id"]) == ("multi", top_id)


def _refused_for_the_draft(root: Path, note: dict[str, Any], path: str, text: str) -> None:
    """The run's receipt says the draft step ran under `path` as `text` (the others under the
    definition the run completed with), and `deepwork verify` refuses it for that step alone."""
    body = json.loads((root / note["path"]).read_text())["body"]
    completed = body["job_definition"]["sha256"]
    assert ("project", path) in [(f["root"], f["path"]) for f in body["job_definition"]["files"]]
    steps = {step["step"]: step for step in body["steps"]}
    sha = hashlib.sha256(text.encode()).hexdigest()
    assert steps["draft"]["definition_changed"] == [
        {"root": "project", "path": path, "sha256": sha}
    ]
    assert steps["draft"]["definition_sha256"] not in (None, completed)
    for other in ("gather", "publish"):
        assert (steps[other]["definition_sha256"], steps[other]["definition_changed"]) == (
            completed,
            [],
        )
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "the run")

    result = CliRunner().invoke(
        cli, ["verify", "--path", str(root), "--base", "main", "--format", "json"]
    )
    assert result.exit_code == 1, result.output
    findings = [json.loads(line) for line in result.output.splitlines() if line]
    assert [(f["code"], f["step"]) for f in findings] == [
        ("verify.job_changed_during_run", "draft")
    ]
    assert path in findings[0]["message"]


_DRAFT = "      drafts: {type: files, description: Draft files, required: true}\n    reviews:"
_CRITERIA = (
    "\n      - run_each: step\n        quality_criteria:\n"
    "          Sourced: Does every claim of the draft come from the notes?"
)


async def test_a_step_run_under_a_weakened_definition_is_named_and_refused(
    tmp_path: Path,
) -> None:
    root = make_project(tmp_path / "project")
    job_file = root / ".deepwork/jobs/three_step/job.yml"
    weak = job_file.read_text()
    strict = weak.replace(f"{_DRAFT} []", f"{_DRAFT}{_CRITERIA}")
    assert strict != weak
    job_file.write_text(strict)
    _on_a_branch(root, "the project, whose draft step is reviewed")
    async with Client(create_server(root, config(), state_dir=_state())) as client:
        await call_ok(
            client, "start_workflow", goal="g", job_name="three_step", workflow_name="main"
        )
        write_files(root, "notes.md", "drafts/1.md", "final.md")
        await call_ok(client, "finished_step", outputs=OUTPUTS[0])
        job_file.write_text(weak)  # the draft's criteria removed for its checkpoint...
        draft = await call_ok(client, "finished_step", outputs=OUTPUTS[1])
        assert draft["status"] == "next_step"
        job_file.write_text(strict)  # ...and restored before the run completes
        done = await call_ok(client, "finished_step", outputs=OUTPUTS[2])
    assert done["status"] == "workflow_complete"
    (note,) = done["evidence"]["receipts"]
    draft_passed = json.loads((root / note["path"]).read_text())["body"]["steps"][1]["passed"]
    assert draft_passed["kind"] == "unreviewed"  # its review was gone at its checkpoint
    _refused_for_the_draft(root, note, ".deepwork/jobs/three_step/job.yml", weak)


async def test_a_step_reviewed_under_a_weakened_rule_is_named_and_refused(
    tmp_path: Path,
) -> None:
    root = make_project(tmp_path / "project")
    strict = MARKDOWN_RULE
    weak = strict.replace("Every heading MUST be in sentence case.", "Anything goes.")
    assert weak != strict
    (root / ".deepreview").write_text(strict)
    _on_a_branch(root, "the project, its outputs reviewed by a rule")
    async with Client(create_server(root, config(), state_dir=_state())) as client:
        await call_ok(
            client, "start_workflow", goal="g", job_name="three_step", workflow_name="main"
        )
        write_files(root, "notes.md", "drafts/1.md", "final.md")
        answer: dict[str, Any] = {}
        for step, outputs in zip(("gather", "draft", "publish"), OUTPUTS, strict=True):
            if step == "draft":
                (root / ".deepreview").write_text(weak)  # the rule weakened for the draft
            asked = await call_ok(client, "finished_step", outputs=outputs)
            assert asked["status"] == "needs_work", asked  # the self-review of the rule
            answer = await call_ok(
                client,
                "finished_step",
                outputs=outputs,
                quality_review_override_reason="Self-review passed every criterion.",
            )
            (root / ".deepreview").write_text(strict)  # ...and put back
    assert answer["status"] == "workflow_complete"
    (note,) = answer["evidence"]["receipts"]
    _refused_for_the_draft(root, note, ".deepreview", weak)


async def test_a_step_approved_later_keeps_the_definition_it_was_accepted_under(
    tmp_path: Path,
) -> None:
    root = make_evidence_project(tmp_path / "project")
    instructions = root / ".deepwork/jobs/approved/steps/plan.md"
    strict = instructions.read_text()
    weak = "Write any plan at all.\n"
    async with Client(create_server(root, config(), state_dir=_state())) as client:
        started = await call_ok(
            client, "start_workflow", goal="g", job_name="approved", workflow_name="main"
        )
        session_id = started["begin_step"]["session_id"]
        (root / "plan.md").write_text("the plan\n")
        instructions.write_text(weak)  # weakened for the checkpoint the human is asked about...
        waiting = await call_ok(client, "finished_step", outputs={"plan": "plan.md"})
        assert waiting["status"] == "awaiting_approval"
        instructions.write_text(strict)  # ...and put back before the human decides
        approved = CliRunner().invoke(
            cli, ["approve", session_id, "--path", str(root), "--yes"], input=""
        )
        assert approved.exit_code == 0, approved.output
        plan = await call_ok(client, "finished_step", outputs={"plan": "plan.md"})
        assert plan["status"] == "next_step", plan
        (root / "result.md").write_text("built\n")
        done = await call_ok(client, "finished_step", outputs={"result": "result.md"})
    assert done["status"] == "workflow_complete"
    (note,) = done["evidence"]["receipts"]
    body = json.loads((root / note["path"]).read_text())["body"]
    steps = {step["step"]: step for step in body["steps"]}
    assert steps["plan"]["definition_changed"] == [
        {
            "root": "project",
            "path": ".deepwork/jobs/approved/steps/plan.md",
            "sha256": hashlib.sha256(weak.encode()).hexdigest(),
        }
    ]
    assert steps["build"]["definition_changed"] == []
