"""`deepwork status`: the workflows running in a project, as a tree (docs/navigation.md).

Reads the store only; never changes it, and creates none for a project that has none yet.
`--watch` redraws whenever the state changes (a commit of the SQLite store, a stack change) and
at least every few seconds so that ages stay current; it opens the store once a server made it.
`--all` lists every run of every project in the store instead (team mode: one PostgreSQL for
many checkouts). Every name and text from the store is shown escaped
(`deepwork_core.base.escaping`, docs/security.md): an agent can write it.
"""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import click
from deepwork_core import DeepWorkError
from deepwork_core.base.escaping import printable
from deepwork_core.base.layout import TMP_DIR
from deepwork_core.state.overview import (
    ActiveEntry,
    ProjectOverview,
    empty_overview,
    project_overview,
)
from deepwork_core.state.sessions import SessionStore
from deepwork_core.state.store.opening import StoreWhenItExists
from deepwork_core.state.store.tables.session_lists import (
    StoredSession,
    count_session_rows,
    list_session_rows,
)
from deepwork_core.state.store.url import SQLITE_FILE
from deepwork_core.state.usage.pair import RunUsage, cost_text, token_parts, tokens_text

from deepwork_mcp.cli.options import (
    cli_error,
    existing_project_store,
    project_option,
    show_notices,
    store_url,
)

#: The runs one page of `--all` lists (newest first) unless `--per-page` says otherwise.
ALL_RUNS_PAGE = 1_000
#: Seconds between two looks at the state folder under --watch.
POLL_SECONDS = 0.5
#: Seconds after which --watch redraws even without a change (ages move on).
REFRESH_SECONDS = 10.0
_CLEAR = "\x1b[H\x1b[2J"


def age(since: datetime, now: datetime) -> str:
    """`42s`, `5m`, `3h12m` or `2d4h`."""
    seconds = max(0, int((now - since).total_seconds()))
    if seconds < 60:
        return f"{seconds}s"
    minutes, hours = seconds // 60, seconds // 3600
    if hours == 0:
        return f"{minutes}m"
    if hours < 24:
        return f"{hours}h{minutes % 60:02d}m"
    return f"{hours // 24}d{hours % 24}h"


def _entry_line(entry: ActiveEntry, now: datetime) -> str:
    step = ",".join(entry.steps)
    parts = [
        f"{entry.job}/{entry.workflow}",
        f"step {step}",
        f"session {entry.session_id}",
        f"age {age(entry.started_at, now)}",
        f"attempts {entry.attempts}",
        f"last {entry.last_verdict or '-'}",
    ]
    if entry.branch:
        parts.append(f"branch {entry.branch}")
    if entry.approvals:
        parts.append(f"approvals {entry.approvals}")
    if entry.awaiting_approval and entry.expired:
        so_far = f" with {entry.standing}" if entry.standing else ""
        parts.append(
            f"APPROVAL EXPIRED{so_far}: no decision counts any more; the agent calls go_to_step "
            "to ask anew, or abort_workflow"
        )
    elif entry.awaiting_approval and entry.decided is not None:
        decision = "APPROVED" if entry.decided else "CHANGES REQUESTED"
        who = f"; decided by {entry.decided_by}" if entry.decided_by else ""
        parts.append(f"{decision}, waiting for the agent's next finished_step{who}")
    elif entry.awaiting_approval:
        so_far = f", {entry.standing}" if entry.standing else ""
        parts.append(f"AWAITING APPROVAL{so_far}: deepwork approve {entry.session_id}")
    return printable("  ".join(parts))


def usage_line(usage: RunUsage) -> str:
    """`reviews: 3 call(s), 3,259 tokens (1,060 in, 199 out, 2,000 cache read, 0 cache
    write), 0.1200 USD` (and the count of self-reviews)."""
    line = (
        f"reviews: {usage.calls} call(s), {tokens_text(usage)} ({token_parts(usage)}), "
        f"{cost_text(usage)}"
    )
    if usage.self_reviews:
        line += f"; {usage.self_reviews} self-review(s), not metered"
    return line


def render_text(overview: ProjectOverview, now: datetime) -> str:
    """The overview as an indented tree: each stack, nested workflows under their parent."""
    lines: list[str] = []
    if not overview.stacks:
        lines.append("No active workflow.")
    for stack in overview.stacks:
        lines.append(
            "main stack" if stack.agent_id is None else f"agent {printable(stack.agent_id)}"
        )
        for depth, entry in enumerate(stack.entries):
            lines.append("   " * depth + "└─ " + _entry_line(entry, now))
        if stack.review_usage.calls or stack.review_usage.self_reviews:
            lines.append("   " + usage_line(stack.review_usage))
    if overview.finished:
        lines.append("")
        lines.append("Recently finished:")
        for done in overview.finished:
            when = age(done.finished_at, now) + " ago" if done.finished_at else "-"
            reason = f"  ({done.abort_reason})" if done.abort_reason else ""
            line = f"{done.status:<9}  {done.job}/{done.workflow}  session {done.session_id}  "
            lines.append("  " + printable(line + when + reason))
    if overview.branches:
        lines.append("")
        lines.append("DeepWork branches:")
        for branch in overview.branches:
            base = branch.started_from or "HEAD"
            state = f"merged into {base}" if branch.merged else f"not merged into {base}"
            if not branch.committed:
                state = "no commits yet (its run's outputs are uncommitted)"
            lines.append("  " + printable(f"{branch.name}  {state}"))
    return "\n".join(lines) + "\n"


def state_fingerprint(state_dir: Path) -> int:
    """Changes whenever a file is created, replaced or removed in the state folder, and whenever
    the SQLite store commits (its write-ahead log changes)."""
    marks = 0
    for path in (state_dir, state_dir / f"{SQLITE_FILE}-wal"):
        with contextlib.suppress(FileNotFoundError):
            info = path.stat()
            marks = marks * 31 + info.st_mtime_ns + info.st_size
    return marks


def render_runs(runs: list[StoredSession], now: datetime) -> str:
    """Runs of every project in the store, newest first, one line each; a row that does not
    read is one line saying so."""
    if not runs:
        return "No runs in the store.\n"
    lines = []
    for run in runs:
        if run.problem is not None or run.updated_at is None:
            shown = f"session {run.session_id}  project {run.project_root}  {run.problem}"
            lines.append(printable(f"{'bad':<9}  {shown}"))
            continue
        parts = [
            f"{run.status:<9}",
            f"{run.job}/{run.workflow}",
            f"session {run.session_id}",
            f"project {run.project_root}",
            f"machine {run.machine}",
            f"branch {run.branch or '-'}",
            f"agent {run.agent or 'main'}",
            f"updated {age(datetime.fromtimestamp(run.updated_at, UTC), now)} ago",
        ]
        if run.standing:
            parts.insert(1, run.standing)
        if run.deciders:
            parts.append(f"who may decide: {run.deciders}")
        lines.append(printable("  ".join(parts)))
    return "\n".join(lines) + "\n"


def more_text(total: int, page: int, per_page: int) -> str | None:
    """What a page of `--all` leaves out, with the command that shows the next page (None:
    nothing after it)."""
    after = total - page * per_page
    if after <= 0:
        return None
    size = "" if per_page == ALL_RUNS_PAGE else f" --per-page {per_page}"
    return f"{after:,} more runs: deepwork status --all --page {page + 1}{size}"


def _print_all_runs(project: Path, as_json: bool, page: int, per_page: int) -> None:
    try:
        with existing_project_store(project) as store:  # a read never creates a store
            runs: list[StoredSession] = []
            total = 0
            if store is not None:
                with store.read() as tx:
                    runs = list_session_rows(tx, limit=per_page, offset=(page - 1) * per_page)
                    total = count_session_rows(tx)
    except DeepWorkError as exc:
        raise cli_error(exc) from None
    more = more_text(total, page, per_page)
    if as_json:
        text = json.dumps([run._asdict() for run in runs], indent=2)
        click.echo(printable(text, keep="\n"))
        if more is not None:
            click.echo(more, err=True)
        return
    click.echo(render_runs(runs, datetime.now(UTC)), nl=False)
    if more is not None:
        click.echo(more)


def watch(
    draw: Callable[[], None],
    fingerprint: Callable[[], int],
    *,
    sleep: Callable[[float], None] = time.sleep,
    clock: Callable[[], float] = time.monotonic,
    rounds: int | None = None,
) -> None:
    """Call `draw` now and again whenever `fingerprint` changes or REFRESH_SECONDS passed.

    `rounds` bounds the number of looks (None: until interrupted).
    """
    seen, drawn_at = fingerprint(), clock()
    draw()
    looked = 0
    while rounds is None or looked < rounds:
        sleep(POLL_SECONDS)
        looked += 1
        current = fingerprint()
        if current != seen or clock() - drawn_at >= REFRESH_SECONDS:
            seen, drawn_at = current, clock()
            draw()


@click.command()
@project_option
@click.option("--json", "as_json", is_flag=True, help="Print the overview as JSON.")
@click.option("--watch", "watching", is_flag=True, help="Redraw whenever the state changes.")
@click.option(
    "--finished",
    type=click.IntRange(min=0),
    default=5,
    show_default=True,
    help="Finished sessions to list.",
)
@click.option(
    "--all",
    "all_projects",
    is_flag=True,
    help="List the runs of every project in the store (project, machine, branch, agent), "
    "newest first, a page at a time.",
)
@click.option(
    "--page",
    type=click.IntRange(min=1),
    default=1,
    show_default=True,
    help="With --all: the page to list.",
)
@click.option(
    "--per-page",
    type=click.IntRange(min=1, max=10_000),
    default=ALL_RUNS_PAGE,
    show_default=True,
    help="With --all: runs per page.",
)
def status(
    project: Path,
    as_json: bool,
    watching: bool,
    finished: int,
    all_projects: bool,
    page: int,
    per_page: int,
) -> None:
    """Show the active workflow stacks and the last finished sessions."""
    root = project.resolve()
    if all_projects:
        _print_all_runs(root, as_json, page, per_page)
        return
    try:
        stores = StoreWhenItExists(store_url(root), root)
    except DeepWorkError as exc:
        raise cli_error(exc) from None

    def draw() -> None:
        try:
            found = stores.get()  # under --watch: the store a server makes meanwhile
            show_notices(found)
            sessions = None if found is None else SessionStore(found, root)
            overview = (
                empty_overview(root)
                if sessions is None
                else project_overview(sessions, finished_limit=finished)
            )
            worktrees = "" if sessions is None else _worktrees_text(sessions)
        except DeepWorkError as exc:
            raise cli_error(exc) from None
        if as_json:
            text = printable(overview.model_dump_json(indent=2), keep="\n") + "\n"
        else:
            text = render_text(overview, datetime.now(UTC)) + worktrees
        click.echo((_CLEAR if watching else "") + text, nl=False)

    try:
        if not watching:
            draw()
            return
        with contextlib.suppress(KeyboardInterrupt):
            watch(draw, lambda: state_fingerprint(root / TMP_DIR))
    finally:
        stores.close()


def _worktrees_text(store: SessionStore) -> str:
    """The fan-out worktrees still on disk, each with why (docs/fan-out.md); empty when none."""
    from deepwork_core.engine.fanout.fan_in import leftovers
    from deepwork_core.engine.fanout.worktrees import Worktrees

    worktrees = Worktrees(store.project_root)
    if not worktrees.on_disk():
        return ""
    with store.transaction() as tx:
        found = leftovers(worktrees, tx)
    lines = ["", "Fan-out worktrees:"]
    lines += [printable(f"  {item.folder}: {item.reason}") for item in found]
    return "\n".join(lines) + "\n"
