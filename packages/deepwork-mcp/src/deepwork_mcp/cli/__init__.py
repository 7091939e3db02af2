"""The `deepwork` command line.

Every sub-command lives in a module of its own and is imported only when it runs, so that
`deepwork --version` and `deepwork hook …` never pay for importing FastMCP or pydantic-heavy
code they do not use. The CLI is the only layer that reads flags, environment variables and the
working directory; everything below it takes explicit arguments, the project's store included
(each command opens it, `deepwork_mcp.cli.options`).
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import click

# name -> (module, attribute, one-line help shown by `deepwork --help` without importing it)
_COMMANDS: dict[str, tuple[str, str, str]] = {
    "serve": ("deepwork_mcp.cli.serve", "serve", "Run the DeepWork MCP server for a project."),
    "review": ("deepwork_mcp.cli.review", "review", "Print review tasks for the changed files."),
    "hook": ("deepwork_mcp.cli.hook", "hook", "Run a DeepWork hook on one event read from stdin."),
    "status": (
        "deepwork_mcp.cli.status",
        "status",
        "Show the active workflow stacks and the last finished sessions.",
    ),
    "log": ("deepwork_mcp.cli.log", "log", "Print the event log of one workflow session."),
    "jobs": (
        "deepwork_mcp.cli.jobs",
        "jobs",
        "DeepWork jobs: list, validate, new, add (from the library), graph, convert.",
    ),
    "approve": (
        "deepwork_mcp.cli.team.approve",
        "approve",
        "Approve or reject a step waiting for a human.",
    ),
    "approver": (
        "deepwork_mcp.cli.team.approver",
        "approver",
        "Set up the key with which you sign approvals.",
    ),
    "audit": (
        "deepwork_mcp.cli.team.audit",
        "audit",
        "Export a run's approvals as one signed record; check one offline.",
    ),
    "stats": ("deepwork_mcp.cli.stats", "stats", "Quality-gate figures per job, step, criterion."),
    "install": (
        "deepwork_mcp.cli.install",
        "install",
        "Add DeepWork to an agent's project configuration (OpenCode).",
    ),
    "dashboard": (
        "deepwork_mcp.cli.dashboard",
        "dashboard",
        "Serve the runs, approvals and stats of a project in the browser.",
    ),
    "report": ("deepwork_mcp.cli.report", "report", "Write one run as a self-contained HTML page."),
    "receipt": (
        "deepwork_mcp.cli.receipts.write",
        "receipt",
        "Write the signed receipt of a completed run again.",
    ),
    "verify": (
        "deepwork_mcp.cli.receipts.verify",
        "verify_command",
        "Check the receipts of a change: signed, unchanged, as the base ref's policy asks.",
    ),
    "calibrate": (
        "deepwork_mcp.cli.calibrate",
        "calibrate",
        "Measure a reviewer CLI on cases with known verdicts.",
    ),
    "ci-key": (
        "deepwork_mcp.cli.receipts.ci_key",
        "ci_key",
        "Make the CI key that countersigns re-reviewed receipts.",
    ),
    "store": ("deepwork_mcp.cli.store", "store", "Where run state lives; export a run as JSONL."),
    "run": (
        "deepwork_mcp.cli.headless.run",
        "run",
        "Run a job with an agent no person attends (CI, scripts).",
    ),
    "wait": (
        "deepwork_mcp.cli.headless.wait",
        "wait",
        "Wait until the person a parked run waits for has decided.",
    ),
}


def main(argv: list[str] | None = None) -> Any:
    """Console-script entry point.

    `deepwork hook NAME` skips click (about 45 ms of imports): the platforms run it on every
    tool call. Every other form, `deepwork hook --help` included, goes through the click group.
    """
    args = sys.argv[1:] if argv is None else argv
    if len(args) == 2 and args[0] == "hook" and not args[1].startswith("-"):
        from deepwork_mcp.hooks.command import run_hook_command

        return run_hook_command(args[1])
    from deepwork_mcp.cli.group import cli

    return cli.main(args=argv, prog_name="deepwork")


def __getattr__(name: str) -> click.Group:
    """`from deepwork_mcp.cli import cli` still works; it imports click only then."""
    if name == "cli":
        from deepwork_mcp.cli.group import cli

        return cli
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
