"""`deepwork log SESSION`: one session's event log, readably (docs/navigation.md).

Every key and value comes from a file an agent can write, so all of it is shown escaped
(docs/security.md).
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import click
from deepwork_core import DeepWorkError
from deepwork_core.base.escaping import printable
from deepwork_core.base.identifiers import SessionId, parse_session_id
from deepwork_core.state.event_kinds import EventRecord
from deepwork_core.state.events import read_events
from deepwork_core.state.sessions import SessionStore, session_not_found
from deepwork_core.state.store.port import Store
from pydantic import JsonValue

from deepwork_mcp.cli.options import cli_error, existing_project_store, project_option

#: Longest value printed on an event's line; --json prints everything.
_MAX_VALUE = 160


def _short(value: object) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    text = printable(" ".join(text.split()))
    return text if len(text) <= _MAX_VALUE else text[: _MAX_VALUE - 1] + "…"


def render_event(event: EventRecord) -> list[str]:
    """One event as a headline (`time  event  key=value …`) and indented lines for the fields
    that hold lists of objects (e.g. a verdict's criteria), keys in the order of its line."""
    stamp = event.ts.isoformat()[:19].replace("T", " ") if event.ts is not None else ""
    fields = event.details()
    origin = getattr(event, "reused_from", None)
    if origin is not None:  # a reused verdict says so as every view does
        fields["reused_from"] = origin.text
    nested: dict[str, list[dict[str, JsonValue]]] = {}
    for key, value in fields.items():
        if isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
            nested[key] = [item for item in value if isinstance(item, dict)]
    inline = "  ".join(f"{k}={_short(v)}" for k, v in fields.items() if k not in nested)
    lines = [printable(f"{stamp}  {event.event:<18} {inline}".rstrip())]
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
        parsed = parse_session_id(session_id)
        with existing_project_store(root) as store:
            if store is None:  # no store, so no session at all
                raise session_not_found(parsed)
            events = read_events(store, parsed)
            if not events:  # no log: say whether the session exists
                SessionStore(store, root).load(parsed)
            expired = _expired_now(store, root, parsed)
    except DeepWorkError as exc:
        raise cli_error(exc) from None
    if as_json:
        written = [e.as_written() for e in events]
        click.echo(printable(json.dumps(written, ensure_ascii=False, indent=2), keep="\n"))
        return
    if not events:
        click.echo(f"Session {session_id} has no recorded events.")
        return
    for event in events:
        click.echo("\n".join(render_event(event)))
    if expired is not None:
        click.echo(printable(f"{'(now)':<19}  {'approval':<18} {expired}"))


def _expired_now(store: Store, root: Path, session_id: SessionId) -> str | None:
    """What to say of the session's open request when its time has passed (it reads as
    expired before the server closes it, docs/team.md); None otherwise."""
    from deepwork_core.state.approvals.ending import expired_end
    from deepwork_core.state.approvals.store import ApprovalStore

    try:
        record = ApprovalStore(store, root).load(session_id)
    except DeepWorkError:
        return None
    if record is None:
        return None
    end = expired_end(record.request.policy, record.standing(), datetime.now(UTC))
    return None if end is None else f"request {record.request.request_id} {end.text()}"
