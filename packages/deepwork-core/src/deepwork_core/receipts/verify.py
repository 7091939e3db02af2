"""`deepwork verify`: the receipts a change adds or touches (or all of them), checked against the
base ref (docs/verify.md).

It needs no store and no network: only the work tree and git. It fails closed: outside git, with
no base ref, with a policy that cannot be read, each receipt that cannot be read or trusted,
each finding is a failure; `VerifyReport.passed` only when there are none. After each receipt's
own checks (`receipts.checks`), two hold across receipts: no two valid receipts claim one file
with different hashes, and every changed file a `verify.require` rule of the base ref's policy
covers is declared, with its current bytes, by a valid receipt of that rule's job and workflow
(approved and reviewed when the rule asks). With `--rereview` (`receipts.rereview`), each
receipt that holds but for its countersignature has its reviews judged again and, when they all
pass, is countersigned in the work tree and checked once more.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

from deepwork_core.base.config import DeepWorkConfig, VerifyRule, parse_config
from deepwork_core.base.errors import ConfigError, DeepWorkError, GitError
from deepwork_core.base.git import repository_root
from deepwork_core.base.globs import matches_any
from deepwork_core.base.layout import CI_KEYS_DIR, CONFIG_FILE, GATE_KEYS_DIR, RECEIPTS_DIR
from deepwork_core.evidence.hashes import sha256_file
from deepwork_core.receipts.checks import Checked, check_receipt
from deepwork_core.receipts.codes import ReceiptCode
from deepwork_core.receipts.findings import Finding
from deepwork_core.receipts.model import Receipt
from deepwork_core.receipts.reading import read_receipt
from deepwork_core.receipts.repository import Repository

if TYPE_CHECKING:  # the re-review (and the gate it runs) is imported only when asked for
    from deepwork_core.receipts.rereview import Rereview

#: DeepWork's own files in a change: never themselves required to have a receipt.
_OWN = (f"{RECEIPTS_DIR}/**", f"{GATE_KEYS_DIR}/**", f"{CI_KEYS_DIR}/**")


@dataclass
class VerifyReport:
    """What one run of `deepwork verify` found."""

    findings: list[Finding] = field(default_factory=list)
    #: The receipts it checked (project-relative paths).
    receipts: list[str] = field(default_factory=list)
    #: The receipts that hold, with the steps whose approval counts.
    valid: dict[str, tuple[Receipt, Checked]] = field(default_factory=dict)
    #: The receipts whose gate signature holds (valid or not): what runs claimed.
    signed: dict[str, Receipt] = field(default_factory=dict)
    #: The receipts `--rereview` countersigned (written into the work tree).
    countersigned: list[str] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        return not self.findings


def verify(
    project: Path, base: str | None, *, everything: bool, rereview: Rereview | None = None
) -> VerifyReport:
    """Check the receipts of the change in the git work tree holding `project` since `base`
    (None: the remote's default branch, `main` or `master`); `everything`: every receipt;
    `rereview`: judge their reviews again and countersign them (docs/verify.md)."""
    report = VerifyReport()
    root = repository_root(project)
    if root is None:
        report.findings.append(_global(ReceiptCode.VERIFY_NOT_A_REPOSITORY, f"{project}"))
        return report
    commit = Repository.find_base(root, base)
    if commit is None:
        wanted = base or "origin/HEAD, main or master"
        report.findings.append(
            _global(ReceiptCode.VERIFY_BASE_MISSING, f"no base ref {wanted} in this repository")
        )
        return report
    repo = Repository(root=root.resolve(), base=commit, base_name=base)
    try:
        _run(repo, report, everything, rereview)
    except GitError as exc:
        report.findings.append(_global(ReceiptCode.VERIFY_GIT_FAILED, exc.message))
    except DeepWorkError as exc:
        report.findings.append(_global(ReceiptCode.VERIFY_RECEIPT_UNREADABLE, exc.message))
    return report


def _run(
    repo: Repository, report: VerifyReport, everything: bool, rereview: Rereview | None
) -> None:
    config = _config(repo, report)
    policy = config.verify
    changed = repo.changed_files()
    candidates = repo.tracked_under(RECEIPTS_DIR) if everything else changed
    report.receipts = [p for p in candidates if _is_receipt(repo.root, p)]
    for relative in report.receipts:
        read = read_receipt(repo.root, relative)
        if isinstance(read, Finding):
            report.findings.append(read)
            continue
        checked = check_receipt(repo, relative, read, policy.require_countersign)
        if rereview is not None and _only_unsigned(checked):
            from deepwork_core.receipts.rereview import rereview_receipt

            judged = rereview_receipt(rereview, repo, relative, read, config.quality_gate)
            if judged.countersigned is None:
                checked = replace(checked, findings=[*checked.findings, *judged.findings])
            else:
                read = _countersigned(repo, report, relative, judged.countersigned)
                checked = check_receipt(repo, relative, read, policy.require_countersign)
        report.findings += checked.findings
        if checked.signed:
            report.signed[relative] = read
        if not checked.findings:
            report.valid[relative] = (read, checked)
    report.findings += _conflicts(report.signed)
    live = [p for p in changed if not matches_any(p, _OWN) and (repo.root / p).exists()]
    for path in live:
        report.findings += _required(repo.root, path, policy.require, report.valid)


def _is_receipt(root: Path, path: str) -> bool:
    """Every file under `.deepwork/receipts/` is checked as a receipt (a stray one fails)."""
    return path.startswith(f"{RECEIPTS_DIR}/") and os.path.lexists(root / path)


def _only_unsigned(checked: Checked) -> bool:
    """The receipt holds, but for the countersignature the policy may require."""
    return all(f.code is ReceiptCode.VERIFY_COUNTERSIGN_MISSING for f in checked.findings)


def _countersigned(
    repo: Repository, report: VerifyReport, relative: str, receipt: Receipt
) -> Receipt:
    """Write the receipt `--rereview` countersigned over the one it was read from."""
    from deepwork_core.receipts.rereview import write_receipt

    write_receipt(repo.root, relative, receipt)
    report.countersigned.append(relative)
    return receipt


def _config(repo: Repository, report: VerifyReport) -> DeepWorkConfig:
    """The base ref's `.deepwork/config.yml`: its policy, and the review settings of a
    re-review (the change cannot loosen either)."""
    raw = repo.file_at_base(CONFIG_FILE)
    if raw is None:
        return DeepWorkConfig()
    try:
        config: DeepWorkConfig = parse_config(raw, f"{CONFIG_FILE} on the base ref")
    except ConfigError as exc:
        report.findings.append(
            Finding(code=ReceiptCode.VERIFY_POLICY_INVALID, file=CONFIG_FILE, message=exc.message)
        )
        return DeepWorkConfig()
    return config


def _conflicts(signed: dict[str, Receipt]) -> list[Finding]:
    claims: dict[str, dict[str, str]] = {}
    for relative, receipt in signed.items():
        for step in receipt.body.steps:
            for output in step.outputs:
                if output.sha256 is not None:
                    claims.setdefault(output.path, {})[output.sha256] = relative
    return [
        Finding(
            code=ReceiptCode.VERIFY_CONFLICTING_RECEIPTS,
            file=path,
            message=f"claimed with different hashes by {', '.join(sorted(by.values()))}",
        )
        for path, by in sorted(claims.items())
        if len(by) > 1
    ]


def _required(
    root: Path, path: str, rules: list[VerifyRule], valid: dict[str, tuple[Receipt, Checked]]
) -> list[Finding]:
    """The findings of the changed file `path` under each rule that covers it."""
    findings = []
    current: str | None = None
    for rule in rules:
        if not matches_any(path, rule.paths):
            continue
        current = current or sha256_file(root, path)
        makers = [
            (receipt, checked, step)
            for receipt, checked in valid.values()
            if rule.job in (None, receipt.body.job)
            and rule.workflow in (None, receipt.body.workflow)
            for step in receipt.body.steps
            if any(o.path == path and o.sha256 == current for o in step.outputs)
        ]
        if not makers:
            findings.append(_unreceipted(path, rule))
            continue
        if rule.approval and not any(s.step in c.approved_steps for _, c, s in makers):
            findings.append(
                Finding(
                    code=ReceiptCode.VERIFY_APPROVAL_MISSING,
                    file=path,
                    step=makers[0][2].step,
                    message="the policy requires an approval of this file and no valid "
                    "receipt holds one",
                )
            )
        if rule.reviewed and not any(s.passed.kind == "reviewed" for _, _, s in makers):
            kind = makers[0][2].passed.kind
            findings.append(
                Finding(
                    code=ReceiptCode.VERIFY_NOT_REVIEWED,
                    file=path,
                    step=makers[0][2].step,
                    message=f"the policy requires a reviewer; the step passed as {kind}",
                )
            )
    return findings


def _unreceipted(path: str, rule: VerifyRule) -> Finding:
    which = " ".join(
        part
        for part in (rule.job and f"job {rule.job}", rule.workflow and f"workflow {rule.workflow}")
        if part
    )
    return Finding(
        code=ReceiptCode.VERIFY_UNRECEIPTED_CHANGE,
        file=path,
        message=f"changed, required ({', '.join(rule.paths)}) to come from a run"
        f"{' of ' + which if which else ''}, and no valid receipt declares its current bytes",
    )


def _global(code: ReceiptCode, message: str) -> Finding:
    return Finding(code=code, message=message)
