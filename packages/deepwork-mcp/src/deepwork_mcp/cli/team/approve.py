"""`deepwork approve SESSION`: a human approves or rejects a step waiting for approval.

Run in a terminal by the person the step asks; the MCP server never runs it and no MCP tool can
write what it writes. The decision records the OS user and host, the terminal it was typed in
(none when input was not a terminal) and the hashes of the shown outputs (docs/evidence.md),
sealed with the project's approval key from the user's state directory (docs/security.md),
signed with the local approver's key when there is one (`deepwork approver init`; docs/team.md),
and logged as an `approval` event. What it shows is the server's sealed request, refused when the
seal does not verify (`approval.request_unverified`), and escaped (docs/security.md): the step,
the question and each shown file with its hash and the bytes the store keeps of it (docs/team.md).
Then it asks for confirmation (`--yes` answers yes, for scripts; without a terminal to ask on,
`--yes` is needed). Inside a
headless run's agent (`DEEPWORK_RUN` set by `deepwork run`) it refuses (`approval.inside_run`):
a decision from inside the run never counts (docs/headless.md).
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
from deepwork_core.base.error_codes import ErrorCode
from deepwork_core.base.errors import FileReadError
from deepwork_core.base.escaping import indented, printable
from deepwork_core.base.fsutil import read_bytes_file
from deepwork_core.base.git import user_email
from deepwork_core.base.identifiers import SessionId, parse_session_id
from deepwork_core.engine.headless.parking import refuse_inside_run
from deepwork_core.state.approvals.decide import record_decision
from deepwork_core.state.approvals.models import ApprovalChannel, ApprovalRecord
from deepwork_core.state.approvals.store import (
    ApprovalStore,
    nothing_to_decide,
    serving_project,
)
from deepwork_core.state.store.port import ProjectRef
from deepwork_core.state.store.tables.shown_bytes import Kept, ShownBytes
from deepwork_core.state.store.tables.shown_bytes import load as load_shown

from deepwork_mcp.approvals.keys import (
    approval_key,
    local_signer,
    state_dir,
    trusted_approvers,
)
from deepwork_mcp.cli.options import existing_project_store, project_option

#: A shown file larger than this is not printed; of a text file at most SHOWN_CHARS are.
MAX_SHOWN_BYTES = 1024 * 1024
SHOWN_CHARS = 4000


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
@click.option("--yes", "-y", is_flag=True, help="Do not ask for confirmation (for scripts).")
@project_option
def approve(
    session_id: str,
    reject: bool,
    comment: str | None,
    approver_name: str | None,
    yes: bool,
    project: Path,
) -> None:
    """Approve (or with --reject, send back) the step SESSION_ID is waiting on.

    Shows the files the step asks about, with their content, and asks before deciding.
    """
    if reject and not (comment and comment.strip()):
        raise click.UsageError("--reject needs --comment saying what to change")
    root = project.resolve()
    state = state_dir(os.environ)
    try:
        refuse_inside_run(os.environ)
        parsed = parse_session_id(session_id)
        key, trusted = approval_key(state, root), trusted_approvers(root, os.environ)
        signer = local_signer(state, os.environ, approver_name, trusted)
        with existing_project_store(root) as opened:
            if opened is None:  # no store, so nothing waits
                raise nothing_to_decide(parsed)
            serving = serving_project(opened, parsed, shared=trusted.shared)
            if serving is None:
                raise nothing_to_decide(parsed)
            elsewhere = serving.project_id != opened.project.project_id
            store = ApprovalStore(
                opened,
                root,
                key,
                trusted=trusted,
                signer=signer,
                project_id=serving.project_id if elsewhere else None,
            )
            record = _decide(store, parsed, serving, reject=reject, comment=comment, yes=yes)
    except DeepWorkError as exc:
        hint = _NONE_PENDING_HINT if exc.code == ErrorCode.APPROVAL_NONE_PENDING else ""
        click.echo(printable(f"{exc.code}: {exc.message}{hint}"), err=True)
        raise click.exceptions.Exit(1) from None
    verdict = "Approved" if not reject else "Changes requested"
    steps = ", ".join(record.request.step_ids)
    signed = record.decision.signer if record.decision is not None else None
    policy = record.request.policy
    standing = record.standing()
    click.echo(
        printable(f"{verdict} for step {steps} of session {session_id}")
        + (printable(f", signed by approver {signed}") if signed else "")
        + (f" ({standing.text()})" if policy is not None and policy.required > 1 else "")
        + printable(f". The run is served by {_where(serving)}")
        + ": the agent's next finished_step call picks it up."
    )


#: Where a person finds the runs that do wait (the CLI's words, not the MCP tools').
_NONE_PENDING_HINT = (
    "; `deepwork status` lists the runs waiting for a person (`deepwork status --all`: those of "
    "every project in the store)"
)


def _decide(
    store: ApprovalStore,
    session_id: SessionId,
    serving: ProjectRef,
    *,
    reject: bool,
    comment: str | None,
    yes: bool,
) -> ApprovalRecord:
    """Show the open request (read from the store, of the project `serving` the run), ask
    (unless `yes`), and record the decision."""
    pending = store.load(session_id)
    if pending is not None:
        if not store.trusted.shared:
            store.check_request(pending)
        click.echo(printable(f"Run served by {_where(serving)}"))
        here = serving.project_id == store.store.project.project_id
        _describe(store, pending, store.project_root if here else None, serving)
        _warn_unverified(store, session_id, pending)
        if not yes:
            _confirm(pending, reject)
    return record_decision(
        store,
        session_id,
        approved=not reject,
        comment=comment,
        channel=ApprovalChannel.CLI,
        actor=_actor(),
        terminal=_terminal(),
        now=datetime.now(UTC),
        email=user_email(store.project_root),
    )


def _where(serving: ProjectRef) -> str:
    return f"project {serving.root} on {serving.machine}"


def _describe(
    store: ApprovalStore, record: ApprovalRecord, root: Path | None, serving: ProjectRef
) -> None:
    """The step, the question and each shown file: the bytes the store keeps of it (a request
    from before it kept them: the file as `root`, the checkout serving the run, holds it; None:
    another checkout serves it, whose bytes this one may not hold)."""
    request = record.request
    steps = ", ".join(request.step_ids)
    click.echo(printable(f"{request.job_name}/{request.workflow_name}, step {steps}"))
    click.echo(indented(request.prompt, "  "))
    with store.store.read() as tx:
        kept = load_shown(tx, store.project_id, request.request_id, request.shown)
    for shown in kept:
        sha = shown.sha256 or "(missing)"
        size = "" if shown.size is None else f"  {shown.size} bytes"
        click.echo("")
        click.echo("  " + printable(f"{shown.output}: {shown.path}  sha256 {sha}{size}"))
        click.echo(indented(_content(root, shown, serving), "  | "))


def _content(root: Path | None, shown: ShownBytes, serving: ProjectRef) -> str:
    """The shown file as text (the bytes the store keeps), or why it is not shown."""
    if shown.complete:
        return shown.text if shown.kept is Kept.WHOLE else "(absent when asked about)"
    if shown.kept is Kept.FIRST_PART:
        return f"{shown.text}\n… ({shown.why_incomplete()})"
    if shown.kept is Kept.NOT_STORED:
        if root is None:
            return (
                f"(not shown: the file is on {serving.machine} in {serving.root}; the decision "
                "binds to the sha256 above, which that server checks before it counts)"
            )
        return _checkout_content(root, shown.path)
    return f"({shown.why_incomplete()}: not shown)"


def _checkout_content(root: Path, relative: str) -> str:
    """The start of a shown file as this checkout holds it, or why it is not shown."""
    path = root / relative
    try:
        path.resolve().relative_to(root)
        data = read_bytes_file(path, limit=MAX_SHOWN_BYTES, follow_symlinks=False)
    except ValueError:
        return "(outside the project: not shown)"
    except FileReadError as exc:
        return f"(not shown: {exc.code})"
    if b"\0" in data[:8192]:
        return "(a binary file: not shown)"
    text = data.decode("utf-8", "replace")
    if len(text) > SHOWN_CHARS:
        return f"{text[:SHOWN_CHARS]}\n… ({len(text) - SHOWN_CHARS} more characters in the file)"
    return text


def _confirm(record: ApprovalRecord, reject: bool) -> None:
    """Ask on the terminal; without one, only `--yes` decides (nothing is recorded)."""
    steps = ", ".join(record.request.step_ids)
    if not sys.stdin.isatty():
        click.echo(
            "no terminal to ask for confirmation on: nothing was recorded. Run it in a "
            "terminal, or pass --yes when a script decides.",
            err=True,
        )
        raise click.exceptions.Exit(2)
    verb = "Send step back" if reject else "Approve step"
    if not click.confirm(printable(f"{verb} {steps} as shown above?"), default=False):
        click.echo("Nothing was recorded.", err=True)
        raise click.exceptions.Exit(1)


def _warn_unverified(store: ApprovalStore, session_id: SessionId, record: ApprovalRecord) -> None:
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
