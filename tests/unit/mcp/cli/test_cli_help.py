"""What `deepwork <group> --help` lists: each command's first sentence, whole."""

from __future__ import annotations

import click
from click.testing import CliRunner
from deepwork_mcp.cli import _COMMANDS, cli


def _groups() -> dict[str, click.Group]:
    ctx = click.Context(cli)
    found = {name: cli.get_command(ctx, name) for name in sorted(_COMMANDS)}
    return {name: group for name, group in found.items() if isinstance(group, click.Group)}


def test_every_group_lists_whole_sentences() -> None:
    """Issue 43, item 21: click cut them at 45 characters ("Copy the library job NAME into
    the project's .deepwork/jobs/...")."""
    groups = _groups()
    assert {"jobs", "store", "approver", "audit", "install"} <= set(groups)
    for name, group in groups.items():
        result = CliRunner().invoke(cli, [name, "--help"])
        assert result.exit_code == 0, result.output
        listing = result.output.split("Commands:", 1)[1]
        assert "..." not in listing, (name, listing)
        flat = " ".join(listing.split())
        for sub_name, sub in group.commands.items():
            sentence = " ".join((sub.help or "").split("\n\n")[0].split())
            sentence = sentence[: sentence.index(". ") + 1] if ". " in sentence else sentence
            assert sentence.endswith("."), (name, sub_name, sentence)
            assert f"{sub_name} {sentence}" in flat, (name, sub_name, flat)
