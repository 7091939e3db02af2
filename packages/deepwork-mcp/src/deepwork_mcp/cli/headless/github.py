"""Under GitHub Actions, `deepwork run` appends to `$GITHUB_OUTPUT` (`status`, `session`,
`approve-command`) and `$GITHUB_STEP_SUMMARY` (a short Markdown report) (docs/headless.md)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from deepwork_mcp.cli.headless.exits import RunExit
from deepwork_mcp.cli.headless.follow import Outcome

_STATUS = {
    RunExit.COMPLETE: "completed",
    RunExit.PARKED: "parked",
    RunExit.EXHAUSTED: "exhausted",
    RunExit.AGENT_FAILED: "agent_failed",
}


def outputs_of(outcome: Outcome) -> dict[str, str]:
    """The step outputs: status, session, and the approve command of a parked run."""
    session = outcome.session_id or ""
    approve = f"deepwork approve {session}" if outcome.exit is RunExit.PARKED else ""
    status = _STATUS.get(outcome.exit, "error")
    return {"status": status, "session": session, "approve-command": approve}


def write_github_files(environ: Mapping[str, str], outcome: Outcome, root: Path) -> None:
    """Append to the files GitHub Actions names (nothing outside Actions)."""
    values = outputs_of(outcome)
    output = environ.get("GITHUB_OUTPUT")
    if output:
        with Path(output).open("a", encoding="utf-8") as file:
            file.writelines(f"{key}={value}\n" for key, value in values.items())
    summary = environ.get("GITHUB_STEP_SUMMARY")
    if summary:
        lines = [
            "### DeepWork run",
            "",
            f"- status: **{values['status']}** ({outcome.summary})",
            f"- session: `{values['session'] or '-'}`",
            f"- project: `{root}`",
        ]
        if values["approve-command"]:
            lines.append(f"- who may decide: {outcome.deciders or 'any trusted approver'}")
            lines.append(f"- to approve, from outside the run: `{values['approve-command']}`")
            if outcome.dashboard_url:
                lines.append(f"- or on the dashboard: {outcome.dashboard_url}")
            lines.append(f"- then: `deepwork run --resume {values['session']} --agent …`")
        with Path(summary).open("a", encoding="utf-8") as file:
            file.write("\n".join(lines) + "\n")
