"""The click group behind `deepwork` (see `deepwork_mcp.cli` for the entry point)."""

from __future__ import annotations

import importlib

import click

from deepwork_mcp.cli import _COMMANDS


class _LazyGroup(click.Group):
    """A click group whose sub-commands are imported on first use."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(_COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        entry = _COMMANDS.get(cmd_name)
        if entry is None:
            return None
        module_name, attribute, _ = entry
        command = getattr(importlib.import_module(module_name), attribute)
        if not isinstance(command, click.Command):  # pragma: no cover - programming error
            raise TypeError(f"{module_name}.{attribute} is not a click command")
        return command

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        rows = [(name, help_text) for name, (_, _, help_text) in sorted(_COMMANDS.items())]
        with formatter.section("Commands"):
            formatter.write_dl(rows)


def _version() -> str:
    from importlib.metadata import version

    return version("deepwork-mcp")


def _print_version(ctx: click.Context, _param: click.Parameter, value: bool) -> None:
    if not value or ctx.resilient_parsing:
        return
    click.echo(f"deepwork, version {_version()}")
    ctx.exit()


@click.group(cls=_LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "--version",
    is_flag=True,
    expose_value=False,
    is_eager=True,
    callback=_print_version,
    help="Show the version and exit.",
)
def cli() -> None:
    """DeepWork: quality-gated multi-step workflows and code reviews for AI agents."""
