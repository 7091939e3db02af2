"""`deepwork log SESSION`: one session's event log, readably (docs/navigation.md).

It prints the newest `--limit` events (500 by default, as many as a run page's timeline) and,
when older ones are left, how many and the `--before` that pages back to them: a log of a million
events costs what one page costs.

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
from deepwork_core.state.event_kinds import ApprovalEvent, EventRecord
from deepwork_core.state.event_pages import EventPage, bounded_count_text, page_events
from deepwork_core.state.sessions import SessionStore, session_not_found
from deepwork_core.state.store.port import Store
from pydantic import JsonValue

from deepwork_mcp.cli.options import cli_error, existing_project_store, project_option

#: Longest value printed on an event's line; --json prints everything.
_MAX_VALUE = 160
#: Events printed when `--limit` is not given; the most `--limit` takes.
DEFAULT_LIMIT = 500
MAX_LIMIT = 100_000


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
    if isinstance(event, ApprovalEvent):  # the signer by name, the OS user only as where
        fields = _decided_by_in_place_of_actor(fields, event.decided_by)
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


def _decided_by_in_place_of_actor(
    fields: dict[str, JsonValue], decided_by: str
) -> dict[str, JsonValue]:
    """An approval's fields with `actor` (`user@host`) and `signer` replaced by one
    `decided_by` where `actor` stood (docs/team.md)."""
    shown: dict[str, JsonValue] = {}
    for key, value in fields.items():
        if key == "actor":
            shown["decided_by"] = decided_by
        elif key != "signer":
            shown[key] = value
    return shown


def older_note(session_id: str, page: EventPage) -> str | None:
    """The line that says how many older events a page left out and how to see them."""
    if page.next_before is None:
        return None
    older = bounded_count_text(page.older)
    return printable(
        f"… {older} older events: deepwork log {session_id} --before {page.next_before}"
    )


@click.command()
@click.argument("session_id")
@project_option
@click.option("--json", "as_json", is_flag=True, help="Print the events as a JSON array.")
@click.option(
    "--limit",
    type=click.IntRange(1, MAX_LIMIT),
    default=DEFAULT_LIMIT,
    show_default=True,
    help="Print at most this many events, the newest.",
)
@click.option(
    "--before",
    type=click.IntRange(1),
    default=None,
    help="Only events older than this event number (the older-events line names it).",
)
def log(session_id: str, project: Path, as_json: bool, limit: int, before: int | None) -> None:
    """Print the event log of one workflow session: its newest events, oldest first."""
    root = project.resolve()
    try:
        parsed = parse_session_id(session_id)
        with existing_project_store(root) as store:
            if store is None:  # no store, so no session at all
                raise session_not_found(parsed)
            page = page_events(store, parsed, limit=limit, before=before)
            if not page.events and before is None:  # no log: say whether the session exists
                SessionStore(store, root).load(parsed)
            expired = _expired_now(store, root, parsed)
    except DeepWorkError as exc:
        raise cli_error(exc) from None
    events = [event for _, event in page.events]
    note = older_note(session_id, page)
    if as_json:
        written = [e.as_written() for e in events]
        click.echo(printable(json.dumps(written, ensure_ascii=False, indent=2), keep="\n"))
        if note is not None:
            click.echo(note, err=True)
        return
    if not events:
        click.echo(
            f"Session {session_id} has no recorded events{' before that' if before else ''}."
        )
        return
    if note is not None:
        click.echo(note)
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
