"""The forgery matrix of `deepwork verify` (docs/verify.md): a real run's receipt, in a real git
repository, changed the ways a forger would; the real command refuses each with its own code,
and passes the untouched receipt (also after unrelated files change). Then the keys of a
`verify.require` rule of the base ref's policy: `job`, `workflow`, `approval`, and that the
change cannot loosen them."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import socket
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from deepwork_core.base.layout import CONFIG_FILE, GATE_KEYS_DIR
from deepwork_core.receipts.checks import countersign_fields
from deepwork_core.receipts.keys import COUNTERSIGN_LABEL, RECEIPT_LABEL, CiKey, GateKey
from deepwork_core.receipts.model import (
    MAX_RECEIPT_BYTES,
    Countersignature,
    Receipt,
    canonical_bytes,
)
from deepwork_mcp.approvals.keys import gate_key
from deepwork_mcp.cli.group import cli

from tests.fixtures.receipt_repo import ReceiptRepo, build_template

Body = dict[str, Any]


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_template(tmp_path_factory.mktemp("receipt-template"))


@pytest.fixture
def repo(template: Path, tmp_path: Path) -> ReceiptRepo:
    return ReceiptRepo.copy(template, tmp_path / "copy")


def _step(body: Body, step: str) -> Body:
    found: Body = next(s for s in body["steps"] if s["step"] == step)
    return found


def edit_output(repo: ReceiptRepo) -> None:
    (repo.root / "final.md").write_text("edited after the run\n")


def edit_signed(change: Callable[[Body], None]) -> Callable[[ReceiptRepo], None]:
    """Edit a signed field of the receipt without signing again."""

    def forge(repo: ReceiptRepo) -> None:
        document = repo.document()
        change(document["body"])
        repo.write_document(document)

    return forge


def _set_hash(body: Body) -> None:
    _step(body, "publish")["outputs"][0]["sha256"] = "0" * 64


def _set_verdict(body: Body) -> None:
    _step(body, "publish")["passed"] = {"kind": "reviewed", "reviews": [], "reason": None}


def _set_step(body: Body) -> None:
    _step(body, "publish")["step"] = "gather"


def _set_job_hash(body: Body) -> None:
    body["job_definition"]["sha256"] = "1" * 64


def _add_approval(body: Body) -> None:
    body["approvals"] = [
        {
            "step_ids": ["publish"],
            "request_id": "r",
            "signer": None,
            "signature": None,
            "decided_at": body["completed_at"],
            "fields": {},
        }
    ]


def untrusted_key(repo: ReceiptRepo) -> None:
    repo.resign(_set_hash, key=GateKey(repo.state / "other.key", "elsewhere"))


def key_in_change(repo: ReceiptRepo) -> None:
    other = GateKey(repo.state / "other.key", "elsewhere")
    (repo.root / other.pub_path).write_text(other.public_line())
    repo.resign(_set_hash, key=other)


def approver_in_change(repo: ReceiptRepo) -> None:
    repo.resign(lambda body: repo.approve(body, trusted_now=False))


def approval_removed(repo: ReceiptRepo) -> None:
    repo.resign(lambda body: _step(body, "publish").update(approval_required=True))


def approval_edited(repo: ReceiptRepo) -> None:
    def change(body: Body) -> None:
        repo.approve(body, trusted_now=True)
        body["approvals"][0]["fields"]["comment"] = "not what ann signed"

    repo.resign(change)


def copied_from_other_run(repo: ReceiptRepo) -> None:
    target = repo.receipt.with_name("AAAAAAAAAAAAAAAA.json")
    target.write_bytes(repo.receipt.read_bytes())


def copied_from_branch(repo: ReceiptRepo) -> None:
    repo.git("checkout", "-q", "-b", "elsewhere", "main")
    (repo.root / "elsewhere.md").write_text("x\n")
    repo.commit("elsewhere")
    other = repo.git("rev-parse", "HEAD")
    repo.git("checkout", "-q", "feature")
    repo.resign(lambda body: body.update(start_commit=other))


def copied_from_project(repo: ReceiptRepo) -> None:
    repo.resign(lambda body: body.update(start_commit="ab" * 20))


def aborted_run(repo: ReceiptRepo) -> None:
    repo.resign(lambda body: body.update(status="aborted"))


def unfinished_run(repo: ReceiptRepo) -> None:
    repo.resign(lambda body: body.update(status="active", completed_at=None))


def required_without_receipt(repo: ReceiptRepo) -> None:
    repo.set_base_policy("verify:\n  require:\n    - paths: ['docs/**']\n")
    (repo.root / "docs").mkdir()
    (repo.root / "docs/adr.md").write_text("written by hand\n")


def two_claims(repo: ReceiptRepo) -> None:
    """A second, validly signed receipt claims `final.md` with other bytes."""
    second = repo.receipt.with_name("BBBBBBBBBBBBBBBB.json")
    second.write_bytes(repo.receipt.read_bytes())

    def change(body: Body) -> None:
        body["session_id"] = "BBBBBBBBBBBBBBBB"
        final = _step(body, "publish")["outputs"][0]
        final["sha256"] = hashlib.sha256(b"a second version\n").hexdigest()

    repo.resign(change, path=second)
    (repo.root / "final.md").write_text("a second version\n")


def self_review_where_reviewer_required(repo: ReceiptRepo) -> None:
    repo.set_base_policy("verify:\n  require:\n    - paths: ['final.md']\n      reviewed: true\n")
    repo.resign(
        lambda body: _step(body, "publish").update(
            passed={"kind": "self_reviewed", "reviews": [], "reason": "looked at it myself"}
        )
    )


def outside_receipts(repo: ReceiptRepo) -> None:
    repo.set_base_policy("verify:\n  require:\n    - paths: ['final.md']\n")
    (repo.root / "docs").mkdir()
    repo.receipt.rename(repo.root / "docs/receipt.json")


def misplaced(repo: ReceiptRepo) -> None:
    target = repo.root / ".deepwork/receipts/other_job" / repo.receipt.name
    target.parent.mkdir()
    repo.receipt.rename(target)


def symlinked(repo: ReceiptRepo) -> None:
    kept = repo.root / "kept.json"
    repo.receipt.rename(kept)
    fresh = repo.root / ".deepwork/receipts/three_step/CCCCCCCCCCCCCCCC.json"
    fresh.symlink_to(kept)


def oversized(repo: ReceiptRepo) -> None:
    repo.receipt.write_bytes(b" " * (10 * 1024 * 1024))
    assert repo.receipt.stat().st_size > MAX_RECEIPT_BYTES


def deeply_nested(repo: ReceiptRepo) -> None:
    repo.receipt.write_text("[" * 100_000 + "]" * 100_000 + "\n")


def not_canonical(repo: ReceiptRepo) -> None:
    repo.receipt.write_text(json.dumps(repo.document(), indent=2))


def not_json(repo: ReceiptRepo) -> None:
    repo.receipt.write_text("{not json\n")


def another_format(repo: ReceiptRepo) -> None:
    """Signed by the trusted gate key, in a format this version does not read."""
    document = repo.document()
    document["body"]["format"] = "deepwork-receipt/2"
    document["signature"]["ed25519"] = gate_key(repo.state).sign(document["body"], RECEIPT_LABEL)
    repo.receipt.write_bytes(canonical_bytes(document))


def job_changed(repo: ReceiptRepo) -> None:
    steps = repo.root / ".deepwork/jobs/three_step/steps/publish.md"
    steps.write_text(steps.read_text() + "\nAlso do something else.\n")


def path_outside(repo: ReceiptRepo) -> None:
    repo.resign(lambda body: _step(body, "publish")["outputs"][0].update(path="../escape.md"))


def no_trusted_key(repo: ReceiptRepo) -> None:
    repo.git("checkout", "-q", "main")
    repo.git("rm", "-q", "-r", GATE_KEYS_DIR)
    repo.commit("no keys")
    repo.git("checkout", "-q", "feature")
    repo.git("rebase", "-q", "main")


def policy_invalid(repo: ReceiptRepo) -> None:
    repo.set_base_policy("verify:\n  require: [{paths: []}]\n")


def countersign_required(repo: ReceiptRepo) -> None:
    repo.set_base_policy("verify:\n  require_countersign: true\n")


MATRIX: list[tuple[str, Callable[[ReceiptRepo], None], str]] = [
    ("output edited after the run", edit_output, "verify.output_changed"),
    ("an output hash edited", edit_signed(_set_hash), "verify.signature_invalid"),
    ("a verdict edited", edit_signed(_set_verdict), "verify.signature_invalid"),
    ("the step edited", edit_signed(_set_step), "verify.signature_invalid"),
    ("the job hash edited", edit_signed(_set_job_hash), "verify.signature_invalid"),
    ("an approval added unsigned", edit_signed(_add_approval), "verify.signature_invalid"),
    ("re-signed with an untrusted key", untrusted_key, "verify.untrusted_key"),
    ("a gate key added in the change", key_in_change, "verify.key_added_in_change"),
    ("an approver key added in the change", approver_in_change, "verify.key_added_in_change"),
    ("an approval's signed fields edited", approval_edited, "verify.approval_unverified"),
    ("an approval removed", approval_removed, "verify.approval_missing"),
    ("copied from another run", copied_from_other_run, "verify.receipt_misplaced"),
    ("copied from another branch", copied_from_branch, "verify.commit_not_ancestor"),
    ("copied from another project", copied_from_project, "verify.commit_unknown"),
    ("an aborted run", aborted_run, "verify.run_incomplete"),
    ("an unfinished run", unfinished_run, "verify.run_incomplete"),
    ("a required path without a receipt", required_without_receipt, "verify.unreceipted_change"),
    ("two receipts claim one file", two_claims, "verify.conflicting_receipts"),
    (
        "self-review where a reviewer is required",
        self_review_where_reviewer_required,
        "verify.not_reviewed",
    ),
    ("a receipt outside .deepwork/receipts/", outside_receipts, "verify.unreceipted_change"),
    ("a receipt in another job's folder", misplaced, "verify.receipt_misplaced"),
    ("a symbolic link", symlinked, "verify.receipt_symlink"),
    ("10 MiB", oversized, "verify.receipt_too_large"),
    ("deeply nested", deeply_nested, "verify.receipt_malformed"),
    ("not in canonical form", not_canonical, "verify.receipt_malformed"),
    ("not JSON", not_json, "verify.receipt_malformed"),
    ("of another format, signed", another_format, "verify.receipt_malformed"),
    ("the job definition changed", job_changed, "verify.job_changed"),
    ("an output path outside the project", path_outside, "verify.path_outside_project"),
    ("no gate key trusted on the base ref", no_trusted_key, "verify.no_trusted_keys"),
    ("a policy that cannot be read", policy_invalid, "verify.policy_invalid"),
    ("a countersignature required", countersign_required, "verify.countersign_missing"),
]


@pytest.mark.parametrize(
    ("forge", "code"), [(f, c) for _, f, c in MATRIX], ids=[name for name, _, _ in MATRIX]
)
def test_each_forgery_is_refused_with_its_code(
    repo: ReceiptRepo, forge: Callable[[ReceiptRepo], None], code: str
) -> None:
    forge(repo)
    assert code in repo.codes("--all")
    repo.commit("the forgery, committed")
    assert code in repo.codes("--all")


def test_the_untouched_receipt_holds_and_keeps_holding_when_unrelated_files_change(
    repo: ReceiptRepo,
) -> None:
    status, output = repo.verify()
    assert status == 0, output
    assert "1 receipt checked, all hold" in output
    (repo.root / "unrelated.txt").write_text("x\n")
    repo.commit("unrelated")
    assert repo.verify()[0] == 0
    assert repo.verify("--all")[0] == 0


def test_it_needs_no_store_and_no_state(repo: ReceiptRepo, tmp_path: Path) -> None:
    """A store nobody can reach and a state folder that is not there: verify opens neither,
    and leaves the work tree as it found it."""
    env = {
        "DEEPWORK_STORE_URL": "postgresql://deepwork@127.0.0.1:1/unreachable",
        "DEEPWORK_STATE_DIR": str(tmp_path / "no-state"),
    }
    shutil.rmtree(repo.root / ".deepwork/tmp")  # the run's own store, as a fresh clone lacks it
    args = ["verify", "--path", str(repo.root), "--base", "main", "--all"]
    result = CliRunner().invoke(cli, args, env=env)
    assert result.exit_code == 0, result.output
    assert not (tmp_path / "no-state").exists()
    assert repo.git("status", "--porcelain", "--ignored") == ""


def test_the_change_mode_checks_only_the_receipts_the_change_touches(repo: ReceiptRepo) -> None:
    repo.git("checkout", "-q", "main")
    repo.git("merge", "-q", "--ff-only", "feature")
    repo.git("checkout", "-q", "-b", "next")
    (repo.root / "final.md").write_text("edited later, receipt untouched\n")
    status, output = repo.verify()
    assert status == 0, output
    assert "0 receipts checked, all hold" in output
    assert "verify.output_changed" in repo.codes("--all")


def test_outside_git_and_without_a_base_it_fails_closed(repo: ReceiptRepo, tmp_path: Path) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    outside = CliRunner().invoke(cli, ["verify", "--path", str(plain), "--format", "json"])
    assert outside.exit_code == 1
    assert json.loads(outside.output)["code"] == "verify.not_a_repository"
    assert repo.codes("--base", "no-such-ref") == {"verify.base_missing"}
    repo.git("checkout", "-q", "--orphan", "unrelated")
    repo.commit("a history of its own")
    repo.git("checkout", "-q", "feature")
    status, output = repo.verify("--format", "json", "--base", "unrelated")
    (finding,) = [json.loads(line) for line in output.splitlines()]
    assert (status, finding["code"]) == (1, "verify.git_failed")
    assert "shares no history with HEAD" in finding["message"]


def test_a_receipt_that_cannot_be_opened_is_unreadable(repo: ReceiptRepo) -> None:
    """A socket where the receipt was: it exists, and opening it fails (ENXIO)."""
    folder, name = repo.receipt.parent, repo.receipt.name
    repo.receipt.unlink()
    here = Path.cwd()
    os.chdir(folder)  # a socket's path is short; the receipt's absolute one may not be
    try:
        with socket.socket(socket.AF_UNIX) as sock:
            sock.bind(name)
    finally:
        os.chdir(here)
    for args in ((), ("--all",)):
        assert repo.codes(*args) == {"verify.receipt_unreadable"}


def test_a_usage_error_exits_2(repo: ReceiptRepo) -> None:
    assert repo.verify("--format", "xml")[0] == 2


def test_github_format_annotates_the_file(repo: ReceiptRepo) -> None:
    edit_output(repo)
    status, output = repo.verify("--format", "github")
    assert status == 1
    assert output.splitlines()[0].startswith(
        "::error file=final.md,title=verify.output_changed::step publish: "
    )


def _countersign(repo: ReceiptRepo, key: CiKey) -> None:
    """Countersign the receipt with `key`, as `--rereview` would after every review held."""
    receipt = Receipt.model_validate(repo.document())
    unsigned = Countersignature(
        key=key.name, signed_at="2026-12-01T00:00:00+00:00", runner="claude", reviews=[], ed25519=""
    )
    signed = key.sign(countersign_fields(receipt, unsigned), COUNTERSIGN_LABEL)
    countersigned = receipt.model_copy(
        update={"countersignatures": [unsigned.model_copy(update={"ed25519": signed})]}
    )
    repo.receipt.write_bytes(countersigned.text())


def _trust_ci_key(repo: ReceiptRepo, key: CiKey) -> None:
    repo.git("checkout", "-q", "main")
    listing = repo.root / key.pub_path
    listing.parent.mkdir(parents=True, exist_ok=True)
    listing.write_text(key.public_line())
    repo.commit("trust the CI key")
    repo.git("checkout", "-q", "feature")
    repo.git("rebase", "-q", "main")


def test_a_trusted_countersignature_meets_require_countersign(repo: ReceiptRepo) -> None:
    repo.set_base_policy("verify:\n  require_countersign: true\n")
    assert repo.codes() == {"verify.countersign_missing"}
    key = CiKey.new("ci")
    _trust_ci_key(repo, key)
    _countersign(repo, key)
    status, output = repo.verify()
    assert status == 0, output


def test_a_countersignature_by_an_untrusted_or_edited_key_is_refused(repo: ReceiptRepo) -> None:
    key = CiKey.new("ci")
    _countersign(repo, key)
    assert repo.codes() == {"verify.countersign_invalid"}
    repo.commit("countersigned")
    _trust_ci_key(repo, CiKey.new("ci"))  # another key under the same name
    assert repo.codes() == {"verify.countersign_invalid"}


# --- the policy's rules (docs/verify.md, "The policy") ----------------------------------------


def _rule(**keys: str) -> str:
    extra = "".join(f"      {key}: {value}\n" for key, value in keys.items())
    return f"verify:\n  require:\n    - paths: ['final.md']\n{extra}"


@pytest.mark.parametrize(
    ("keys", "holds"),
    [
        ({"job": "three_step"}, True),
        ({"job": "three_step", "workflow": "main"}, True),
        ({"job": "adr"}, False),
        ({"job": "three_step", "workflow": "other"}, False),
    ],
    ids=["its job", "its job and workflow", "another job", "another workflow"],
)
def test_a_rule_names_the_job_and_workflow_that_may_make_the_file(
    repo: ReceiptRepo, keys: dict[str, str], holds: bool
) -> None:
    repo.set_base_policy(_rule(**keys))
    if holds:
        status, output = repo.verify()
        assert status == 0, output
    else:
        assert repo.codes() == {"verify.unreceipted_change"}


def test_approval_true_needs_a_trusted_approval_of_the_step_that_made_the_file(
    repo: ReceiptRepo,
) -> None:
    repo.set_base_policy(_rule(approval="true"))
    assert repo.codes() == {"verify.approval_missing"}

    repo.resign(lambda body: repo.approve(body, trusted_now=True))
    status, output = repo.verify()
    assert status == 0, output
    repo.commit("the approved receipt")

    # Another file of the same run, made by a step nobody approved, still fails.
    repo.set_base_policy("verify:\n  require:\n    - paths: ['notes.md']\n      approval: true\n")
    assert repo.codes() == {"verify.approval_missing"}


def test_the_change_cannot_loosen_the_base_refs_policy(repo: ReceiptRepo) -> None:
    repo.set_base_policy(_rule(job="adr"))
    (repo.root / CONFIG_FILE).write_text("verify:\n  require: []\n")
    repo.commit("drop the rule in the change")
    assert repo.codes() == {"verify.unreceipted_change"}
