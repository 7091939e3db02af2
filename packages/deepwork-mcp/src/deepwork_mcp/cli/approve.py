"""`deepwork approve SESSION`: a human approves or rejects a step waiting for approval.

Run in a terminal by the person the step asks; the MCP server never runs it and no MCP tool can
write what it writes. The decision records the OS user and host, the terminal it was typed in
(none when input was not a terminal) and the hashes of the shown outputs (docs/evidence.md),
sealed with the project's approval key from the user's state directory (docs/security.md),
signed with the local approver's key when there is one (`deepwork approver init`; docs/team.md),
and logged as an `approval` event. What it shows is the server's sealed request, refused when the
seal does not verify (`approval.request_unverified`), and escaped (docs/security.md).
"""

from __future__ import annotations

import getpass
import os
import socket
import sys
from datetime import UTC, datetime
from pathlib import Path

import click
from deepwork_core import DeepWorkError
from deepwork_core.base.escaping import indented, printable
from deepwork_core.state.approvals import (
    ApprovalChannel,
    ApprovalRecord,
    ApprovalStore,
    record_decision,
)

from deepwork_mcp.approval_keys import (
    approval_key,
    local_signer,
    state_dir,
    trusted_approvers,
)
from deepwork_mcp.cli.options import project_option


@click.command()
@click.argument("session_id")
@click.option("--reject", is_flag=True, help="Request changes instead of approving.")
@click.option("--comment", default=None, help="What the agent should know (required to reject).")
@click.option(
    "--approver",
    "approver_name",
    default=None,
    help="Which of your approver keys signs (default: DEEPWORK_APPROVER, or your only one).",
)
@project_option
def approve(
    session_id: str, reject: bool, comment: str | None, approver_name: str | None, project: Path
) -> None:
    """Approve (or with --reject, send back) the step SESSION_ID is waiting on."""
    if reject and not (comment and comment.strip()):
        raise click.UsageError("--reject needs --comment saying what to change")
    root = project.resolve()
    state = state_dir(os.environ)
    try:
        store = ApprovalStore(
            root,
            approval_key(state, root),
            trusted=trusted_approvers(root, os.environ),
            signer=local_signer(state, os.environ, approver_name),
        )
        pending = store.load(session_id)
        if pending is not None:
            if not store.trusted.shared:
                store.check_request(pending)
            _describe(pending)
            _warn_unverified(store, session_id, pending)
        record = record_decision(
            store,
            session_id,
            approved=not reject,
            comment=comment,
            channel=ApprovalChannel.CLI,
            actor=_actor(),
            terminal=_terminal(),
            now=datetime.now(UTC),
        )
    except DeepWorkError as exc:
        click.echo(printable(f"{exc.code}: {exc.message}"), err=True)
        raise click.exceptions.Exit(1) from None
    verdict = "Approved" if not reject else "Changes requested"
    steps = ", ".join(record.request.step_ids)
    signed = record.decision.signer if record.decision is not None else None
    click.echo(
        printable(f"{verdict} for step {steps} of session {session_id}")
        + (printable(f", signed by approver {signed}") if signed else "")
        + ". The agent's next finished_step call picks it up."
    )


def _describe(record: ApprovalRecord) -> None:
    request = record.request
    steps = ", ".join(request.step_ids)
    click.echo(printable(f"{request.job_name}/{request.workflow_name}, step {steps}"))
    click.echo(indented(request.prompt, "  "))
    for shown in request.shown:
        sha = shown.sha256 or "(missing)"
        click.echo("  " + printable(f"{shown.output}: {shown.path}  sha256 {sha}"))


def _warn_unverified(store: ApprovalStore, session_id: str, record: ApprovalRecord) -> None:
    """Say so when the decision already in the file does not count (this one replaces it)."""
    why = store.why_unverified(session_id, record)
    if why is not None:
        click.echo(
            f"warning: the decision already in {store.where(session_id)} does not count ({why}); "
            "yours replaces it",
            err=True,
        )


def _actor() -> str:
    try:
        user = getpass.getuser()
    except (KeyError, OSError):
        user = str(os.getuid())
    return f"{user}@{socket.gethostname()}"


def _terminal() -> str | None:
    try:
        return os.ttyname(sys.stdin.fileno()) if sys.stdin.isatty() else None
    except (OSError, ValueError, AttributeError):
        return None
