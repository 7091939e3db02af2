"""The HTML of the dashboard's pages, built with the standard library (docs/dashboard.md).

Every text that came from an agent, a job or a file goes through `text()`: non-printable
characters are made visible (`deepwork_core.base.escaping`) and then the result is HTML-escaped,
so a goal holding `<script>` shows as those characters and nothing from a run is ever run. The
only markup that is not built here is the workflow SVG, which `graph_svg` escapes the same way.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, datetime
from html import escape
from typing import Final

from deepwork_core.base.escaping import printable
from deepwork_core.state.read_model.runs import Run
from deepwork_core.state.stats import Stats
from deepwork_core.state.store.runs import StoredRun
from deepwork_core.state.usage.pair import RunUsage, cost_text

from deepwork_mcp.dashboard.assets import STYLESHEET
from deepwork_mcp.dashboard.views import ApprovalView, FilePreview

#: Characters of a hash shown in a table cell (the whole hash is in the cell's title).
HASH_CHARS: Final = 12


def text(value: object) -> str:
    """Untrusted text as HTML: control characters visible, markup characters escaped."""
    return escape(printable(str(value), keep="\n\t"))


def when(value: datetime | None) -> str:
    if value is None:
        return '<span class="muted">-</span>'
    stamp = value.strftime("%Y-%m-%d %H:%M:%S UTC")
    return f'<time datetime="{escape(value.isoformat())}">{stamp}</time>'


def short_hash(value: str | None) -> str:
    if value is None:
        return '<span class="fail">(missing)</span>'
    return f'<span class="hash" title="{text(value)}">{text(value[:HASH_CHARS])}</span>'


def layout(title: str, body: str, *, standalone: bool = False) -> str:
    """A whole page. `standalone`: the stylesheet inline, no navigation and no script (a report)."""
    if standalone:
        head = f"<style>{STYLESHEET}</style>"
        bar = f"<header><strong>DeepWork</strong><span>{text(title)}</span></header>"
        script = ""
    else:
        head = '<link rel="stylesheet" href="/static/dashboard.css">'
        bar = (
            '<header><strong>DeepWork</strong><a href="/">Runs</a>'
            '<a href="/all">All projects</a>'
            '<a href="/reviews">Reviews</a><a href="/approvals">Approvals</a>'
            '<a href="/stats">Stats</a></header>'
        )
        script = '<script src="/static/dashboard.js"></script>'
    return (
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{text(title)} · DeepWork</title>{head}</head>"
        f"<body>{bar}<main>{body}</main>{script}</body></html>"
    )


def scroll(table: str) -> str:
    """A table inside a box that scrolls sideways on a narrow screen, not the page."""
    return f'<div class="scroll">{table}</div>'


def cost(usage: RunUsage | None) -> str:
    """`0.7500 USD · 12,345 tokens` (or `-` when nothing was metered)."""
    if usage is None or (usage.calls == 0 and usage.self_reviews == 0):
        return '<span class="muted">-</span>'
    metered = f"{text(cost_text(usage))} · {usage.tokens:,} tokens"
    selfs = f" · {usage.self_reviews} self-review(s)" if usage.self_reviews else ""
    return f"{metered}{selfs}"


def status_badge(status: str) -> str:
    return f'<span class="status {escape(status.replace(" ", "-"))}">{escape(status)}</span>'


def _run_rows(rows: Iterable[Run], depth: int) -> list[str]:
    lines: list[str] = []
    for row in rows:
        nested = ' class="nested"' if depth else ""
        indent = "↳ " * depth
        agent = text(row.agent_id) if row.agent_id else '<span class="muted">main</span>'
        lines.append(
            f'<tr{nested} data-session="{text(row.session_id)}">'
            f'<td>{indent}<a href="/run/{text(row.session_id)}">{text(row.job)}/'
            f"{text(row.workflow)}</a></td>"
            f'<td class="goal">{text(row.goal)}</td><td>{agent}</td>'
            f"<td>{text(', '.join(row.steps))}</td><td>{status_badge(row.status.value)}</td>"
            f'<td class="num cost">{cost(row.review_usage)}</td>'
            f"<td>{when(row.started_at)}</td><td>{when(row.last_event_at)}</td></tr>"
        )
        lines += _run_rows(row.children, depth + 1)
    return lines


def _counted(rows: Iterable[Run]) -> int:
    return sum(1 + _counted(row.children) for row in rows)


def runs_fragment(rows: list[Run], page: int = 1, per_page: int = 0) -> str:
    """The table of runs (the part of the page the script refreshes), with links to the newer
    and older pages when there are any."""
    links = []
    if page > 1:
        links.append(f'<a href="/?page={page - 1}">← newer runs</a>')
    if per_page and _counted(rows) >= per_page:
        links.append(f'<a href="/?page={page + 1}">older runs →</a>')
    pager = f'<p class="pager">{" · ".join(links)}</p>' if links else ""
    if not rows:
        if page > 1:
            return f'<p class="muted">No older runs.</p>{pager}'
        return '<p class="muted">No workflow has run in this project yet.</p>'
    head = (
        "<thead><tr><th>Job/workflow</th><th>Goal</th><th>Agent</th><th>Current step</th>"
        '<th>Status</th><th class="num">Review cost</th><th>Started</th><th>Last event</th>'
        "</tr></thead>"
    )
    rows_html = "".join(_run_rows(rows, 0))
    return scroll(f'<table class="runs">{head}<tbody>{rows_html}</tbody></table>') + pager


def runs_page(rows: list[Run], page: int = 1, per_page: int = 0) -> str:
    query = f"?page={page}" if page > 1 else ""
    body = (
        "<h1>Runs</h1>"
        '<p class="muted">Every workflow session of the project, newest first, a page at a '
        "time; runs a step started are nested under it. The list follows changes by itself.</p>"
        f'<div id="runs" data-refresh="/fragment/runs{query}">'
        f"{runs_fragment(rows, page, per_page)}</div>"
    )
    return layout("Runs", body)


def _file(item_output: str, path: str, sha: str | None, body: str) -> str:
    return (
        f'<div class="file"><p><strong>{text(item_output)}</strong>: <code>{text(path)}</code> '
        f'sha256 <code class="hash">{text(sha or "(missing)")}</code></p>{body}</div>'
    )


def _changed_file(f: FilePreview) -> str:
    """A shown file whose bytes changed since the request: the hash asked about, the current
    hash and the current content, never the one under the other's hash."""
    now = (
        f'now sha256 <code class="hash now">{text(f.now_sha256)}</code>'
        if f.now_sha256
        else "now missing"
    )
    body = f'<pre class="current">{text(f.text)}</pre>' if f.text is not None else ""
    return (
        f'<div class="file changed"><p><strong>{text(f.output)}</strong>: '
        f"<code>{text(f.path)}</code> asked about sha256 "
        f'<code class="hash asked">{text(f.sha256 or "(missing)")}</code>, {now}</p>'
        f'<p class="muted">Current content (not what was asked about):</p>{body}'
        + (f'<p class="muted">{text(f.note)}</p>' if f.note else "")
        + "</div>"
    )


def _buttons(view: ApprovalView, token: str) -> str:
    """The Approve and Reject forms, pinned to the request; disabled when it is stale."""
    action = f"/approvals/{text(view.session_id)}"
    hidden = (
        f'<input type="hidden" name="token" value="{escape(token)}">'
        f'<input type="hidden" name="request_id" value="{text(view.request_id)}">'
    )
    if view.project_id is not None:
        hidden += f'<input type="hidden" name="project" value="{text(view.project_id)}">'
    off = " disabled" if view.stale is not None else ""
    return (
        f'<div class="actions"><form method="post" action="{action}">{hidden}'
        '<input type="hidden" name="decision" value="approve">'
        f'<button class="approve" type="submit"{off}>Approve</button></form>'
        f'<form method="post" action="{action}">{hidden}'
        '<input type="hidden" name="decision" value="reject">'
        f'<input type="text" name="comment" required placeholder="Why? (needed to reject)" '
        f'aria-label="Reason for rejecting"{off}><button class="reject" type="submit"{off}>'
        "Reject</button></form></div>"
    )


def approval_card(view: ApprovalView, token: str | None) -> str:
    """What the human approves, and (with a token) the Approve and Reject buttons; for a request
    that is not the server's own, only why it cannot be decided; for one whose files changed
    since, their current content and hashes, and the buttons disabled."""
    if view.problem is not None:
        return (
            f'<div class="card approval refused" data-session="{text(view.session_id)}">'
            f'<p><a href="/run/{text(view.session_id)}">{text(view.job)}/{text(view.workflow)}'
            f"</a>, step {text(', '.join(view.step_ids))}: this request cannot be decided.</p>"
            f'<p class="notice refused">{text(view.problem)}</p></div>'
        )
    files = "".join(
        _changed_file(f)
        if f.changed
        else _file(
            f.output,
            f.path,
            f.sha256,
            (f"<pre>{text(f.text)}</pre>" if f.text is not None else "")
            + (f'<p class="muted">{text(f.note)}</p>' if f.note else ""),
        )
        for f in view.files
    )
    stale = f'<p class="notice refused stale">{text(view.stale)}</p>' if view.stale else ""
    buttons = _buttons(view, token) if token is not None else ""
    classes = "card approval stale" if view.stale else "card approval"
    return (
        f'<div class="{classes}" data-session="{text(view.session_id)}">'
        f'<p><a href="/run/{text(view.session_id)}">{text(view.job)}/{text(view.workflow)}</a>, '
        f"step {text(', '.join(view.step_ids))}, asked {when(view.requested_at)}</p>"
        + (f'<p class="muted">project {text(view.project)}</p>' if view.project else "")
        + f"<pre>{text(view.prompt)}</pre>{files}{stale}{buttons}</div>"
    )


def all_runs_fragment(runs: list[StoredRun]) -> str:
    """The table of every project's runs (the part of the All projects page that refreshes)."""
    if not runs:
        return '<p class="muted">The store holds no run yet.</p>'
    rows = "".join(
        f'<tr data-session="{text(r.session_id)}"><td>{text(r.project_root)}</td>'
        f"<td>{text(r.machine)}</td><td>{text(r.branch or '')}</td>"
        f"<td>{_agent(r.agent)}</td>"
        f"<td>{text(r.job)}/{text(r.workflow)}</td><td>{text(r.session_id)}</td>"
        f"<td>{status_badge(r.status)}</td><td>{when(_moment(r.updated_at))}</td></tr>"
        for r in runs
    )
    return scroll(
        '<table class="runs"><thead><tr><th>Project</th><th>Machine</th><th>Branch</th>'
        "<th>Agent</th><th>Job/workflow</th><th>Session</th><th>Status</th><th>Updated</th>"
        f"</tr></thead><tbody>{rows}</tbody></table>"
    )


def all_runs_page(runs: list[StoredRun]) -> str:
    """Every run of every project in the store, with where each runs (docs/team.md); the table
    follows changes by itself, as the Runs page's does."""
    body = (
        "<h1>All projects</h1>"
        '<p class="muted">Every run of every project in this store, newest first: on a shared '
        "PostgreSQL store, the runs of every checkout that uses it. The list follows changes by "
        "itself.</p>"
        f'<div id="all-runs" data-refresh="/fragment/all">{all_runs_fragment(runs)}</div>'
    )
    return layout("All projects", body)


def _agent(agent: str | None) -> str:
    return text(agent) if agent else '<span class="muted">main</span>'


def _moment(stamp: float) -> datetime:
    return datetime.fromtimestamp(stamp, UTC)


def approvals_page(views: list[ApprovalView], token: str, notice: str = "", ok: bool = True) -> str:
    banner = ""
    if notice:
        banner = (
            f'<div class="notice {"ok" if ok else "refused"}" role="status">{text(notice)}</div>'
        )
    cards = "".join(approval_card(v, token) for v in views)
    if not views:
        cards = '<p class="muted">No step is waiting for a human.</p>'
    body = (
        f"<h1>Approvals</h1>{banner}"
        '<p class="muted">An approval is bound to the files and hashes shown here: if a file '
        "changes before you click, the approval is refused.</p>"
        f"{cards}"
    )
    return layout("Approvals", body)


def _percent(value: float | None) -> tuple[str, str]:
    if value is None:
        return "-1", "-"
    return f"{value:.4f}", f"{value * 100:.0f}%"


def stats_page(figures: Stats) -> str:
    rows = [
        (job.job, step.step, c) for job in figures.jobs for step in job.steps for c in step.criteria
    ]
    rows.sort(key=lambda r: (-r[2].failures, -(r[2].failure_rate or 0), r[0], r[1]))
    cells = []
    for job, step, c in rows:
        key, shown = _percent(c.failure_rate)
        cells.append(
            f"<tr><td>{text(job)}</td><td>{text(step)}</td><td>{text(c.criterion)}</td>"
            f'<td class="num">{c.failures}</td><td class="num">{c.evaluations}</td>'
            f'<td class="num" data-sort="{key}">{shown}</td></tr>'
        )
    criteria = (
        '<table class="sortable criteria"><thead><tr><th>Job</th><th>Step</th><th>Criterion</th>'
        '<th class="num">Failed</th><th class="num">Evaluated</th><th class="num">Failure rate'
        f"</th></tr></thead><tbody>{''.join(cells)}</tbody></table>"
        if cells
        else '<p class="muted">No reviewer verdicts recorded yet.</p>'
    )
    body = (
        f"<h1>Stats</h1>{_costs_table(figures)}{_steps_table(figures)}"
        f"<h2>Criteria</h2>{scroll(criteria)}"
    )
    return layout("Stats", body)


def _costs_table(figures: Stats) -> str:
    """What reviews cost per job and per step, most expensive first (as `deepwork stats`)."""
    rows = [*figures.review_costs.jobs, *figures.review_costs.steps]
    if not rows:
        return '<h2>Review costs</h2><p class="muted">No review call recorded yet.</p>'
    cells = []
    for row in rows:
        usage = row.usage
        key, first = _percent(row.first_attempt_pass_rate)
        mean = "-" if row.mean_seconds is None else f"{row.mean_seconds:.1f} s"
        cells.append(
            f"<tr><td>{text(row.job)}</td><td>{text(row.step or 'all steps')}</td>"
            f'<td class="num">{usage.calls}</td><td class="num">{usage.tokens:,}</td>'
            f'<td class="num" data-sort="{usage.cost_usd}">{text(cost_text(usage))}</td>'
            f'<td class="num">{usage.self_reviews}</td><td class="num">{mean}</td>'
            f'<td class="num" data-sort="{key}">{first}</td></tr>'
        )
    head = (
        '<tr><th>Job</th><th>Step</th><th class="num">Calls</th><th class="num">Tokens</th>'
        '<th class="num">USD</th><th class="num">Self-reviews</th><th class="num">Mean time'
        '</th><th class="num">First-attempt pass</th></tr>'
    )
    body = "".join(cells)
    table = f'<table class="sortable costs"><thead>{head}</thead><tbody>{body}</tbody></table>'
    return f"<h2>Review costs</h2>{scroll(table)}"


def _steps_table(figures: Stats) -> str:
    cells = []
    for job in figures.jobs:
        for s in job.steps:
            first_key, first = _percent(s.first_try_pass_rate)
            attempts = "-" if s.mean_attempts is None else f"{s.mean_attempts:.2f}"
            median = "-" if s.median_seconds is None else f"{s.median_seconds:.1f} s"
            cells.append(
                f"<tr><td>{text(job.job)}</td><td>{text(s.step)}</td>"
                f'<td class="num">{s.runs}</td><td class="num" data-sort="{first_key}">{first}'
                f'</td><td class="num">{attempts}</td><td class="num">{s.overrides}</td>'
                f'<td class="num" data-sort="{s.median_seconds or -1}">{median}</td></tr>'
            )
    if not cells:
        return '<p class="muted">No workflow runs recorded yet.</p>'
    return "<h2>Steps</h2>" + scroll(
        '<table class="sortable steps"><thead><tr><th>Job</th><th>Step</th>'
        '<th class="num">Runs</th><th class="num">First-try pass</th><th class="num">Mean '
        'attempts</th><th class="num">Overrides</th><th class="num">Median time</th></tr>'
        f"</thead><tbody>{''.join(cells)}</tbody></table>"
    )


def message_page(title: str, message: str) -> str:
    """A plain page for refusals (401, 403, 404): no stylesheet, no navigation, no script."""
    return (
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
        f"<title>{text(title)} · DeepWork</title></head>"
        f"<body><h1>{text(title)}</h1><p>{text(message)}</p></body></html>"
    )
