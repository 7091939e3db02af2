"""`deepwork hook NAME`: run a DeepWork hook on one platform event read from stdin."""

from __future__ import annotations

import click

from deepwork_mcp.hooks.runner import HOOKS


@click.command(
    "hook",
    epilog="Built-in hooks: " + ", ".join(sorted(HOOKS)) + ".",
)
@click.argument("name")
def hook(name: str) -> None:
    """Run hook NAME on the JSON event on stdin and print the platform's JSON answer.

    The platform comes from DEEPWORK_HOOK_PLATFORM (claude or gemini) or from the event itself.
    Exit code 0 carries the answer on stdout; 1 means the input could not be used (the message
    is on stderr and nothing the agent does is blocked).
    """
    from deepwork_mcp.hooks.command import run_hook_command

    raise SystemExit(run_hook_command(name))
