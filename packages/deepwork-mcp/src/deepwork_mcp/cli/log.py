"""`deepwork log SESSION`: one session's event log, readably (docs/navigation.md).

Every key and value comes from a file an agent can write, so all of it is shown escaped
(docs/security.md).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click
from deepwork_core import DeepWorkError
from deepwork_core.base.escaping import printable
from deepwork_core.state.events import read_events
from deepwork_core.state.sessions import SessionStore

from deepwork_mcp.cli.options import cli_error, project_option

_HEADER_KEYS = ("v", "ts", "session_id", "event")
#: Longest value printed on an event's line; --json prints everything.
_MAX_VALUE = 160


def _short(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    text = printable(" ".join(text.split()))
    return text if len(text) <= _MAX_VALUE else text[: _MAX_VALUE - 1] + "…"


def render_event(record: dict[str, Any]) -> list[str]:
    """One event as a headline (`time  event  key=value …`) and indented lines for the fields
    that hold lists of objects (e.g. a verdict's criteria)."""
    stamp = str(record.get("ts", ""))[:19].replace("T", " ")
    fields = {k: v for k, v in record.items() if k not in _HEADER_KEYS}
    nested = {
        key: value
        for key, value in fields.items()
        if isinstance(value, list) and value and all(isinstance(v, dict) for v in value)
    }
    inline = "  ".join(f"{k}={_short(v)}" for k, v in fields.items() if k not in nested)
    lines = [printable(f"{stamp}  {record['event']:<18} {inline}".rstrip())]
    for key, items in nested.items():
        for item in items:
            described = "  ".join(f"{k}={_short(v)}" for k, v in item.items())
            lines.append(printable(f"{'':21}  {key}: {described}"))
    return lines


@click.command()
@click.argument("session_id")
@project_option
@click.option("--json", "as_json", is_flag=True, help="Print the events as a JSON array.")
def log(session_id: str, project: Path, as_json: bool) -> None:
    """Print the event log of one workflow session, oldest event first."""
    root = project.resolve()
    try:
        events = read_events(root, session_id)
        if not events:
            SessionStore(root).load(session_id)  # no log: say whether the session exists
    except DeepWorkError as exc:
        raise cli_error(exc) from None
    if as_json:
        click.echo(printable(json.dumps(events, ensure_ascii=False, indent=2), keep="\n"))
        return
    if not events:
        click.echo(f"Session {session_id} has no recorded events.")
        return
    for record in events:
        click.echo("\n".join(render_event(record)))
